/* gpuward gpus: the host's GPUs as the daemon sees them, or (--events) what happened to them. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "cli/api.h"
#include "cli/format.h"
#include "cli/gpuview.h"
#include "cli/nodeview.h"
#include "cli/term.h"
#include "cli/verbs.h"

static const char gpus_help[] =
        "Usage: gpuward gpus [--json]\n"
        "       gpuward gpus --events [--gpu N] [--limit N] [--json]\n"
        "\n"
        "List the GPUs gpuwardd manages, one line each: utilisation, memory used/total,\n"
        "temperature, power, health (ok; drained: no new jobs; lost: the driver lost it),\n"
        "and the job on it: id, user, name and how long it has run.  A value the driver\n"
        "cannot give prints '-'.  Indented lines under a GPU say why it was drained, and\n"
        "list its rogue processes ('!'): they use the GPU but belong to no gpuward job.\n"
        "A GPU in MIG mode has one indented line per MIG device (slice): its profile,\n"
        "its share of the GPU (1/7), memory used/total, its job or 'free', and its UUID.\n"
        "The driver gives no utilisation for a slice or a GPU in MIG mode: UTIL is '-'.\n"
        "A line under the GPU says whether it offers per-slice activity (GPM, Hopper and\n"
        "later); where it does, each slice's line has its SM activity ('GPM 80%'), which\n"
        "the idle watch goes by (--json: gpm, and each slice's activity).\n"
        "A job asking for whole GPUs never gets a GPU in MIG mode.\n"
        "'gpuward top' shows the same, refreshed, with the queue.  On a Slurm cluster's\n"
        "controller, the nodes' GPUs as their agents report them, by node: the Slurm jobs\n"
        "on each GPU with their users, rogue processes (in no Slurm job), and 'stale' for\n"
        "a node whose agent has not reported for 3 of its intervals.\n"
        "\n"
        "With --events, what happened to the GPUs themselves rather than to a job, newest\n"
        "first, one line each: time, GPU (NODE:INDEX for a cluster node's), kind, the job on it\n"
        "then, and the evidence.\n"
        "Kinds: xid and ecc (errors the driver reported, with the Xid), health (a GPU lost\n"
        "or gone from the driver's devices), drain and undrain (by whom and why), rogue\n"
        "(a process started outside gpuward: its pid, user, command and memory) and\n"
        "stray.  This is how to learn why a GPU is drained, or what ran on it outside\n"
        "gpuward.  Over TCP without a token (or as a guest) the messages are left out.\n"
        "\n"
        "Options:\n"
        "  --events     the GPUs' events instead of the GPU list\n"
        "  --gpu N      with --events: only GPU N's (also a GPU no longer present)\n"
        "  --limit N    with --events: at most N events, 1-1000 (default 100)\n" CLI_HELP_JSON CLI_HELP_HELP "\n"
        "Examples:\n"
        "  gpuward gpus\n"
        "  gpuward gpus --json | jq '.gpus[] | select(.job == null) | .index'\n"
        "  gpuward gpus --json | jq '.gpus[].processes[] | select(.job == null) | .pid'\n"
        "  gpuward gpus --events --gpu 2 --limit 5    # why is GPU 2 drained?\n"
        "  gpuward gpus --events --json | jq '.events[] | select(.kind == \"rogue\")'\n";

enum { OPT_EVENTS = 0x100, OPT_GPU, OPT_LIMIT };

struct gpus_opts {
        bool events;
        long long gpu, limit; /* -1: not given */
};

static int on_gpus_option(void *userdata, int opt, const char *arg) {
        struct gpus_opts *o = userdata;
        long long v;
        switch (opt) {
        case OPT_EVENTS:
                o->events = true;
                return 0;
        case OPT_GPU:
                if (gw_parse_int(arg, 0, 9999, &v) < 0)
                        return cli_usage("gpus", "--gpu: '%s' is not a GPU index (0, 1, ...)", arg);
                o->gpu = v;
                return 0;
        case OPT_LIMIT:
                if (gw_parse_int(arg, 1, 1000, &v) < 0)
                        return cli_usage("gpus", "--limit: '%s' is not a number from 1 to 1000", arg);
                o->limit = v;
                return 0;
        }
        return CLI_EXIT_USAGE;
}

static int print_gpus(const json_t *reply) {
        /* A terminal's width is kept to; a pipe gets every column in full. */
        unsigned rows, cols;
        cli_term_size(&rows, &cols);
        const json_t *nodes = json_object_get(reply, "nodes");
        int r = 0;
        /* A cluster's controller: the nodes' GPUs, and its own only when it has some. */
        if (!nodes || json_array_size(json_object_get(reply, "gpus")) > 0)
                r = cli_gpus_print(reply, time(NULL), isatty(STDOUT_FILENO) ? cols : 0, stdout);
        if (r == 0 && json_is_array(nodes)) {
                if (json_array_size(json_object_get(reply, "gpus")) > 0)
                        puts("\nThe cluster's nodes:");
                r = cli_nodes_print(nodes, stdout);
        }
        if (r == -EBADMSG)
                cli_error("gpuwardd's reply has no \"gpus\" array");
        else if (r < 0)
                cli_error("out of memory");
        return r < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

/* One event: TIME GPU KIND JOB MESSAGE (the table neutralises control characters, so that a
 * rogue's command line cannot drive the terminal). */
static int add_event_row(struct cli_table *t, const json_t *e, time_t now) {
        char when[32], gpu[96] = "-", job[24] = "-";
        long long v;
        const char *node = cli_jstr(e, "node"); /* a cluster node's GPU: "node1:2" */
        if (cli_jint(e, "gpu", &v))
                snprintf(gpu, sizeof gpu, "%s%s%lld", node ? node : "", node ? ":" : "", v);
        if (cli_jint(e, "job", &v))
                snprintf(job, sizeof job, "%lld", v);
        const char *cells[] = { cli_format_time(cli_jnum(e, "time"), now, when, sizeof when), gpu, cli_jstr(e, "kind"),
                                job, cli_jstr(e, "message") };
        return cli_table_add(t, cells);
}

static int print_events(const json_t *events) {
        static const char *const cols[] = { "TIME", "GPU", "KIND", "JOB", "MESSAGE" };
        static const struct cli_rows rows = { .cols = cols, .ncols = ELEMENTSOF(cols), .add_row = add_event_row };
        if (json_array_size(events) == 0) {
                puts("No GPU events recorded.");
                return CLI_EXIT_OK;
        }
        return cli_print_rows(&rows, events);
}

static int show_events(struct cli_ctx *ctx, const struct gpus_opts *o, bool json) {
        _cleanup_free_ char *target = NULL;
        char gpu[24], limit[24];
        snprintf(gpu, sizeof gpu, "%lld/", o->gpu);
        snprintf(limit, sizeof limit, "%lld", o->limit);
        if (asprintf(&target, "/api/v1/gpus/%sevents", o->gpu >= 0 ? gpu : "") < 0)
                target = NULL;
        if (!target || (o->limit > 0 && cli_query_add(&target, "limit", limit) < 0)) {
                cli_error("out of memory");
                return CLI_EXIT_FAIL;
        }
        struct cli_call call = { .method = "GET", .target = target };
        return cli_fetch_and_show(ctx, &call, json, "events", print_events);
}

/* A controller answers with one page of its nodes (nodes_next names the last one when more
 * follow): the pages after reply's are fetched and their nodes added to reply's, so that the
 * listing and --json show every node.  Bounded by what the controller may keep. */
#define NODES_PAGE "256"
#define NODES_PAGES_MAX 64

static int nodes_rest(struct cli_ctx *ctx, json_t *reply) {
        json_t *nodes = json_object_get(reply, "nodes");
        for (int page = 0; json_is_array(nodes) && json_is_string(json_object_get(reply, "nodes_next")); page++) {
                if (page == NODES_PAGES_MAX) {
                        cli_error("gpuwardd's nodes go on past %d pages", NODES_PAGES_MAX);
                        return CLI_EXIT_FAIL;
                }
                _cleanup_free_ char *target = strdup("/api/v1/gpus");
                if (!target || cli_query_add(&target, "limit", NODES_PAGE) < 0 ||
                    cli_query_add(&target, "after", json_string_value(json_object_get(reply, "nodes_next"))) < 0)
                        return cli_oom();
                struct cli_call call = { .method = "GET", .target = target };
                json_t *more = NULL;
                int r = cli_api_json(ctx, &call, &more);
                if (r)
                        return r;
                json_t *next = json_object_get(more, "nodes_next");
                if (!json_is_array(json_object_get(more, "nodes")) ||
                    (json_is_string(next) && json_array_size(json_object_get(more, "nodes")) == 0)) {
                        json_decref(more);
                        cli_error("gpuwardd's reply has no \"nodes\" array past the first page");
                        return CLI_EXIT_FAIL;
                }
                json_array_extend(nodes, json_object_get(more, "nodes"));
                json_object_set(reply, "nodes_next", next ? next : json_null());
                json_decref(more);
        }
        return CLI_EXIT_OK;
}

int cli_verb_gpus(struct cli_ctx *ctx, int argc, char **argv) {
        static const struct option extra[] = {
                { "events", no_argument, NULL, OPT_EVENTS },
                { "gpu", required_argument, NULL, OPT_GPU },
                { "limit", required_argument, NULL, OPT_LIMIT },
                { 0 },
        };
        struct gpus_opts o = { .gpu = -1, .limit = -1 };
        const struct cli_options spec = {
                .verb = "gpus",
                .help = gpus_help,
                .extra = extra,
                .no_arguments = true,
                .on_option = on_gpus_option,
                .userdata = &o,
        };
        bool json;
        int r = cli_parse_options(ctx, &spec, argc, argv, &json);
        if (r >= 0)
                return r;
        if (!o.events && (o.gpu >= 0 || o.limit > 0))
                return cli_usage("gpus", "%s: only with --events", o.gpu >= 0 ? "--gpu" : "--limit");
        if (o.events)
                return show_events(ctx, &o, json);
        struct cli_call call = { .method = "GET", .target = "/api/v1/gpus?limit=" NODES_PAGE };
        json_t *reply = NULL;
        r = cli_api_json(ctx, &call, &reply);
        if (!r && (r = nodes_rest(ctx, reply)) != 0)
                json_decref(reply);
        if (r)
                return r;
        r = json ? (cli_print_json(reply) < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK) : print_gpus(reply);
        json_decref(reply);
        return r;
}
