/* gpuward run: an interactive session that waits in the queue like any job, then gives this
 * terminal the job's (docs/DESIGN.md, Interactive sessions). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/parse.h"
#include "cli/api.h"
#include "cli/format.h"
#include "cli/jobview.h"
#include "cli/submit.h"
#include "cli/ttyrelay.h"
#include "cli/verbs.h"
#include "cli/wait.h"
#include "core/job.h"

static const char run_help[] =
        "Usage: gpuward run [OPTIONS] -- COMMAND [ARGS...]\n"
        "\n"
        "An interactive session on GPUs: gpuward run --gpus 1 --time 2h -- bash.  The job waits\n"
        "in the queue like any other (stderr says why while it waits), then this terminal is the\n"
        "job's, with CUDA_VISIBLE_DEVICES set to its GPUs.  Every key goes to the job, Ctrl-C\n"
        "included; the window size follows this one.  Closing this terminal ends the job, as\n"
        "closing a terminal does (SIGHUP); Ctrl-C while it waits cancels it.  The exit status is\n"
        "the job's: its exit code, 128+N when signal N ended it, 1 if it ended otherwise.  The\n"
        "session is the job's log too ('gpuward logs JOB').  It is never retried, and its idle\n"
        "GPUs are reclaimed as any job's: typing and output count as activity.\n"
        "When the session opens, stderr says which GPUs it got ('gpuward: job 12 running\n"
        "on GPU 1').  With stdin a pipe or a file, what it holds is typed into the job's\n"
        "terminal and its end is Ctrl-D: 'echo hi | gpuward run -- cat' prints hi and ends.\n"
        "\n"
        "Options:\n"
        "  -g, --gpus N         GPUs (default 1)\n"
        "  -t, --time T         time limit: 90m, 2h, 1d, 1:30:00 (default: the daemon's)\n"
        "      --gpu-mem SIZE   GPU memory needed per GPU (16G)\n"
        "  -n, --name NAME      the job's name\n"
        "      --idle-policy P  idle reclamation profile\n"
        "      --priority N     within what you are allowed\n"
        "      --reservation ID run inside your booking\n"
        "  -h, --help           this help\n";

enum { OPT_GPU_MEM = 0x100, OPT_IDLE, OPT_PRIORITY, OPT_RESERVATION };

static int bad(const char *opt, const char *arg, const char *what) {
        return cli_usage("run", "%s '%s' %s", opt, arg, what);
}

static int apply(struct submit_opts *o, int c, const char *arg) {
        long long v;
        switch (c) {
        case 'g':
                if (gw_parse_int(arg, 1, INT_MAX, &v) < 0)
                        return bad("--gpus", arg, "is not a number of GPUs (1 or more)");
                o->ngpus = v;
                return 0;
        case 't':
                if (arg[0] == '-' || gw_parse_duration(arg, &o->time_limit) < 0 || o->time_limit <= 0)
                        return bad("--time", arg, "is not a positive duration: " GW_DURATION_FORMS);
                o->time_set = true;
                return 0;
        case OPT_GPU_MEM:
                if (gw_parse_size(arg, &o->gpu_mem) < 0)
                        return bad("--gpu-mem", arg, "is not a size (examples: 512M, 16G, 80GB)");
                o->gpu_mem_set = true;
                return 0;
        case 'n':
                o->text[T_NAME] = arg;
                return 0;
        case OPT_IDLE:
                if (!cli_is_policy_name(arg))
                        return bad("--idle-policy", arg, "is not a profile name");
                o->text[T_IDLE_POLICY] = arg;
                return 0;
        case OPT_PRIORITY:
                if (gw_parse_int(arg, INT_MIN, INT_MAX, &o->priority) < 0)
                        return bad("--priority", arg, "is not a whole number");
                o->priority_set = true;
                return 0;
        case OPT_RESERVATION:
                if (gw_parse_int(arg, 1, LLONG_MAX, &o->reservation) < 0)
                        return bad("--reservation", arg, "is not a booking id");
                return 0;
        }
        return CLI_EXIT_USAGE;
}

static int parse(struct cli_ctx *ctx, int argc, char **argv, struct submit_opts *o) {
        static const struct option opts[] = {
                { "gpus", required_argument, NULL, 'g' },
                { "time", required_argument, NULL, 't' },
                { "gpu-mem", required_argument, NULL, OPT_GPU_MEM },
                { "name", required_argument, NULL, 'n' },
                { "idle-policy", required_argument, NULL, OPT_IDLE },
                { "priority", required_argument, NULL, OPT_PRIORITY },
                { "reservation", required_argument, NULL, OPT_RESERVATION },
                { "help", no_argument, NULL, 'h' },
                CLI_SOCKET_OPTION,
                { 0 },
        };
        optind = 1;
        opterr = 0;
        int c, r;
        while ((c = getopt_long(argc, argv, "+:g:t:n:h", opts, NULL)) != -1) {
                if (c == 'h') {
                        fputs(run_help, stdout);
                        return CLI_EXIT_OK;
                }
                if (c == '?' || c == ':')
                        return cli_bad_option_in("run", argv, optind, c, optopt, opts);
                if (c == CLI_OPT_SOCKET)
                        r = cli_take_socket(ctx, "run", optarg);
                else
                        r = apply(o, c, optarg);
                if (r)
                        return r;
        }
        if (optind >= argc)
                return cli_usage("run", "no command given: gpuward run [OPTIONS] -- COMMAND [ARGS...]");
        return -1;
}

static long long submit(struct cli_ctx *ctx, const struct submit_opts *o, char **cmd, size_t ncmd) {
        _cleanup_free_ char *cwd = cli_current_dir();
        if (!cwd) {
                cli_error("cannot read the current directory: %s", strerror(errno));
                return -1;
        }
        json_t *body = NULL, *reply = NULL;
        if (submit_build_body(o, (const char *const *) cmd, ncmd, cwd, NULL, &body))
                return -1;
        long long id = -1;
        if (json_object_set_new(body, "interactive", json_true()) == 0) {
                static const struct cli_field_alias aliases[] = { { "ngpus", "--gpus" },
                                                                  { "time_limit", "--time" },
                                                                  { NULL, NULL } };
                struct cli_call call = { .method = "POST", .target = "/api/v1/jobs", .body = body, .aliases = aliases };
                if (cli_api_json(ctx, &call, &reply) == CLI_EXIT_OK && !cli_jint(reply, "id", &id))
                        cli_error("gpuwardd accepted the job but sent no id");
        }
        json_decref(body);
        json_decref(reply);
        return id;
}

static enum gw_job_state state_of(const json_t *job) {
        const char *s = cli_jstr(job, "state");
        return gw_job_state_from_name(s ? s : "");
}

/* The exit status a shell would give for the job's end. */
static int job_status(const json_t *job) {
        long long v;
        if (state_of(job) == GW_JOB_COMPLETED)
                return CLI_EXIT_OK;
        if (cli_jint(job, "exit_code", &v) && v > 0 && v < 256)
                return (int) v;
        if (cli_jint(job, "signal", &v) && v > 0 && v < 128)
                return 128 + (int) v;
        return CLI_EXIT_FAIL;
}

static volatile sig_atomic_t interrupted;
static void on_interrupt(int sig) { interrupted = sig; }

/* Which GPUs the session got, before its terminal takes over ("job 12 running on GPU 1"):
 * CUDA_VISIBLE_DEVICES inside says it too, but only to one who thinks of asking. */
static void say_gpus(const json_t *job, long long id) {
        _cleanup_free_ char *gpus = cli_job_gpu_list(job);
        size_t n = json_array_size(json_object_get(job, "gpus"));
        if (gpus && n)
                fprintf(stderr, "gpuward: job %lld running on GPU%s %s\n", id, n == 1 ? "" : "s", gpus);
        else
                fprintf(stderr, "gpuward: job %lld running\n", id);
}

/* Polls the job until it runs with its socket there (the socket, malloc'ed) or ends (NULL,
 * *ret_job its object).  Says why while it waits, as logs -f does. */
static char *wait_for_session(struct cli_ctx *ctx, long long id, json_t **ret_job) {
        _cleanup_free_ char *told = NULL;
        for (unsigned polls = 0; !interrupted; polls++) {
                json_t *job = cli_job_get(ctx, id);
                if (!job)
                        return NULL;
                enum gw_job_state s = state_of(job);
                const char *sock = cli_jstr(job, "tty_socket");
                if (s == GW_JOB_RUNNING && sock && *sock) {
                        say_gpus(job, id);
                        char *r = strdup(sock);
                        json_decref(job);
                        return r;
                }
                if (gw_job_state_is_final(s)) {
                        *ret_job = job;
                        return NULL;
                }
                if ((s == GW_JOB_PENDING || s == GW_JOB_HELD) && polls % 10 == 0) {
                        _cleanup_free_ char *why = cli_wait_reason(ctx, job);
                        if (why && (!told || strcmp(told, why))) {
                                fprintf(stderr, "gpuward: job %lld is waiting (%s); the session opens when it starts\n",
                                        id, why);
                                free(told);
                                told = TAKE_PTR(why);
                        }
                }
                json_decref(job);
                cli_sleep_usec(200 * 1000);
        }
        return NULL;
}

/* A session that ended before we came: its transcript, from its log (its first MiB). */
static void show_log(struct cli_ctx *ctx, long long id) {
        char target[96];
        snprintf(target, sizeof target, "/api/v1/jobs/%lld/log", id);
        struct cli_call call = { .method = "GET", .target = target };
        struct cli_http_response rep;
        if (cli_api_call(ctx, &call, &rep) != CLI_EXIT_OK)
                return;
        (void) gw_write_all(STDOUT_FILENO, rep.body, rep.body_len);
        cli_http_response_done(&rep);
}

static bool job_ended(struct cli_ctx *ctx, long long id) {
        json_t *job = cli_job_get(ctx, id);
        bool ended = job && gw_job_state_is_final(state_of(job));
        json_decref(job);
        return ended;
}

/* The supervisor binds the socket as it starts the job, a moment after the daemon says
 * RUNNING; a job quicker than us has removed it again: -ESRCH then. */
static int connect_session(struct cli_ctx *ctx, long long id, const char *sock) {
        int fd = -ENOENT;
        for (int i = 0; i < 100 && !interrupted; i++) {
                fd = cli_relay_connect(sock);
                if (fd >= 0 || (fd != -ENOENT && fd != -ECONNREFUSED))
                        break;
                if (job_ended(ctx, id))
                        return -ESRCH;
                cli_sleep_usec(100 * 1000);
        }
        if (fd < 0)
                cli_error("job %lld: cannot connect to its session at %s: %s", id, sock, strerror(-fd));
        return fd;
}

static void cancel(struct cli_ctx *ctx, long long id) {
        char target[64];
        snprintf(target, sizeof target, "/api/v1/jobs/%lld", id);
        struct cli_call call = { .method = "DELETE", .target = target };
        json_t *reply = NULL;
        if (cli_api_json(ctx, &call, &reply) == CLI_EXIT_OK)
                fprintf(stderr, "gpuward: job %lld cancelled\n", id);
        json_decref(reply);
}

/* After the session: the job's end as recorded (the supervisor closes the session once the
 * end is told, so it is there at once, or nearly). */
static int finish(struct cli_ctx *ctx, long long id) {
        for (int i = 0; i < 300; i++) {
                json_t *job = cli_job_get(ctx, id);
                if (!job)
                        return CLI_EXIT_FAIL;
                if (gw_job_state_is_final(state_of(job))) {
                        int st = job_status(job);
                        if (st != CLI_EXIT_OK) {
                                fputs("gpuward: ", stderr);
                                cli_print_job_end(stderr, job, id);
                        }
                        json_decref(job);
                        return st;
                }
                json_decref(job);
                cli_sleep_usec(100 * 1000);
        }
        cli_error("job %lld: its session closed but it has not ended yet; 'gpuward show %lld' follows it", id, id);
        return CLI_EXIT_FAIL;
}

int cli_verb_run(struct cli_ctx *ctx, int argc, char **argv) {
        struct submit_opts o = { .ngpus = 1 };
        int r = parse(ctx, argc, argv, &o);
        if (r >= 0)
                return r;
        long long id = submit(ctx, &o, argv + optind, (size_t) (argc - optind));
        if (id < 0)
                return CLI_EXIT_FAIL;
        fprintf(stderr, "gpuward: job %lld submitted\n", id);
        struct sigaction sa = { .sa_handler = on_interrupt }, old[3];
        static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
        sigemptyset(&sa.sa_mask);
        for (size_t i = 0; i < 3; i++)
                (void) sigaction(sigs[i], &sa, &old[i]);
        json_t *ended = NULL;
        _cleanup_free_ char *sock = wait_for_session(ctx, id, &ended);
        int fd = sock ? connect_session(ctx, id, sock) : -1;
        for (size_t i = 0; i < 3; i++)
                (void) sigaction(sigs[i], &old[i], NULL);
        if (interrupted) {
                /* Nobody will use the session: it must not hold GPUs until it times out. */
                if (fd >= 0)
                        (void) close(fd); /* a session that started: hung up */
                else
                        cancel(ctx, id);
                return 128 + interrupted;
        }
        if (ended) {
                fputs("gpuward: ", stderr);
                cli_print_job_end(stderr, ended, id);
                r = job_status(ended);
                json_decref(ended);
                return r == CLI_EXIT_OK ? CLI_EXIT_FAIL : r; /* it never had its session */
        }
        if (fd == -ESRCH) {
                show_log(ctx, id);
                return finish(ctx, id);
        }
        if (fd < 0)
                return CLI_EXIT_FAIL;
        enum cli_relay_end end = cli_relay(fd);
        if (end == CLI_RELAY_HUNG_UP)
                return 128 + (cli_relay_signal() ? cli_relay_signal() : SIGHUP);
        if (end == CLI_RELAY_FAILED)
                cli_warn("job %lld: its session failed: %s", id, strerror(errno));
        return finish(ctx, id);
}
