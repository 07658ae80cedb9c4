/* gpuward gpus: the host's GPUs as the daemon sees them. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "cli/api.h"
#include "cli/format.h"
#include "cli/verbs.h"

static const char gpus_help[] =
        "Usage: gpuward gpus [--json]\n"
        "\n"
        "List the GPUs gpuwardd manages: memory used/total, utilisation, temperature,\n"
        "health (ok, drained: no new jobs, lost: the driver lost it) and the job that\n"
        "holds each one.\n"
        "\n"
        "Options:\n"
        "  --json       print the API's JSON\n"
        "  -h, --help   this help\n"
        "\n"
        "Examples:\n"
        "  gpuward gpus\n"
        "  gpuward gpus --json | jq '.gpus[] | select(.job == null) | .index'\n";

enum { OPT_JSON = 0x100 };

static int add_gpu_row(struct cli_table *t, const json_t *g) {
        char idx[32], used[32], total[32], mem[72], util[32], temp[32], job[32];
        long long v;
        snprintf(idx, sizeof(idx), "%lld", cli_jint(g, "index", &v) ? v : -1);
        cli_format_bytes(cli_jnum(g, "mem_used"), used, sizeof(used));
        cli_format_bytes(cli_jnum(g, "mem_total"), total, sizeof(total));
        snprintf(mem, sizeof(mem), "%s / %s", used, total);
        double u = cli_jnum(g, "util"), te = cli_jnum(g, "temp");
        if (isfinite(u))
                snprintf(util, sizeof(util), "%.0f%%", u);
        else
                snprintf(util, sizeof(util), "-");
        if (isfinite(te))
                snprintf(temp, sizeof(temp), "%.0fC", te);
        else
                snprintf(temp, sizeof(temp), "-");
        if (cli_jint(g, "job", &v))
                snprintf(job, sizeof(job), "%lld", v);
        else
                snprintf(job, sizeof(job), "-");
        const char *health = cli_jstr(g, "health");
        const char *why = cli_jstr(g, "drain_reason");
        _cleanup_free_ char *hbuf = NULL;
        if (health && why && *why && asprintf(&hbuf, "%s (%s)", health, why) < 0)
                hbuf = NULL;
        const char *cells[] = { idx, cli_jstr(g, "name"), mem, util, temp, hbuf ? hbuf : health, job };
        return cli_table_add(t, cells);
}

static int print_gpus(const json_t *reply) {
        const json_t *gpus = json_object_get(reply, "gpus");
        if (!json_is_array(gpus)) {
                cli_error("gpuwardd's reply has no \"gpus\" array");
                return CLI_EXIT_FAIL;
        }
        static const char *const cols[] = { "INDEX", "NAME", "MEMORY(USED/TOTAL)", "UTIL", "TEMP", "HEALTH", "JOB" };
        struct cli_table *t = cli_table_new(cols, ELEMENTSOF(cols));
        if (!t)
                return CLI_EXIT_FAIL;
        size_t i;
        const json_t *g;
        int r = 0;
        json_array_foreach(gpus, i, g) {
                r = add_gpu_row(t, g);
                if (r < 0)
                        break;
        }
        if (r >= 0)
                cli_table_print(t, stdout);
        cli_table_free(t);
        if (json_is_true(json_object_get(reply, "simulated")))
                printf("(simulated GPUs)\n");
        return r < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

int cli_verb_gpus(struct cli_ctx *ctx, int argc, char **argv) {
        static const struct option opts[] = {
                { "json", no_argument, NULL, OPT_JSON },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        bool json = ctx->json;
        int c;
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
                if (c == 'h') {
                        fputs(gpus_help, stdout);
                        return CLI_EXIT_OK;
                }
                if (c != OPT_JSON)
                        return cli_bad_option("gpus", argv, optind, c, optopt);
                json = true;
        }
        if (optind < argc)
                return cli_usage("gpus", "unexpected argument '%s'", argv[optind]);
        struct cli_call call = { .method = "GET", .target = "/api/v1/gpus" };
        json_t *reply = NULL;
        int r = cli_api_json(ctx, &call, &reply);
        if (r)
                return r;
        r = json ? (cli_print_json(reply) < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK) : print_gpus(reply);
        json_decref(reply);
        return r;
}
