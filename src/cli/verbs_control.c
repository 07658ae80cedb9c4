/* gpuward cancel, hold, release: one API call per job id. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "cli/api.h"
#include "cli/format.h"
#include "cli/jobview.h"
#include "cli/verbs.h"

/* cancel --wait returns when the job's processes are gone: SIGTERM, the daemon's grace
 * period (30 s by default, configurable), SIGKILL, the GPU memory check.  Bounded anyway
 * so that a wedged daemon cannot hold a terminal forever. */
#define CANCEL_WAIT_TIMEOUT (10 * 60 * GW_USEC_PER_SEC)

#define SELECT_OPTIONS_HELP                                                      \
        "  --me            select my jobs\n"                                     \
        "  --user USER     select USER's jobs (yours, or anyone's for admins)\n" \
        "  --name NAME     only those named NAME (with --me or --user)\n"
/* The end of cancel's, hold's and release's options, and the examples' heading. */
#define SELECT_HELP_END                                                     \
        "  --json          print the API's JSON (a list for a selection)\n" \
        "  -h, --help      this help\n"                                     \
        "\n"                                                                \
        "Examples:\n"

static const char cancel_help[] =
        "Usage: gpuward cancel [--no-wait] [--json] JOB...\n"
        "       gpuward cancel [--no-wait] [--json] --me | --user USER [--name NAME] [--state STATES]\n"
        "\n"
        "Cancel jobs.  A waiting job is cancelled at once.  A running one gets SIGTERM, then\n"
        "SIGKILL after the grace period; gpuward waits until all of its processes (data\n"
        "loader workers included) are gone and its GPUs are free, then prints\n"
        "'Cancelled job N'.  You may cancel your own jobs; admins may cancel any.\n"
        "JOB is an id or a range of ids (17-40).  A job array's id cancels all its tasks\n"
        "(running ones stopped, waiting ones never run); 17_3 cancels task 3 alone.\n"
        "Instead of ids, a selection: every job\n"
        "of yours (or of USER) that is PENDING, HELD or RUNNING, narrowed by name and state;\n"
        "waiting ones are cancelled first, so that none starts on the GPUs others free.\n"
        "\n"
        "Options:\n"
        "  --no-wait       return as soon as the daemon has started cancelling\n" SELECT_OPTIONS_HELP
        "  --state STATES  only those in these states: PENDING, HELD, RUNNING (comma-separated);\n"
        "                  without RUNNING nothing running is stopped: an array's waiting tasks\n"
        "                  are cancelled and its running tasks go on\n" SELECT_HELP_END "  gpuward cancel 17\n"
        "  gpuward cancel --no-wait 17 18 19 30-39\n"
        "  gpuward cancel --me --name sweep --state PENDING\n";

static const char hold_help[] =
        "Usage: gpuward hold [--json] JOB...\n"
        "       gpuward hold [--json] --me | --user USER [--name NAME]\n"
        "\n"
        "Keep waiting jobs from starting (state HELD, reason Held) until 'gpuward release'.\n"
        "Only PENDING jobs can be held.  JOB is an id or a range of ids (17-40); instead of\n"
        "ids, --me or --user selects every PENDING job of yours or of USER.\n"
        "\n"
        "Options:\n" SELECT_OPTIONS_HELP SELECT_HELP_END "  gpuward hold 17 && gpuward release 17\n"
        "  gpuward hold --me --name sweep\n";

static const char release_help[] = "Usage: gpuward release [--json] JOB...\n"
                                   "       gpuward release [--json] --me | --user USER [--name NAME]\n"
                                   "\n"
                                   "Let held jobs wait for GPUs again (HELD -> PENDING).  Jobs submitted with\n"
                                   "'gpuward submit --hold' start this way.  JOB is an id or a range of ids (17-40);\n"
                                   "instead of ids, --me or --user selects every HELD job of yours or of USER.\n"
                                   "\n"
                                   "Options:\n" SELECT_OPTIONS_HELP SELECT_HELP_END "  gpuward release 17 18\n"
                                   "  gpuward release --me\n";

enum action { ACT_CANCEL, ACT_HOLD, ACT_RELEASE };

struct control {
        enum action action;
        const char *verb;
        const char *help;
        const char *states; /* what a selection may take: the states the action applies to */
        bool wait, json;
        /* A selection instead of ids: */
        bool me;
        const char *user, *name, *state;
        /* A selection by --state without RUNNING: only what waits is cancelled, an array's
         * running tasks go on. */
        bool waiting_only;
};

enum { OPT_JSON = 0x100, OPT_NO_WAIT, OPT_ME, OPT_USER, OPT_NAME, OPT_STATE };

static int take_option(struct control *c, struct cli_ctx *ctx, int k, const char *arg) {
        switch (k) {
        case OPT_JSON:
                c->json = true;
                return 0;
        case OPT_ME:
                c->me = true;
                return 0;
        case OPT_USER:
        case OPT_NAME:
                if (!*arg)
                        return cli_usage(c->verb, "--%s: it is empty", k == OPT_USER ? "user" : "name");
                *(k == OPT_USER ? &c->user : &c->name) = arg;
                return 0;
        case CLI_OPT_SOCKET:
                return cli_take_socket(ctx, c->verb, arg);
        }
        if (k == OPT_NO_WAIT && c->action == ACT_CANCEL)
                c->wait = false;
        else if (k == OPT_STATE && c->action == ACT_CANCEL)
                c->state = arg;
        else
                return -1;
        return 0;
}

static int parse_control(struct control *c, struct cli_ctx *ctx, int argc, char **argv, bool *ret_help) {
        static const struct option opts[] = {
                { "json", no_argument, NULL, OPT_JSON },
                { "no-wait", no_argument, NULL, OPT_NO_WAIT },
                { "me", no_argument, NULL, OPT_ME },
                { "user", required_argument, NULL, OPT_USER },
                { "name", required_argument, NULL, OPT_NAME },
                { "state", required_argument, NULL, OPT_STATE },
                CLI_OPTIONS_END,
        };
        int k, r;
        c->json = ctx->json;
        c->wait = c->action == ACT_CANCEL;
        optind = 0;
        opterr = 0;
        while ((k = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
                if (k == 'h')
                        *ret_help = true;
                else if ((r = take_option(c, ctx, k, optarg)) > 0)
                        return r;
                else if (r < 0 && (k == OPT_NO_WAIT || k == OPT_STATE)) /* cancel's only */
                        return cli_usage(c->verb, "unknown option '--%s'", k == OPT_NO_WAIT ? "no-wait" : "state");
                else if (r < 0)
                        return cli_bad_option_in(c->verb, argv, optind, k, optopt, opts);
        }
        if (*ret_help)
                return 0;
        bool selecting = c->me || c->user || c->name || c->state;
        if (c->me && c->user)
                return cli_usage(c->verb, "--me and --user exclude each other");
        if (selecting && !c->me && !c->user)
                return cli_usage(c->verb, "--name and --state narrow a selection: add --me or --user USER");
        if (selecting && optind < argc)
                return cli_usage(c->verb, "give job ids or a selection (--me, --user), not both");
        if (!selecting && optind >= argc)
                return cli_usage(c->verb, "which job? gpuward %s JOB... (or --me for all of yours)", c->verb);
        return 0;
}

static void print_done(const struct control *c, long long num, const json_t *reply) {
        const char *state = cli_jstr(reply, "state");
        char id[32];
        cli_job_ref(num, id, sizeof id);
        switch (c->action) {
        case ACT_CANCEL:
                if (c->waiting_only && json_is_string(json_object_get(reply, "array")) && state &&
                    strcmp(state, "CANCELLED") != 0)
                        printf("Cancelled the waiting tasks of array %s; its running tasks go on\n", id);
                else if (c->wait || !state || strcmp(state, "CANCELLED") == 0)
                        printf("Cancelled job %s\n", id);
                else
                        printf("Cancelling job %s\n", id);
                break;
        case ACT_HOLD:
                printf("Held job %s\n", id);
                break;
        case ACT_RELEASE:
                printf("Released job %s\n", id);
                break;
        }
}

/* One job; the reply is appended to out for --json. */
static int control_one(struct cli_ctx *ctx, const struct control *c, long long id, bool many, json_t *out) {
        char target[96], subject[48], ref[32];
        const char *method = "POST";
        cli_job_ref(id, ref, sizeof ref);
        gw_usec_t timeout = 0;
        if (c->action == ACT_CANCEL) {
                method = "DELETE";
                snprintf(target, sizeof(target), "/api/v1/jobs/%s?wait=%d&waiting=%d", ref, c->wait, c->waiting_only);
                timeout = c->wait ? CANCEL_WAIT_TIMEOUT : 0;
        } else {
                snprintf(target, sizeof(target), "/api/v1/jobs/%s/%s", ref, c->action == ACT_HOLD ? "hold" : "release");
        }
        snprintf(subject, sizeof(subject), "job %s", ref);
        /* A cancel that waits is recorded before the wait: a daemon that stops meanwhile ends
         * the job as cancelled when it is back. */
        char dropped[160] = "";
        if (c->action == ACT_CANCEL && c->wait)
                snprintf(dropped, sizeof dropped,
                         "gpuward: the cancel may have been recorded before that (then it is carried out when "
                         "gpuwardd is back); 'gpuward show %s' tells",
                         ref);
        struct cli_call call = {
                .method = method,
                .target = target,
                .timeout = timeout,
                .subject = many ? subject : NULL,
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

/* The selection's jobs as ids, waiting ones first: cancelling a running job first would
 * free GPUs for a job about to be cancelled as well. */
static int select_jobs(struct cli_ctx *ctx, struct control *c, struct cli_id_list *ids) {
        _cleanup_free_ char *states = NULL, *bad = NULL, *me = c->me ? cli_self_uid() : NULL;
        if (c->state && !(states = cli_normalize_states(c->state, &bad)))
                return bad ? cli_usage(c->verb, "--state: '%s' is not a job state", bad) : CLI_EXIT_FAIL;
        c->waiting_only = c->action == ACT_CANCEL && states && !strstr(states, "RUNNING");
        _cleanup_free_ char *split = states ? strdup(states) : NULL;
        for (char *p = split, *tok; p && (tok = strsep(&p, ","));)
                if (!strstr(c->states, tok))
                        return cli_usage(c->verb, "--state: %s takes %s jobs only, not %s", c->verb, c->states, tok);
        _cleanup_free_ char *target = strdup("/api/v1/jobs");
        if (!target || (c->me && !me) || cli_query_add(&target, "state", states ? states : c->states) < 0 ||
            (me && cli_query_add(&target, "uid", me) < 0) || (c->user && cli_query_add(&target, "user", c->user) < 0) ||
            cli_query_add(&target, "fields", "id,name,state") < 0) {
                cli_error("out of memory");
                return CLI_EXIT_FAIL;
        }
        struct cli_call call = { .method = "GET", .target = target };
        json_t *reply = NULL;
        int r = cli_api_json(ctx, &call, &reply);
        if (r)
                return r;
        const json_t *jobs = json_object_get(reply, "jobs");
        for (int running = 0; running < 2 && !r; running++)
                for (size_t i = 0; i < json_array_size(jobs) && !r; i++) {
                        const json_t *j = json_array_get(jobs, i);
                        const char *name = cli_jstr(j, "name"), *state = cli_jstr(j, "state");
                        long long id;
                        if (!cli_jint(j, "id", &id) || (c->name && (!name || strcmp(name, c->name))) ||
                            running != (state && !strcmp(state, "RUNNING")))
                                continue;
                        r = cli_id_push(ids, id);
                }
        json_decref(reply);
        return r;
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
        bool selecting = c->me || c->user;
        /* Every id is checked before any job is touched: a typo must not leave half the work done. */
        struct cli_id_list ids = { 0 };
        r = selecting ? select_jobs(ctx, c, &ids) : cli_parse_job_ids(c->verb, argv + optind, argc - optind, &ids);
        if (r) {
                free(ids.v);
                return r;
        }
        if (selecting && ids.n == 0 && !c->json)
                printf("No job matched: nothing to %s\n", c->verb);
        json_t *out = json_array();
        int status = CLI_EXIT_OK;
        for (size_t i = 0; i < ids.n; i++)
                if (control_one(ctx, c, ids.v[i], ids.n > 1, out) != CLI_EXIT_OK)
                        status = CLI_EXIT_FAIL;
        /* One job named by its id: its object, as before; a selection or several ids: a list. */
        if (c->json && (selecting || json_array_size(out) > 0))
                (void) cli_print_json(!selecting && ids.n == 1 ? json_array_get(out, 0) : out);
        json_decref(out);
        free(ids.v);
        return status;
}

int cli_verb_cancel(struct cli_ctx *ctx, int argc, char **argv) {
        struct control c = { .action = ACT_CANCEL,
                             .verb = "cancel",
                             .help = cancel_help,
                             .states = "PENDING,HELD,RUNNING" };
        return run_control(ctx, &c, argc, argv);
}

int cli_verb_hold(struct cli_ctx *ctx, int argc, char **argv) {
        struct control c = { .action = ACT_HOLD, .verb = "hold", .help = hold_help, .states = "PENDING" };
        return run_control(ctx, &c, argc, argv);
}

int cli_verb_release(struct cli_ctx *ctx, int argc, char **argv) {
        struct control c = { .action = ACT_RELEASE, .verb = "release", .help = release_help, .states = "HELD" };
        return run_control(ctx, &c, argc, argv);
}
