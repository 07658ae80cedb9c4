/* gpuward gpus: the host's GPUs as the daemon sees them. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <time.h>

#include "cli/api.h"
#include "cli/format.h"
#include "cli/gpuview.h"
#include "cli/verbs.h"

static const char gpus_help[] =
        "Usage: gpuward gpus [--json]\n"
        "\n"
        "List the GPUs gpuwardd manages, one line each: utilisation, memory used/total,\n"
        "temperature, power, health (ok; drained: no new jobs; lost: the driver lost it),\n"
        "and the job on it: id, user, name and how long it has run.  A value the driver\n"
        "cannot give prints '-'.  Indented lines under a GPU say why it was drained, and\n"
        "list its rogue processes ('!'): they use the GPU but belong to no gpuward job.\n"
        "'gpuward top' shows the same, refreshed, with the queue.\n"
        "\n"
        "Options:\n"
        "  --json       print the API's JSON\n"
        "  -h, --help   this help\n"
        "\n"
        "Examples:\n"
        "  gpuward gpus\n"
        "  gpuward gpus --json | jq '.gpus[] | select(.job == null) | .index'\n"
        "  gpuward gpus --json | jq '.gpus[].processes[] | select(.job == null) | .pid'\n";

enum { OPT_JSON = 0x100 };

static int print_gpus(const json_t *reply) {
        int r = cli_gpus_print(reply, time(NULL), stdout);
        if (r == -EBADMSG)
                cli_error("gpuwardd's reply has no \"gpus\" array");
        else if (r < 0)
                cli_error("out of memory");
        return r < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

int cli_verb_gpus(struct cli_ctx *ctx, int argc, char **argv) {
        bool json;
        int early = cli_parse_json_only(ctx, "gpus", gpus_help, true, argc, argv, &json);
        if (early >= 0)
                return early;
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
