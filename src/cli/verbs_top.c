/* gpuward top: the GPUs and the running and waiting jobs, redrawn in place until 'q'. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "cli/api.h"
#include "cli/format.h"
#include "cli/gpuview.h"
#include "cli/jobview.h"
#include "cli/term.h"
#include "cli/verbs.h"

#define DEFAULT_INTERVAL_S 2.0
#define MIN_INTERVAL_S 0.1
#define MAX_INTERVAL_S 3600.0
/* A screen that refreshes should say "cannot reach" soon rather than freeze for the usual
 * call timeout; a local daemon answers in milliseconds (its GPU list never waits for NVML). */
#define LIVE_CALL_TIMEOUT (5 * GW_USEC_PER_SEC)
#define JOB_NAME_MAX_COLS 24
#define JOB_FIELDS "id,name,user,uid,state,reason,ngpus,gpus,start_time,display_id,array_waiting"

static const char top_help[] = "Usage: gpuward top [--interval SECONDS] [--once]\n"
                               "\n"
                               "Watch the GPUs and the queue, redrawn in place like top or nvitop: per GPU the\n"
                               "same lines as 'gpuward gpus' (utilisation, memory, temperature, power, health,\n"
                               "the job on it and rogue processes), then the running and pending jobs.\n"
                               "Press q or Ctrl-C to quit.  If gpuwardd cannot be reached the screen says so and\n"
                               "tries again at every refresh.\n"
                               "\n"
                               "When the output is not a terminal (a pipe, a file), or with --once, it prints one\n"
                               "snapshot as plain text and exits.\n"
                               "\n"
                               "Options:\n"
                               "  --interval SECONDS  time between refreshes (default 2; 0.1 to 3600, fractions\n"
                               "                      allowed)\n"
                               "  --once              print one snapshot and exit\n"
                               "  -h, --help          this help\n"
                               "\n"
                               "Examples:\n"
                               "  gpuward top\n"
                               "  gpuward top --interval 0.5\n"
                               "  gpuward top --once > snapshot.txt\n"
                               "  gpuward top --once | grep rogue   # GPU processes that belong to no job\n";

enum { OPT_INTERVAL = 0x100, OPT_ONCE };

struct top_opts {
        double interval_s;
        bool once;
};

/* What one refresh fetched. */
struct top_snapshot {
        json_t *gpus; /* GET /api/v1/gpus; NULL when the refresh failed */
        json_t *jobs; /* GET /api/v1/jobs for the running and pending ones */
        char *error; /* why the refresh failed, one line; malloc'ed, NULL when it did not */
        time_t at;
};

static void snapshot_clear(struct top_snapshot *s) {
        json_decref(s->gpus);
        json_decref(s->jobs);
        free(s->error);
        *s = (struct top_snapshot){ 0 };
}

static int parse_interval(const char *s, double *ret) {
        char *end = NULL;
        errno = 0;
        double v = strtod(s, &end);
        if (errno || end == s || *end || !isfinite(v) || v < MIN_INTERVAL_S || v > MAX_INTERVAL_S)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int parse_top_opts(struct cli_ctx *ctx, int argc, char **argv, struct top_opts *o, bool *ret_help) {
        static const struct option opts[] = {
                { "interval", required_argument, NULL, OPT_INTERVAL },
                { "once", no_argument, NULL, OPT_ONCE },
                CLI_OPTIONS_END,
        };
        int c, r;
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
                switch (c) {
                case 'h':
                        *ret_help = true;
                        return 0;
                case OPT_INTERVAL:
                        if (parse_interval(optarg, &o->interval_s) < 0)
                                return cli_usage("top", "--interval: '%s' is not a number of seconds from 0.1 to 3600",
                                                 optarg);
                        break;
                case OPT_ONCE:
                        o->once = true;
                        break;
                case CLI_OPT_SOCKET:
                        if ((r = cli_take_socket(ctx, "top", optarg)) != 0)
                                return r;
                        break;
                default:
                        return cli_bad_option("top", argv, optind, c, optopt);
                }
        }
        if (optind < argc)
                return cli_usage("top", "unexpected argument '%s'", argv[optind]);
        if (ctx->json)
                return cli_usage("top", "top has no JSON output; use 'gpuward gpus --json' and 'gpuward queue --json'");
        return 0;
}

/* Both lists, or neither.  With errors_out set, what cli_error would print goes there
 * instead of stderr (the live screen shows it). */
static int snapshot_fetch(struct cli_ctx *ctx, struct top_snapshot *s, gw_usec_t timeout, FILE *errors_out) {
        struct cli_call gpus = { .method = "GET", .target = "/api/v1/gpus", .timeout = timeout };
        struct cli_call jobs = {
                .method = "GET",
                .target = "/api/v1/jobs?state=RUNNING,PENDING&fields=" JOB_FIELDS,
                .timeout = timeout,
        };
        FILE *old = errors_out ? cli_set_error_stream(errors_out) : NULL;
        snapshot_clear(s);
        s->at = time(NULL);
        int r = cli_api_json(ctx, &gpus, &s->gpus);
        if (r == CLI_EXIT_OK)
                r = cli_api_json(ctx, &jobs, &s->jobs);
        if (r == CLI_EXIT_OK && !json_is_array(json_object_get(s->gpus, "gpus"))) {
                cli_error("gpuwardd's reply has no \"gpus\" array");
                r = CLI_EXIT_FAIL;
        } else if (r == CLI_EXIT_OK && !json_is_array(json_object_get(s->jobs, "jobs"))) {
                cli_error("gpuwardd's job list has no \"jobs\" array");
                r = CLI_EXIT_FAIL;
        }
        if (errors_out)
                (void) cli_set_error_stream(old);
        if (r != CLI_EXIT_OK) {
                json_decref(s->gpus);
                json_decref(s->jobs);
                s->gpus = s->jobs = NULL;
        }
        return r;
}

/* The GPUS column: where a running job runs, how many a waiting one needs. */
static void job_gpus(const json_t *job, bool running, char *buf, size_t n) {
        long long v;
        _cleanup_free_ char *list = running ? cli_job_gpu_list(job) : NULL;
        if (list && strcmp(list, "-") != 0)
                snprintf(buf, n, "%s", list);
        else if (cli_jint(job, "ngpus", &v))
                snprintf(buf, n, "%lld", v);
        else
                snprintf(buf, n, "-");
}

static int add_job_row(struct cli_table *t, const json_t *job, time_t now) {
        char id[48], ubuf[32], gpus[64], elapsed[32];
        long long v;
        /* As the queue names it: "8_2" for a task, "8_[3-5]" for an array's waiting tasks. */
        const char *shown = cli_jstr(job, "array_waiting");
        if (!shown)
                shown = cli_jstr(job, "display_id");
        if (shown)
                snprintf(id, sizeof(id), "%s", shown);
        else
                snprintf(id, sizeof(id), "%lld", cli_jint(job, "id", &v) ? v : 0);
        const char *state = cli_jstr(job, "state");
        const char *reason = cli_jstr(job, "reason");
        bool running = state && strcmp(state, "RUNNING") == 0;
        _cleanup_free_ char *sbuf = NULL;
        /* Why a job waits is what one watches the queue for. */
        if (!running && state && reason && *reason && asprintf(&sbuf, "%s (%s)", state, reason) < 0)
                sbuf = NULL;
        job_gpus(job, running, gpus, sizeof(gpus));
        const char *cells[] = {
                id,
                cli_job_user(job, ubuf, sizeof(ubuf)),
                cli_jstr(job, "name"),
                sbuf ? sbuf : state,
                gpus,
                cli_job_elapsed(job, now, elapsed, sizeof(elapsed)),
        };
        return cli_table_add(t, cells);
}

static int print_jobs(const json_t *jobs, time_t now, FILE *f) {
        if (json_array_size(jobs) == 0) {
                fputs("No running or pending jobs.\n", f);
                return 0;
        }
        static const char *const cols[] = { "ID", "USER", "NAME", "STATE", "GPUS", "TIME" };
        struct cli_table *t = cli_table_new(cols, ELEMENTSOF(cols));
        if (!t)
                return -ENOMEM;
        cli_table_set_max_width(t, 2, JOB_NAME_MAX_COLS);
        size_t i;
        const json_t *job;
        int r = 0;
        json_array_foreach (jobs, i, job) {
                r = add_job_row(t, job, now);
                if (r < 0)
                        break;
        }
        if (r >= 0)
                cli_table_print(t, f);
        cli_table_free(t);
        return r;
}

/* "gpuward top  14:02:11  4 GPUs, 2 running, 3 pending" */
static void print_header(const struct top_snapshot *s, FILE *f) {
        char tbuf[48];
        size_t running = 0, pending = 0, i;
        const json_t *job;
        json_array_foreach (json_object_get(s->jobs, "jobs"), i, job) {
                const char *state = cli_jstr(job, "state");
                if (state && strcmp(state, "RUNNING") == 0)
                        running++;
                else
                        pending++;
        }
        fprintf(f, "gpuward top  %s", cli_format_time((double) s->at, s->at, tbuf, sizeof(tbuf)));
        if (s->gpus)
                fprintf(f, "  %zu GPU%s, %zu running, %zu pending", json_array_size(json_object_get(s->gpus, "gpus")),
                        json_array_size(json_object_get(s->gpus, "gpus")) == 1 ? "" : "s", running, pending);
}

/* The whole screen as plain text, the same for a snapshot and the live view; live adds
 * the refresh rate and how to quit.  The GPU table fits width columns (0: any).
 * malloc'ed; NULL when out of memory. */
static char *render(const struct top_snapshot *s, const struct top_opts *o, bool live, unsigned width) {
        struct cli_text t;
        if (cli_text_open(&t) < 0)
                return NULL;
        FILE *f = t.f;
        int r = 0;
        print_header(s, f);
        if (live)
                fprintf(f, "  (every %gs, q quits)", o->interval_s);
        fputs("\n\n", f);
        if (s->error) {
                fprintf(f, "%s (trying again every %gs)\n", s->error, o->interval_s);
        } else {
                r = cli_gpus_print(s->gpus, s->at, width, f);
                fputc('\n', f);
                if (r >= 0)
                        r = print_jobs(json_object_get(s->jobs, "jobs"), s->at, f);
        }
        return cli_text_take(&t, r >= 0);
}

static int run_once(struct cli_ctx *ctx, const struct top_opts *o) {
        struct top_snapshot s = { 0 };
        int r = snapshot_fetch(ctx, &s, 0, NULL);
        if (r == CLI_EXIT_OK) {
                unsigned rows, cols;
                cli_term_size(&rows, &cols);
                _cleanup_free_ char *text = render(&s, o, false, isatty(STDOUT_FILENO) ? cols : 0);
                if (text)
                        fputs(text, stdout);
                else {
                        cli_error("out of memory");
                        r = CLI_EXIT_FAIL;
                }
        }
        snapshot_clear(&s);
        return r;
}

/* One refresh for the live view: errors become the screen's error line. */
static void live_fetch(struct cli_ctx *ctx, struct top_snapshot *s, const struct top_opts *o) {
        struct cli_text t;
        bool captured = cli_text_open(&t) == 0;
        int r = snapshot_fetch(ctx, s, LIVE_CALL_TIMEOUT, captured ? t.f : stderr);
        char *err = captured ? cli_text_take(&t, true) : NULL;
        if (r != CLI_EXIT_OK) {
                if (err)
                        err[strcspn(err, "\n")] = '\0';
                s->error = err && *err ? TAKE_PTR(err) : strdup("gpuward: error: the refresh failed");
        }
        free(err);
}

static int live_draw(const struct top_snapshot *s, const struct top_opts *o) {
        unsigned rows, cols;
        cli_term_size(&rows, &cols);
        _cleanup_free_ char *text = render(s, o, true, cols);
        return text ? cli_term_draw(text, rows, cols) : -ENOMEM;
}

/* Reads what keys there are.  True when one says quit; *in_fd becomes -1 at the end of
 * input (a closed terminal) so that poll stops reporting it. */
static bool read_keys(int *in_fd) {
        char keys[64];
        ssize_t n = read(*in_fd, keys, sizeof(keys));
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
                *in_fd = -1;
                return false;
        }
        for (ssize_t i = 0; i < n; i++)
                if (keys[i] == 'q' || keys[i] == 'Q' || keys[i] == 3 /* Ctrl-C without ISIG */)
                        return true;
        return false;
}

/* Waits out one interval, redrawing on resize.  Returns 1 to refresh, 0 to quit (with
 * *ret_status set), or -errno. */
static int live_wait(const struct top_snapshot *s, const struct top_opts *o, int wake_fd, int *in_fd, int *ret_status) {
        gw_usec_t deadline = gw_clock_mono() + (gw_usec_t) (o->interval_s * (double) GW_USEC_PER_SEC);
        for (;;) {
                gw_usec_t now = gw_clock_mono();
                if (now >= deadline)
                        return 1;
                gw_usec_t ms = (deadline - now + 999) / 1000;
                struct pollfd p[2] = {
                        { .fd = wake_fd, .events = POLLIN },
                        { .fd = *in_fd, .events = POLLIN }, /* -1: ignored by poll */
                };
                if (poll(p, 2, ms > INT_MAX ? INT_MAX : (int) ms) < 0 && errno != EINTR)
                        return -errno;
                bool resized = false;
                int sig = cli_term_take_signals(&resized);
                if (sig) {
                        /* Ctrl-C is how one leaves a viewer; anything else stopped us. */
                        *ret_status = sig == SIGINT ? CLI_EXIT_OK : CLI_EXIT_FAIL;
                        return 0;
                }
                if (*in_fd >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)) && read_keys(in_fd)) {
                        *ret_status = CLI_EXIT_OK;
                        return 0;
                }
                if (resized) {
                        int r = live_draw(s, o);
                        if (r < 0)
                                return r;
                }
        }
}

static int run_live(struct cli_ctx *ctx, const struct top_opts *o) {
        int wake_fd = -1;
        /* Keys come from the terminal even when stdin is redirected, as in less(1). */
        _cleanup_close_ int tty_fd = isatty(STDIN_FILENO) ? -1 : open("/dev/tty", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        int in_fd = isatty(STDIN_FILENO) ? STDIN_FILENO : tty_fd >= 0 && isatty(tty_fd) ? tty_fd : -1;
        (void) fflush(stdout);
        int r = cli_term_open(in_fd, STDOUT_FILENO, &wake_fd);
        if (r < 0) {
                cli_error("cannot set up the terminal: %s", strerror(-r));
                return CLI_EXIT_FAIL;
        }
        struct top_snapshot s = { 0 };
        int status = CLI_EXIT_OK;
        for (;;) {
                live_fetch(ctx, &s, o);
                r = live_draw(&s, o);
                if (r >= 0)
                        r = live_wait(&s, o, wake_fd, &in_fd, &status);
                if (r <= 0)
                        break;
        }
        /* Back on the normal screen before anything is said about it. */
        cli_term_close();
        snapshot_clear(&s);
        if (r < 0) {
                cli_error("drawing the screen: %s", strerror(-r));
                return CLI_EXIT_FAIL;
        }
        return status;
}

int cli_verb_top(struct cli_ctx *ctx, int argc, char **argv) {
        struct top_opts o = { .interval_s = DEFAULT_INTERVAL_S };
        bool help = false;
        int r = parse_top_opts(ctx, argc, argv, &o, &help);
        if (r)
                return r;
        if (help) {
                fputs(top_help, stdout);
                return CLI_EXIT_OK;
        }
        if (o.once || !isatty(STDOUT_FILENO))
                return run_once(ctx, &o);
        return run_live(ctx, &o);
}
