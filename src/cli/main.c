/* gpuward: the command users type.  Global options, the socket, dispatch to a verb. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "cli/cli.h"
#include "cli/format.h"
#include "cli/remote.h"
#include "cli/verbs.h"
#include "core/sbatch_words.h"

const struct cli_verb cli_verbs[] = {
        { "submit", cli_verb_submit, "queue a command or a script (reads #GPUWARD lines)" },
        { "run", cli_verb_run, "an interactive session (a shell, a notebook) once GPUs are free" },
        { "queue", cli_verb_queue, "list pending, held and running jobs" },
        { "show", cli_verb_show, "everything about one job, with its events" },
        { "cancel", cli_verb_cancel, "cancel jobs; returns when their processes are gone" },
        { "hold", cli_verb_hold, "keep pending jobs from starting" },
        { "release", cli_verb_release, "let held jobs start again" },
        { "logs", cli_verb_logs, "print a job's output; -f follows it" },
        { "wait", cli_verb_wait, "wait until jobs end; exit 0 when all completed" },
        { "history", cli_verb_history, "finished jobs, newest first" },
        { "gpus", cli_verb_gpus, "the GPUs: utilisation, memory, health, job, rogue processes" },
        { "top", cli_verb_top, "GPUs and queue, refreshed in place; q quits" },
        { "reserve", cli_verb_reserve, "book GPUs for a window of time ahead" },
        { "reservations", cli_verb_reservations, "the open bookings: awaiting approval, approved, active" },
        { "unreserve", cli_verb_unreserve, "release bookings" },
        { "schedule", cli_verb_schedule, "the coming hours per GPU as a chart: jobs and bookings" },
        { "quota", cli_verb_quota, "my limits (GPUs, time, GPU-hours, bookings) and my usage" },
        { "cache", cli_verb_cache, "the datasets staged in this host's cache, who uses them" },
        { "report", cli_verb_report, "GPU-hours, utilisation and outcomes per user, last 7 days" },
        { "eta", cli_verb_eta, "when a training job will end, and what the estimate rests on" },
        { "snapshots", cli_verb_snapshots, "the checkpoint copies kept of a training job" },
        { "restore", cli_verb_restore, "copy a checkpoint snapshot back, as the job's user" },
        { "models", cli_verb_models, "models published from completed jobs (submit --publish)" },
        { "token", cli_verb_token, "create, list, revoke tokens for the API over TCP" },
        { "whoami", cli_verb_whoami, "who gpuwardd takes me for: user, uid, role, how" },
        { "admin", cli_verb_admin, "for administrators: drain GPUs, job policies, bookings, quotas" },
        { NULL, NULL, NULL },
};

static void print_main_help(FILE *f) {
        fputs("Usage: gpuward [--socket PATH] [--json] VERB [OPTIONS] [ARGS]\n"
              "\n"
              "Queue GPU jobs on a shared server run by gpuwardd: you say how many GPUs a job\n"
              "needs, gpuward starts it when they are free with CUDA_VISIBLE_DEVICES set.\n"
              "\n"
              "Verbs:\n",
              f);
        for (const struct cli_verb *v = cli_verbs; v->name; v++)
                fprintf(f, "  %-12s %s\n", v->name, v->summary);
        fputs("\n"
              "Global options (before the verb, or after it with the verb's options):\n"
              "  --socket PATH  the daemon's socket (default: $GPUWARD_SOCKET, else the first\n"
              "                 that exists of /run/gpuward/gpuward.sock,\n"
              "                 $XDG_RUNTIME_DIR/gpuward.sock and\n"
              "                 ${XDG_STATE_HOME:-~/.local/state}/gpuward/gpuward.sock)\n"
              "  --token-file FILE  the bearer token for GPUWARD_URL (default: $GPUWARD_TOKEN)\n"
              "  --json         print the API's JSON instead of tables\n"
              "  -h, --help     this help; 'gpuward VERB --help' explains a verb\n"
              "  --version      print the version\n"
              "\n"
              "Examples:\n"
              "  gpuward submit --gpus 2 --time 30m --name smoke -- python3 train.py epochs=3\n"
              "  gpuward submit train.sh          # options from its '#GPUWARD --gpus 2' lines\n"
              "  gpuward queue --me\n"
              "  gpuward logs -f 17\n"
              "  gpuward cancel 17\n"
              "  gpuward history --limit 20\n"
              "  gpuward top\n"
              "  gpuward reserve --gpus 2 --start 'tomorrow 09:00' --duration 4h\n"
              "  gpuward schedule\n"
              "\n"
              "\n"
              "A daemon on another machine (a CI runner's): GPUWARD_URL=http://HOST:PORT makes\n"
              "gpuward talk to gpuwardd's TCP door instead of a socket (--socket still wins),\n"
              "as the owner of the token in GPUWARD_TOKEN or --token-file (without one, as a\n"
              "guest).  A token goes over plain http only to a loopback address unless\n"
              "GPUWARD_INSECURE=1; https is not supported by this build: put a TLS proxy or a\n"
              "tunnel (ssh -L) in front and point GPUWARD_URL at its end on this host.\n"
              "\n"
              "Exit status: 0 success, 1 failure, 2 usage error ('gpuward submit --help' has\n"
              "the codes of submit --wait --follow).\n",
              f);
}

static bool path_exists(const char *p) { return p && access(p, F_OK) == 0; }

static char *state_home_socket(void) {
        char *out = NULL;
        const char *state = getenv("XDG_STATE_HOME");
        if (state && state[0] == '/') {
                if (asprintf(&out, "%s/gpuward/gpuward.sock", state) < 0)
                        return NULL;
                return out;
        }
        /* Where gpuwardd puts it (config.c fill_paths).  Without an absolute HOME there is no
         * such candidate: gpuwardd would then use /tmp, where anyone may have made the socket
         * first, and a submission sends the caller's environment (--socket names it instead). */
        const char *home = getenv("HOME");
        if (!home || home[0] != '/')
                return NULL;
        if (asprintf(&out, "%s/.local/state/gpuward/gpuward.sock", home) < 0)
                return NULL;
        return out;
}

/* --socket, else $GPUWARD_SOCKET, else the first candidate that exists, else the first
 * candidate (so the error names where we looked).  Returns a malloc'ed path. */
static char *resolve_socket(const char *opt) {
        if (opt && *opt)
                return strdup(opt);
        const char *env = getenv("GPUWARD_SOCKET");
        if (env && *env)
                return strdup(env);

        char *cands[3] = { strdup("/run/gpuward/gpuward.sock"), NULL, state_home_socket() };
        const char *rt = getenv("XDG_RUNTIME_DIR");
        if (rt && rt[0] == '/' && asprintf(&cands[1], "%s/gpuward.sock", rt) < 0)
                cands[1] = NULL;
        char *pick = NULL;
        for (size_t i = 0; i < ELEMENTSOF(cands) && !pick; i++)
                if (path_exists(cands[i]))
                        pick = TAKE_PTR(cands[i]);
        for (size_t i = 0; i < ELEMENTSOF(cands) && !pick; i++)
                if (cands[i])
                        pick = TAKE_PTR(cands[i]);
        for (size_t i = 0; i < ELEMENTSOF(cands); i++)
                free(cands[i]);
        return pick;
}

static const struct cli_verb *find_verb(const char *name) {
        for (const struct cli_verb *v = cli_verbs; v->name; v++)
                if (strcmp(v->name, name) == 0)
                        return v;
        return NULL;
}

/* "unknown verb", with gpuward's word for a Slurm command and the nearest verb for a typo. */
static int unknown_verb(const char *name) {
        const char *slurm = gw_slurm_verb(name);
        if (slurm)
                return cli_usage(NULL, "gpuward has no '%s': did you mean 'gpuward %s'?", name, slurm);
        const char *best = NULL;
        int best_d = 3, len = (int) strlen(name);
        for (const struct cli_verb *v = cli_verbs; v->name; v++) {
                int d = gw_edit_distance(name, v->name, 3);
                if (d < best_d && d * 2 < len) {
                        best = v->name;
                        best_d = d;
                }
        }
        if (best)
                return cli_usage(NULL, "unknown verb '%s': did you mean 'gpuward %s'?", name, best);
        return cli_usage(NULL, "unknown verb '%s'", name);
}

/* `gpuward help [VERB]`: the same text as --help. */
static int run_help(struct cli_ctx *ctx, int argc, char **argv) {
        if (argc < 2) {
                print_main_help(stdout);
                return CLI_EXIT_OK;
        }
        const struct cli_verb *v = find_verb(argv[1]);
        if (!v)
                return unknown_verb(argv[1]);
        char *hargv[] = { argv[1], (char *) "--help", NULL };
        return v->run(ctx, 2, hargv);
}

/* GPUWARD_URL, with its token from token_file (--token-file) or GPUWARD_TOKEN, into r.
 * Returns 1 when GPUWARD_URL is set (r filled), 0 when it is not, else the exit code after
 * telling why, naming the variable. */
static int resolve_remote(const char *token_file, struct cli_remote *r) {
        const char *url = getenv("GPUWARD_URL");
        char why[256];
        if (!url || !*url) {
                if (token_file)
                        return cli_usage(NULL, "--token-file: a token is for a daemon over TCP; set GPUWARD_URL "
                                               "to http://HOST:PORT");
                return 0;
        }
        if (cli_url_parse(url, r, why, sizeof why) < 0) {
                _cleanup_free_ char *safe = cli_sanitize(url);
                cli_error("GPUWARD_URL '%.200s': %s", safe ? safe : "?", why);
                return CLI_EXIT_USAGE;
        }
        const char *insecure = getenv("GPUWARD_INSECURE");
        r->insecure = insecure && !strcmp(insecure, "1");
        const char *env = getenv("GPUWARD_TOKEN");
        if (token_file) {
                int k = cli_remote_token_file(r, token_file);
                if (k == -EINVAL)
                        cli_error("--token-file %s: not a token ('gw_' and 64 hex digits, as 'gpuward token create' "
                                  "prints)",
                                  token_file);
                else if (k < 0)
                        cli_error("--token-file %s: %s", token_file, strerror(-k));
                if (k < 0)
                        return CLI_EXIT_USAGE;
        } else if (env && *env && cli_remote_set_token(r, env) < 0) {
                cli_error("GPUWARD_TOKEN: not a token ('gw_' and 64 hex digits, as 'gpuward token create' prints)");
                return CLI_EXIT_USAGE;
        }
        return 1;
}

enum { OPT_SOCKET = 0x100, OPT_JSON, OPT_VERSION, OPT_TOKEN_FILE };

int main(int argc, char **argv) {
        /* A reader that goes away (`gpuward logs 1 | head`) must give EPIPE, not a signal. */
        (void) signal(SIGPIPE, SIG_IGN);

        static const struct option opts[] = {
                { "socket", required_argument, NULL, OPT_SOCKET },
                { "json", no_argument, NULL, OPT_JSON },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, OPT_VERSION },
                { "token-file", required_argument, NULL, OPT_TOKEN_FILE },
                { 0 },
        };
        struct cli_ctx ctx = { 0 };
        const char *socket_opt = NULL, *token_file = NULL;
        int c;
        opterr = 0;
        /* "+": stop at the verb; its options are its own. */
        while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
                switch (c) {
                case OPT_SOCKET:
                        socket_opt = optarg;
                        break;
                case OPT_JSON:
                        ctx.json = true;
                        break;
                case OPT_TOKEN_FILE:
                        token_file = optarg;
                        break;
                case 'h':
                        print_main_help(stdout);
                        return CLI_EXIT_OK;
                case OPT_VERSION:
                        printf("gpuward %s\n", GW_VERSION);
                        return CLI_EXIT_OK;
                default:
                        return cli_bad_option(NULL, argv, optind, c, optopt);
                }
        }
        if (optind >= argc) {
                print_main_help(stderr);
                return CLI_EXIT_USAGE;
        }

        _cleanup_free_ char *socket_path = resolve_socket(socket_opt);
        if (!socket_path) {
                cli_error("out of memory");
                return CLI_EXIT_FAIL;
        }
        ctx.socket_path = socket_path;
        /* ctx borrows it until the verb returns. */
        static struct cli_remote remote;
        if (!socket_opt || token_file) {
                int k = resolve_remote(token_file, &remote);
                if (k == 1)
                        ctx.remote = &remote;
                else if (k != 0)
                        return k;
        }

        const char *name = argv[optind];
        if (strcmp(name, "help") == 0)
                return run_help(&ctx, argc - optind, argv + optind);
        const struct cli_verb *v = find_verb(name);
        if (!v)
                return unknown_verb(name);
        int r = v->run(&ctx, argc - optind, argv + optind);
        if (fflush(stdout) != 0 && errno != EPIPE && r == CLI_EXIT_OK) {
                cli_error("writing output: %s", strerror(errno));
                return CLI_EXIT_FAIL;
        }
        return r;
}
