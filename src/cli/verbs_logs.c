/* gpuward logs [-f] JOB: the job's output, fetched by offset; -f polls until it ends. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
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
#include "cli/verbs.h"
#include "cli/wait.h"
#include "core/job.h"
#include "core/jobarray.h"

#define LOG_CHUNK (1024 * 1024) /* the API's maximum per request */
#define FOLLOW_POLL (200 * GW_USEC_PER_MSEC)
#define JSON_LOG_MAX ((size_t) 64 * 1024 * 1024)
/* While the job waits, why is looked at every this many polls: a reason changes at the
 * scheduler's pace, and each look costs the daemon two requests. */
#define WAIT_LOOK_EVERY 5

static const char logs_help[] =
        "Usage: gpuward logs [-f] [--attempt K] [--json] JOB\n"
        "\n"
        "Print what the job wrote to stdout and stderr, byte for byte.  With -f, keep\n"
        "printing new output as it comes and return when the job has ended.  A job that\n"
        "was retried has a log per attempt: the current one is printed, and -f goes on\n"
        "into the next attempt after a '==> attempt N <==' line.\n"
        "\n"
        "With -f, while the job waits to start, a line on stderr says so and why (again\n"
        "when the reason changes); when the job ends, stderr gets the line 'gpuward wait'\n"
        "prints ('Job 17 COMPLETED (exit 0)'), and the exit status is 1 unless it\n"
        "COMPLETED.  Stdout stays the log alone.\n"
        "\n"
        "A job array (submit --array) has no log of its own: each task has its own\n"
        "('gpuward logs 17_2').  Asked for the array's, stderr lists its tasks and how to\n"
        "read each, and the exit status is 1.\n"
        "\n"
        "Options:\n"
        "  -f, --follow   follow the log until the job ends (Ctrl-C stops watching only);\n"
        "                 exit 1 when it did not COMPLETE\n"
        "  --attempt K    the log of attempt K (1 is the first run; 'gpuward show JOB'\n"
        "                 lists them); with -f, stop when that attempt ends\n"
        "  --json         print {\"id\", \"attempt\", \"state\", \"offset\", \"log\"} (not with -f)\n"
        "  -h, --help     this help\n"
        "\n"
        "Examples:\n"
        "  gpuward logs 17\n"
        "  gpuward logs -f 17\n"
        "  gpuward logs --attempt 1 17 | tail -50    # how the first attempt failed\n"
        "  gpuward logs 17 | grep -i 'cuda error'\n";

enum { OPT_ATTEMPT = 0x100 };

struct log_state {
        long long id;
        long long offset;
        long long attempt; /* the attempt read: --attempt, else the one the first reply names */
        long long current; /* the job's current attempt, from X-Job-Attempt; 0: not said */
        char *job_state; /* from X-Job-State; malloc'ed */
        char *told_wait; /* the waiting reason last told on stderr; malloc'ed */
        unsigned polls; /* empty polls while waiting, to pace the looks at why */
};

/* One GET of the log from st->offset.  *ret is the response (body = the bytes). */
static int fetch_chunk(struct cli_ctx *ctx, struct log_state *st, struct cli_http_response *ret) {
        char target[160], ref[32];
        int k = snprintf(target, sizeof(target), "/api/v1/jobs/%s/log?offset=%lld&limit=%d",
                         cli_job_ref(st->id, ref, sizeof ref), st->offset, LOG_CHUNK);
        if (st->attempt > 0 && k > 0 && (size_t) k < sizeof(target))
                snprintf(target + k, sizeof(target) - (size_t) k, "&attempt=%lld", st->attempt);
        static const struct cli_field_alias aliases[] = { { "attempt", "--attempt" }, { NULL, NULL } };
        struct cli_call call = { .method = "GET", .target = target, .aliases = aliases };
        int r = cli_api_call(ctx, &call, ret);
        if (r)
                return r;
        long long next;
        const char *h = cli_http_header(ret, "X-Log-Offset");
        if (h && gw_parse_int(h, 0, LLONG_MAX, &next) == 0)
                st->offset = next;
        else
                st->offset += (long long) ret->body_len;
        h = cli_http_header(ret, "X-Job-State");
        free(st->job_state);
        st->job_state = h ? strdup(h) : NULL;
        h = cli_http_header(ret, "X-Job-Attempt");
        if (!h || gw_parse_int(h, 1, INT_MAX, &st->current) < 0)
                st->current = 0;
        /* Later chunks come from the same attempt, even if a retry starts meanwhile. */
        if (st->attempt == 0)
                st->attempt = st->current;
        return 0;
}

static bool job_ended(const struct log_state *st) {
        if (!st->job_state)
                return true; /* a daemon that does not say cannot be followed forever */
        enum gw_job_state s = gw_job_state_from_name(st->job_state);
        return s >= 0 && gw_job_state_is_final(s);
}

/* The log file of attempt k of job, as GET /api/v1/jobs/ID tells: NULL when unknown. */
static const char *attempt_log(const json_t *job, long long k) {
        long long v;
        if (cli_jint(job, "attempt", &v) && v == k)
                return cli_jstr(job, "log_path");
        size_t i;
        const json_t *a;
        json_array_foreach (json_object_get(job, "attempts"), i, a)
                if (cli_jint(a, "attempt", &v) && v == k)
                        return cli_jstr(a, "log_path");
        return NULL;
}

/* Where attempt st->attempt + 1 starts: 0, unless it writes on in the same file (an
 * --output FILE is appended to by every attempt). */
static long long next_attempt_offset(struct cli_ctx *ctx, const struct log_state *st) {
        char target[64], ref[32];
        snprintf(target, sizeof(target), "/api/v1/jobs/%s", cli_job_ref(st->id, ref, sizeof ref));
        struct cli_call call = { .method = "GET", .target = target };
        json_t *job = NULL;
        if (cli_api_json(ctx, &call, &job) != CLI_EXIT_OK)
                return 0;
        const char *was = attempt_log(job, st->attempt), *next = attempt_log(job, st->attempt + 1);
        long long offset = was && next && strcmp(was, next) == 0 ? st->offset : 0;
        json_decref(job);
        return offset;
}

/* Raw bytes to stdout.  A reader that went away (`| head`) ends us quietly. */
static int emit(const char *buf, size_t n, bool *ret_closed) {
        int r = gw_write_all(STDOUT_FILENO, buf, n);
        if (r == -EPIPE) {
                *ret_closed = true;
                return CLI_EXIT_OK;
        }
        if (r < 0) {
                cli_error("writing the log: %s", strerror(-r));
                return CLI_EXIT_FAIL;
        }
        return CLI_EXIT_OK;
}

/* An empty log while the job waits to be retried: the output worth reading is the
 * attempt before, and saying so beats printing nothing.  On stderr: stdout is the log. */
static void note_waiting_retry(const struct log_state *st, bool printed) {
        enum gw_job_state s = st->job_state ? gw_job_state_from_name(st->job_state) : _GW_JOB_STATE_INVALID;
        if (printed || st->current < 2 || st->attempt != st->current || (s != GW_JOB_PENDING && s != GW_JOB_HELD))
                return;
        fprintf(stderr,
                "gpuward: job %lld waits to start attempt %lld; 'gpuward logs --attempt %lld %lld' prints "
                "the one before\n",
                st->id, st->current, st->current - 1, st->id);
}

/* "==> attempt N <==" on a line of its own, as tail(1) heads each file. */
static int emit_separator(long long attempt, bool mid_line, bool *ret_closed) {
        char line[64];
        int k = snprintf(line, sizeof(line), "%s==> attempt %lld <==\n", mid_line ? "\n" : "", attempt);
        return emit(line, (size_t) k, ret_closed);
}

/* GPUs that are healthy, not drained and hold no job, from GET /api/v1/gpus; -1 when
 * unknown. */
static long long free_gpus(struct cli_ctx *ctx) {
        struct cli_call call = { .method = "GET", .target = "/api/v1/gpus" };
        json_t *reply = NULL;
        if (cli_api_json(ctx, &call, &reply) != CLI_EXIT_OK)
                return -1;
        long long n = 0, v;
        size_t i;
        const json_t *g;
        json_array_foreach (json_object_get(reply, "gpus"), i, g) {
                const json_t *info = json_object_get(g, "job_info");
                bool busy = cli_jint(info, "id", &v) || cli_jint(g, "job", &v);
                const char *health = cli_jstr(g, "health");
                if (!busy && health && strcmp(health, "ok") == 0)
                        n++;
        }
        json_decref(reply);
        return n;
}

char *cli_wait_reason(struct cli_ctx *ctx, const json_t *job) {
        const char *reason = cli_jstr(job, "reason");
        _cleanup_free_ char *safe = cli_sanitize(reason && *reason ? reason : "reason not given");
        long long asked, free_n;
        char *out = NULL;
        if (safe && reason && strcmp(reason, "Resources") == 0 && cli_jint(job, "ngpus", &asked) &&
            (free_n = free_gpus(ctx)) >= 0) {
                if (asprintf(&out, "%s: %lld GPU%s asked, %lld free", safe, asked, asked == 1 ? "" : "s", free_n) < 0)
                        out = NULL;
                return out;
        }
        return TAKE_PTR(safe);
}

/* While the job waits and nothing is printed, say so on stderr: once, and again when why
 * changes.  Stdout is the log, so it stays untouched. */
static void note_waiting(struct cli_ctx *ctx, struct log_state *st) {
        enum gw_job_state s = st->job_state ? gw_job_state_from_name(st->job_state) : _GW_JOB_STATE_INVALID;
        if (s != GW_JOB_PENDING && s != GW_JOB_HELD)
                return;
        if (st->told_wait && st->polls++ % WAIT_LOOK_EVERY != 0)
                return;
        json_t *job = cli_job_get(ctx, st->id);
        _cleanup_free_ char *why = job && cli_job_waiting(job) ? cli_wait_reason(ctx, job) : NULL;
        json_decref(job);
        if (!why || (st->told_wait && strcmp(st->told_wait, why) == 0))
                return;
        fprintf(stderr, "gpuward: job %lld is waiting (%s); its output will follow when it starts\n", st->id, why);
        free(st->told_wait);
        st->told_wait = TAKE_PTR(why);
}

/* The job has ended: how, on stderr as 'gpuward wait' says it; 1 unless it COMPLETED.
 * mid_line: the log's last line has no newline, which on one terminal would run the two
 * together. */
static int tell_end(struct cli_ctx *ctx, const struct log_state *st, bool mid_line) {
        json_t *job = cli_job_get(ctx, st->id);
        if (!job)
                return CLI_EXIT_FAIL;
        const char *state = cli_jstr(job, "state");
        int r = state && strcmp(state, "COMPLETED") == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
        (void) fflush(stdout);
        if (mid_line && isatty(STDOUT_FILENO) && isatty(STDERR_FILENO))
                fputc('\n', stderr);
        cli_print_job_end(stderr, job, st->id);
        json_decref(job);
        return r;
}

/* across: on to the next attempt when the one read is over (-f without --attempt). */
static int stream_log(struct cli_ctx *ctx, struct log_state *st, bool follow, bool across) {
        bool mid_line = false, any = false;
        (void) fflush(stdout);
        for (;;) {
                struct cli_http_response resp;
                int r = fetch_chunk(ctx, st, &resp);
                if (r)
                        return r;
                bool closed = false;
                size_t n = resp.body_len;
                r = emit(resp.body, n, &closed);
                if (n > 0)
                        mid_line = resp.body[n - 1] != '\n';
                any = any || n > 0;
                cli_http_response_done(&resp);
                if (r || closed)
                        return r;
                if (n >= LOG_CHUNK)
                        continue; /* more is there already */
                if (!follow) {
                        note_waiting_retry(st, any);
                        return CLI_EXIT_OK;
                }
                if (n > 0)
                        continue;
                /* All of this attempt is read; one after it means it is over. */
                if (st->attempt > 0 && st->current > st->attempt) {
                        if (!across)
                                return CLI_EXIT_OK;
                        st->offset = next_attempt_offset(ctx, st);
                        st->attempt++;
                        r = emit_separator(st->attempt, mid_line, &closed);
                        if (r || closed)
                                return r;
                        mid_line = false;
                        any = false; /* a wait for the next attempt is told too */
                        continue;
                }
                if (job_ended(st))
                        return st->job_state ? tell_end(ctx, st, mid_line) : CLI_EXIT_OK;
                if (!any)
                        note_waiting(ctx, st);
                cli_sleep_usec(FOLLOW_POLL);
        }
}

int cli_follow_log(struct cli_ctx *ctx, long long id) {
        struct log_state st = { .id = id };
        int r = stream_log(ctx, &st, true, true);
        free(st.job_state);
        free(st.told_wait);
        return r;
}

/* Appends buf to out as valid UTF-8: bytes that are not become U+FFFD, since a log is
 * whatever a program printed and JSON cannot carry raw bytes. */
static void put_utf8(FILE *out, const unsigned char *p, size_t n) {
        size_t i = 0;
        while (i < n) {
                unsigned char c = p[i];
                size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
                bool ok = len > 0 && i + len <= n && !(len == 2 && c < 0xC2);
                for (size_t k = 1; ok && k < len; k++)
                        ok = (p[i + k] & 0xC0) == 0x80;
                if (ok && len == 3)
                        ok = !(c == 0xE0 && p[i + 1] < 0xA0) && !(c == 0xED && p[i + 1] >= 0xA0);
                if (ok && len == 4)
                        ok = c <= 0xF4 && !(c == 0xF0 && p[i + 1] < 0x90) && !(c == 0xF4 && p[i + 1] >= 0x90);
                if (!ok) {
                        fputs("\xef\xbf\xbd", out);
                        i++;
                        continue;
                }
                fwrite(p + i, 1, len, out);
                i += len;
        }
}

static int json_log(struct cli_ctx *ctx, struct log_state *st) {
        struct cli_text t;
        if (cli_text_open(&t) < 0)
                return CLI_EXIT_FAIL;
        FILE *f = t.f;
        int r;
        for (;;) {
                struct cli_http_response resp;
                r = fetch_chunk(ctx, st, &resp);
                if (r)
                        break;
                size_t n = resp.body_len;
                put_utf8(f, (const unsigned char *) resp.body, n);
                cli_http_response_done(&resp);
                if (n < LOG_CHUNK || (size_t) ftell(f) >= JSON_LOG_MAX)
                        break;
        }
        _cleanup_free_ char *text = cli_text_take(&t, !r);
        size_t len = t.len;
        if (!r && !text)
                r = CLI_EXIT_FAIL;
        if (!r) {
                json_t *o =
                        json_pack("{s:I, s:o?, s:s?, s:I, s:s%}", "id", (json_int_t) st->id, "attempt",
                                  st->attempt > 0 ? json_integer(st->attempt) : NULL, "state", st->job_state, "offset",
                                  (json_int_t) st->offset, "log", text ? text : "", text ? len : (size_t) 0);
                r = o && cli_print_json(o) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
                json_decref(o);
        }
        return r;
}

struct logs_opts {
        bool follow;
        long long attempt;
};

#define TASKS_LISTED 10

/* An array job has no output of its own: its tasks have.  Says so on stderr with how to read
 * each (the first TASKS_LISTED, then the rest folded) and returns CLI_EXIT_FAIL; 0 for any
 * other job; the API call's exit status, its error said once, when the job cannot be read. */
static int tell_array_tasks(struct cli_ctx *ctx, long long id) {
        json_t *job;
        int rc = cli_job_fetch(ctx, id, &job);
        if (rc != CLI_EXIT_OK)
                return rc;
        const char *spec = cli_jstr(job, "array");
        struct gw_array a;
        char msg[GW_ARRAY_MSG_SIZE];
        if (!spec || gw_array_parse(spec, "array", &a, msg, sizeof msg) < 0) {
                json_decref(job);
                return 0;
        }
        fprintf(stderr, "gpuward: job %lld is a job array of %zu task%s: each has its own log:\n", id, a.n,
                a.n == 1 ? "" : "s");
        for (size_t i = 0; i < a.n && i < TASKS_LISTED; i++)
                fprintf(stderr, "  gpuward logs %lld_%u\n", id, a.ids[i]);
        if (a.n > TASKS_LISTED) {
                char rest[256];
                (void) gw_array_fold(id, a.ids + TASKS_LISTED, a.n - TASKS_LISTED, 0, rest, sizeof rest);
                fprintf(stderr, "  ... and %zu more: %s\n", a.n - TASKS_LISTED, rest);
        }
        fprintf(stderr, "'gpuward show %lld' counts its tasks by state.\n", id);
        gw_array_done(&a);
        json_decref(job);
        return CLI_EXIT_FAIL;
}

static int on_logs_option(void *userdata, int opt, const char *arg) {
        struct logs_opts *o = userdata;
        if (opt == 'f')
                o->follow = true;
        else if (gw_parse_int(arg, 1, INT_MAX, &o->attempt) < 0)
                return cli_usage("logs", "--attempt: '%s' is not an attempt number (1, 2, ...)", arg);
        return 0;
}

int cli_verb_logs(struct cli_ctx *ctx, int argc, char **argv) {
        static const struct option extra[] = {
                { "follow", no_argument, NULL, 'f' },
                { "attempt", required_argument, NULL, OPT_ATTEMPT },
                { 0 },
        };
        struct logs_opts opt = { 0 };
        const struct cli_options spec = {
                .verb = "logs",
                .help = logs_help,
                .extra = extra,
                .shortopts = "f",
                .on_option = on_logs_option,
                .userdata = &opt,
        };
        bool json;
        int early = cli_parse_options(ctx, &spec, argc, argv, &json);
        if (early >= 0)
                return early;
        bool follow = opt.follow;
        struct log_state st = { .attempt = opt.attempt };
        if (optind >= argc)
                return cli_usage("logs", "which job? gpuward logs [-f] [--attempt K] JOB");
        if (optind + 1 < argc)
                return cli_usage("logs", "one job at a time (got '%s' too)", argv[optind + 1]);
        if (follow && json)
                return cli_usage("logs", "--json and -f exclude each other");
        if (cli_parse_job_id("logs", argv[optind], &st.id) < 0)
                return CLI_EXIT_USAGE;
        int rt = st.id < 0 ? cli_resolve_task(ctx, &st.id) : tell_array_tasks(ctx, st.id);
        if (rt)
                return rt;
        bool across = st.attempt == 0;
        int r = json ? json_log(ctx, &st) : stream_log(ctx, &st, follow, across);
        free(st.job_state);
        free(st.told_wait);
        return r;
}
