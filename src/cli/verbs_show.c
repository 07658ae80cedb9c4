/* gpuward show JOB: one job as "key: value" lines, then its events. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "cli/api.h"
#include "cli/format.h"
#include "cli/jobview.h"
#include "cli/verbs.h"

static const char show_help[] =
        "Usage: gpuward show [--json] JOB\n"
        "\n"
        "Everything gpuwardd knows about one job: state and why, GPUs, limits, times, exit\n"
        "status, command, directory, log file, GPU telemetry once sampled (mean and 95th\n"
        "percentile utilisation and peak memory per GPU, GPU-hours so far), and the list\n"
        "of events (every state change with its reason).\n"
        "\n"
        "Options:\n"
        "  --json       print the API's JSON\n"
        "  -h, --help   this help\n"
        "\n"
        "Examples:\n"
        "  gpuward show 17\n"
        "  gpuward show --json 17 | jq .state\n"
        "  gpuward show --json 17 | jq .telemetry.gpu_hours\n";

enum { OPT_JSON = 0x100 };

/* One "Key:  value" line; absent values print as "-", control characters neutralised. */
static void field(const char *key, const char *value) {
        _cleanup_free_ char *safe = cli_sanitize(value && *value ? value : "-");
        printf("%-12s %s\n", key, safe ? safe : "-");
}

static void field_time(const char *key, const json_t *job, const char *name, time_t now) {
        char buf[48];
        field(key, cli_format_time(cli_jnum(job, name), now, buf, sizeof(buf)));
}

static void show_state(const json_t *job) {
        const char *state = cli_jstr(job, "state");
        const char *reason = cli_jstr(job, "reason");
        _cleanup_free_ char *line = NULL;
        if (reason && *reason && asprintf(&line, "%s (%s)", state ? state : "-", reason) < 0)
                line = NULL;
        field("State:", line ? line : state);
}

static void show_gpus(const json_t *job) {
        long long n = 0, mem = 0;
        char mbuf[32];
        _cleanup_free_ char *list = cli_job_gpu_list(job);
        _cleanup_free_ char *line = NULL;
        if (!cli_jint(job, "ngpus", &n))
                n = (long long) json_array_size(json_object_get(job, "gpus"));
        if (asprintf(&line, "%lld%s%s%s", n, list && strcmp(list, "-") ? " (" : "",
                     list && strcmp(list, "-") ? list : "", list && strcmp(list, "-") ? ")" : "") < 0)
                line = NULL;
        field("GPUs:", line);
        if (cli_jint(job, "gpu_mem", &mem) && mem > 0) {
                _cleanup_free_ char *m = NULL;
                if (asprintf(&m, "%s free per GPU", cli_format_bytes((double) mem, mbuf, sizeof(mbuf))) < 0)
                        m = NULL;
                field("GPU memory:", m);
        }
}

static void field_int(const char *key, const json_t *job, const char *name) {
        long long v;
        char buf[32];
        if (cli_jint(job, name, &v))
                snprintf(buf, sizeof(buf), "%lld", v);
        else
                snprintf(buf, sizeof(buf), "-");
        field(key, buf);
}

static void show_after(const json_t *job) {
        const json_t *after = json_object_get(job, "after");
        long long id;
        _cleanup_free_ char *line = NULL;
        if (json_is_object(after) && cli_jint(after, "job", &id)) {
                const char *kind = cli_jstr(after, "kind");
                if (asprintf(&line, "%lld:%s", id, kind ? kind : "ok") < 0)
                        line = NULL;
        } else if (json_is_string(after)) {
                line = strdup(json_string_value(after));
        }
        if (line)
                field("After:", line);
}

static void show_events(const json_t *job, time_t now) {
        const json_t *events = json_object_get(job, "events");
        if (!json_is_array(events) || json_array_size(events) == 0)
                return;
        static const char *const cols[] = { "TIME", "STATE", "KIND", "MESSAGE" };
        struct cli_table *t = cli_table_new(cols, 4);
        if (!t)
                return;
        size_t i;
        const json_t *ev;
        json_array_foreach(events, i, ev) {
                char tbuf[48];
                const char *cells[] = {
                        cli_format_time(cli_jnum(ev, "time"), now, tbuf, sizeof(tbuf)),
                        cli_jstr(ev, "state"),
                        cli_jstr(ev, "kind"),
                        cli_jstr(ev, "message"),
                };
                if (cli_table_add(t, cells) < 0)
                        break;
        }
        printf("\nEvents:\n");
        cli_table_print(t, stdout);
        cli_table_free(t);
}

/* Utilisation as a whole percent, rounded down: "mean 71%" for 71.5 never claims more
 * than the GPU did. */
static char *format_util(double v, char *buf, size_t n) {
        if (isfinite(v) && v >= 0)
                snprintf(buf, n, "%.0f%%", floor(v));
        else
                snprintf(buf, n, "-");
        return buf;
}

/* "Telemetry:" with a line per GPU and the GPU-hours; nothing before the first sample. */
static void show_telemetry(const json_t *job) {
        const json_t *tel = json_object_get(job, "telemetry");
        if (!json_is_object(tel))
                return;
        printf("\nTelemetry:\n");
        size_t i;
        const json_t *g;
        json_array_foreach(json_object_get(tel, "gpus"), i, g) {
                char idx[32], mean[32], p95[32], peak[32];
                long long v;
                if (cli_jint(g, "index", &v))
                        snprintf(idx, sizeof(idx), "%lld", v);
                else
                        snprintf(idx, sizeof(idx), "?");
                printf("  GPU %s: util mean %s p95 %s, peak memory %s\n", idx,
                       format_util(cli_jnum(g, "util_mean"), mean, sizeof(mean)),
                       format_util(cli_jnum(g, "util_p95"), p95, sizeof(p95)),
                       cli_format_bytes(cli_jnum(g, "mem_peak"), peak, sizeof(peak)));
        }
        double hours = cli_jnum(tel, "gpu_hours");
        if (isfinite(hours) && hours >= 0)
                printf("  GPU-hours: %.2f\n", hours);
        else
                printf("  GPU-hours: -\n");
}

static void show_job(const json_t *job) {
        time_t now = time(NULL);
        char buf[48], ubuf[32];
        _cleanup_free_ char *cmd = cli_job_command_line(job);

        field_int("Job:", job, "id");
        field("Name:", cli_jstr(job, "name"));
        field("User:", cli_job_user(job, ubuf, sizeof(ubuf)));
        show_state(job);
        show_gpus(job);
        field_int("Priority:", job, "priority");
        field("Time limit:", cli_format_secs(cli_jnum(job, "time_limit"), buf, sizeof(buf)));
        field_time("Submitted:", job, "submit_time", now);
        field_time("Started:", job, "start_time", now);
        field_time("Ended:", job, "end_time", now);
        field("Elapsed:", cli_job_elapsed(job, now, buf, sizeof(buf)));
        field("Exit:", cli_job_exit(job, buf, sizeof(buf)));
        show_after(job);
        field_int("Attempt:", job, "attempt");
        field_int("PID:", job, "pid");
        field("Command:", cmd);
        field("Directory:", cli_jstr(job, "cwd"));
        field("Log:", cli_jstr(job, "log_path"));
        show_telemetry(job);
        show_events(job, now);
}

int cli_verb_show(struct cli_ctx *ctx, int argc, char **argv) {
        static const struct option opts[] = {
                { "json", no_argument, NULL, OPT_JSON },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        bool json = ctx->json;
        int c;
        optind = 0;
        opterr = 0;
        /* Permuting is fine here ("show 17 --json"): a job id never starts with '-'. */
        while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
                if (c == 'h') {
                        fputs(show_help, stdout);
                        return CLI_EXIT_OK;
                }
                if (c != OPT_JSON)
                        return cli_bad_option("show", argv, optind, c, optopt);
                json = true;
        }
        if (optind >= argc)
                return cli_usage("show", "which job? gpuward show JOB");
        if (optind + 1 < argc)
                return cli_usage("show", "one job at a time (got '%s' too)", argv[optind + 1]);
        long long id;
        if (cli_parse_job_id("show", argv[optind], &id) < 0)
                return CLI_EXIT_USAGE;

        char target[64];
        snprintf(target, sizeof(target), "/api/v1/jobs/%lld", id);
        struct cli_call call = { .method = "GET", .target = target };
        json_t *job = NULL;
        int r = cli_api_json(ctx, &call, &job);
        if (r)
                return r;
        if (json)
                r = cli_print_json(job) < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
        else
                show_job(job);
        json_decref(job);
        return r;
}
