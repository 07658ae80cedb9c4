/* gpuward cancel, hold, release: one API call per job id. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "cli/api.h"
#include "cli/format.h"
#include "cli/verbs.h"

/* cancel --wait returns when the job's processes are gone: SIGTERM, the daemon's grace
 * period (30 s by default, configurable), SIGKILL, the GPU memory check.  Bounded anyway
 * so that a wedged daemon cannot hold a terminal forever. */
#define CANCEL_WAIT_TIMEOUT (10 * 60 * GW_USEC_PER_SEC)

static const char cancel_help[] =
        "Usage: gpuward cancel [--no-wait] [--json] JOB...\n"
        "\n"
        "Cancel jobs.  A waiting job is cancelled at once.  A running one gets SIGTERM, then\n"
        "SIGKILL after the grace period; gpuward waits until all of its processes (data\n"
        "loader workers included) are gone and its GPUs are free, then prints\n"
        "'Cancelled job N'.  You may cancel your own jobs; admins may cancel any.\n"
        "\n"
        "Options:\n"
        "  --no-wait    return as soon as the daemon has started cancelling\n"
        "  --json       print the API's JSON\n"
        "  -h, --help   this help\n"
        "\n"
        "Examples:\n"
        "  gpuward cancel 17\n"
        "  gpuward cancel --no-wait 17 18 19\n";

static const char hold_help[] =
        "Usage: gpuward hold [--json] JOB...\n"
        "\n"
        "Keep waiting jobs from starting (state HELD, reason Held) until 'gpuward release'.\n"
        "Only PENDING jobs can be held.\n"
        "\n"
        "Options:\n"
        "  --json       print the API's JSON\n"
        "  -h, --help   this help\n"
        "\n"
        "Example:\n"
        "  gpuward hold 17 && gpuward release 17\n";

static const char release_help[] =
        "Usage: gpuward release [--json] JOB...\n"
        "\n"
        "Let held jobs wait for GPUs again (HELD -> PENDING).  Jobs submitted with\n"
        "'gpuward submit --hold' start this way.\n"
        "\n"
        "Options:\n"
        "  --json       print the API's JSON\n"
        "  -h, --help   this help\n"
        "\n"
        "Example:\n"
        "  gpuward release 17 18\n";

enum action { ACT_CANCEL, ACT_HOLD, ACT_RELEASE };

struct control {
        enum action action;
        const char *verb;
        const char *help;
        bool wait, json;
};

enum { OPT_JSON = 0x100, OPT_NO_WAIT };

static int parse_control(struct control *c, struct cli_ctx *ctx, int argc, char **argv, bool *ret_help) {
        static const struct option opts[] = {
                { "json", no_argument, NULL, OPT_JSON },
                CLI_SOCKET_OPTION,
                { "no-wait", no_argument, NULL, OPT_NO_WAIT },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        int k, r;
        c->json = ctx->json;
        c->wait = c->action == ACT_CANCEL;
        optind = 0;
        opterr = 0;
        while ((k = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
                if (k == 'h')
                        *ret_help = true;
                else if (k == OPT_JSON)
                        c->json = true;
                else if (k == OPT_NO_WAIT && c->action == ACT_CANCEL)
                        c->wait = false;
                else if (k == CLI_OPT_SOCKET && (r = cli_take_socket(ctx, c->verb, optarg)) != 0)
                        return r;
                else if (k != CLI_OPT_SOCKET)
                        return cli_bad_option(c->verb, argv, optind, k == OPT_NO_WAIT ? '?' : k, optopt);
        }
        if (!*ret_help && optind >= argc)
                return cli_usage(c->verb, "which job? gpuward %s JOB...", c->verb);
        return 0;
}

static void print_done(const struct control *c, long long id, const json_t *reply) {
        const char *state = cli_jstr(reply, "state");
        switch (c->action) {
        case ACT_CANCEL:
                if (c->wait || !state || strcmp(state, "CANCELLED") == 0)
                        printf("Cancelled job %lld\n", id);
                else
                        printf("Cancelling job %lld\n", id);
                break;
        case ACT_HOLD:
                printf("Held job %lld\n", id);
                break;
        case ACT_RELEASE:
                printf("Released job %lld\n", id);
                break;
        }
}

/* One job; the reply is appended to out for --json. */
static int control_one(struct cli_ctx *ctx, const struct control *c, long long id, bool many, json_t *out) {
        char target[96], subject[48];
        const char *method = "POST";
        gw_usec_t timeout = 0;
        if (c->action == ACT_CANCEL) {
                method = "DELETE";
                snprintf(target, sizeof(target), "/api/v1/jobs/%lld%s", id, c->wait ? "?wait=1" : "");
                timeout = c->wait ? CANCEL_WAIT_TIMEOUT : 0;
        } else {
                snprintf(target, sizeof(target), "/api/v1/jobs/%lld/%s", id,
                         c->action == ACT_HOLD ? "hold" : "release");
        }
        snprintf(subject, sizeof(subject), "job %lld", id);
        /* A cancel that waits is recorded before the wait: a daemon that stops meanwhile ends
         * the job as cancelled when it is back. */
        char dropped[160] = "";
        if (c->action == ACT_CANCEL && c->wait)
                snprintf(dropped, sizeof dropped,
                         "gpuward: the cancel may have been recorded before that (then it is carried out when "
                         "gpuwardd is back); 'gpuward show %lld' tells",
                         id);
        struct cli_call call = {
                .method = method, .target = target, .timeout = timeout, .subject = many ? subject : NULL,
                .if_dropped = dropped[0] ? dropped : NULL,
        };
        json_t *reply = NULL;
        int r = cli_api_json(ctx, &call, &reply);
        if (r)
                return r;
        if (c->json)
                (void) json_array_append(out, reply);
        else
                print_done(c, id, reply);
        json_decref(reply);
        return CLI_EXIT_OK;
}

static int run_control(struct cli_ctx *ctx, struct control *c, int argc, char **argv) {
        bool help = false;
        int r = parse_control(c, ctx, argc, argv, &help);
        if (r)
                return r;
        if (help) {
                fputs(c->help, stdout);
                return CLI_EXIT_OK;
        }
        /* Check every id before touching any job: a typo must not leave half the work done. */
        long long *ids = calloc((size_t) (argc - optind), sizeof(long long));
        if (!ids)
                return CLI_EXIT_FAIL;
        int n = argc - optind;
        for (int i = 0; i < n; i++)
                if (cli_parse_job_id(c->verb, argv[optind + i], &ids[i]) < 0) {
                        free(ids);
                        return CLI_EXIT_USAGE;
                }
        json_t *out = json_array();
        int status = CLI_EXIT_OK;
        for (int i = 0; i < n; i++)
                if (control_one(ctx, c, ids[i], n > 1, out) != CLI_EXIT_OK)
                        status = CLI_EXIT_FAIL;
        if (c->json && json_array_size(out) > 0)
                (void) cli_print_json(n == 1 ? json_array_get(out, 0) : out);
        json_decref(out);
        free(ids);
        return status;
}

int cli_verb_cancel(struct cli_ctx *ctx, int argc, char **argv) {
        struct control c = { .action = ACT_CANCEL, .verb = "cancel", .help = cancel_help };
        return run_control(ctx, &c, argc, argv);
}

int cli_verb_hold(struct cli_ctx *ctx, int argc, char **argv) {
        struct control c = { .action = ACT_HOLD, .verb = "hold", .help = hold_help };
        return run_control(ctx, &c, argc, argv);
}

int cli_verb_release(struct cli_ctx *ctx, int argc, char **argv) {
        struct control c = { .action = ACT_RELEASE, .verb = "release", .help = release_help };
        return run_control(ctx, &c, argc, argv);
}
