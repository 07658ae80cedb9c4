#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/metrics.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

static const char *const all_families[] = {
        "gpuward_gpu_utilization_ratio",
        "gpuward_gpu_memory_used_bytes",
        "gpuward_gpu_memory_total_bytes",
        "gpuward_gpu_temperature_celsius",
        "gpuward_gpu_power_watts",
        "gpuward_gpu_allocated",
        "gpuward_gpu_job_info",
        "gpuward_gpu_healthy",
        "gpuward_job_gpu_utilization_ratio",
        "gpuward_job_gpu_memory_used_bytes",
        "gpuward_jobs",
        "gpuward_queue_wait_seconds",
        "gpuward_rogue_processes",
        "gpuward_reclaims_total",
        "gpuward_retries_total",
        "gpuward_leaks_total",
        "gpuward_xid_events_total",
        "gpuward_sampler_snapshot_seconds",
        "gpuward_sampler_snapshot_max_seconds",
        "gpuward_sampler_cpu_seconds_total",
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_virtual_memory_bytes",
        "process_open_fds",
        "process_max_fds",
        "process_start_time_seconds",
};

static const double bounds[GW_METRICS_WAIT_BUCKETS] = { 1, 5, 10, 30, 60, 300, 600, 1800, 3600, 86400 };

static const struct gw_metrics_gpu gpus[] = {
        {
                .index = 0,
                .uuid = "GPU-0000",
                .name = "NVIDIA H100",
                .has_util = 1,
                .has_mem = 1,
                .has_temp = 1,
                .has_power = 1,
                .util_ratio = 0.1,
                .mem_used = UINT64_C(85899345920),
                .mem_total = UINT64_C(85899345921),
                .temp_c = 65.5,
                .power_w = 301.25,
                .job_id = 0,
                .user = "",
                .health = "ok",
        },
        {
                /* no temperature or power sensor; user and uuid need escaping */
                .index = 1,
                .uuid = "GPU-a\"b\\c\nd",
                .name = "NVIDIA H100",
                .has_util = 1,
                .has_mem = 1,
                .has_temp = 0,
                .has_power = 0,
                .util_ratio = 1,
                .mem_used = 1024,
                .mem_total = 2048,
                .temp_c = 99,
                .power_w = 999,
                .job_id = 42,
                .user = "bo\"b\\x\ny",
                .health = "drained",
        },
};

static const struct gw_metrics_job jobs[] = {
        { .id = 42, .user = "bo\"b\\x\ny", .name = "train \"big\"", .gpu = 1, .util_ratio = 0.75, .mem_used = 1024 },
        { .id = 43,
          .array_job = 40,
          .array_index = 2,
          .user = "carol",
          .name = "eval",
          .gpu = 0,
          .util_ratio = 0,
          .mem_used = 0 },
};

static struct gw_metrics_snapshot full_snapshot(void) {
        struct gw_metrics_snapshot s = {
                .gpus = gpus,
                .n_gpus = N_ELEMS(gpus),
                .jobs = jobs,
                .n_jobs = N_ELEMS(jobs),
                .jobs_by_state = { 3, 1, 2, 10, 4, 5, 6, 7 },
                .wait_bounds = bounds,
                .wait_counts = { 1, 2, 2, 5, 8, 9, 9, 9, 10, 11 },
                .wait_count = 12,
                .wait_sum = 123456.5,
                .rogue_processes = 1,
                .reclaims = 2,
                .retries = 3,
                .leaks = 4,
                .xid_events = 5,
                .cpu_seconds = 12.34,
                .resident_bytes = UINT64_C(123456789),
                .virtual_bytes = UINT64_C(987654321012),
                .open_fds = 17,
                .max_fds = 1048576,
                .start_time = 1700000000.25,
        };
        return s;
}

/* ---- a small reader of the exposition format, enough to check its structure ---- */

static size_t count_lines_with_prefix(const char *text, const char *prefix) {
        size_t n = 0, len = strlen(prefix);
        for (const char *l = text; *l;) {
                if (strncmp(l, prefix, len) == 0)
                        n++;
                const char *nl = strchr(l, '\n');
                if (!nl)
                        break;
                l = nl + 1;
        }
        return n;
}

static bool has_line(const char *text, const char *line) {
        size_t len = strlen(line);
        for (const char *l = text; *l;) {
                const char *nl = strchr(l, '\n');
                size_t ll = nl ? (size_t) (nl - l) : strlen(l);
                if (ll == len && memcmp(l, line, len) == 0)
                        return true;
                if (!nl)
                        break;
                l = nl + 1;
        }
        return false;
}

/* The value of the one line starting with prefix, as a double. */
static double value_of(const char *text, const char *prefix) {
        size_t len = strlen(prefix);
        const char *found = NULL, *end = NULL;
        for (const char *l = text; *l;) {
                const char *nl = strchr(l, '\n');
                if (strncmp(l, prefix, len) == 0) {
                        assert_null(found);
                        found = l;
                        end = nl ? nl : l + strlen(l);
                }
                if (!nl)
                        break;
                l = nl + 1;
        }
        assert_non_null(found);
        const char *v = end;
        while (v > found && v[-1] != ' ')
                v--;
        assert_true(v > found);
        return strtod(v, NULL);
}

/* Every family: exactly one HELP then one TYPE, then only its own samples, never resumed
 * later; every sample belongs to the family whose TYPE precedes it. */
static void check_structure(const char *text) {
        char seen[64][64];
        size_t n_seen = 0;
        char cur[64] = "", type[16] = "";

        assert_true(text[0] == '\0' || text[strlen(text) - 1] == '\n');
        for (const char *l = text; *l;) {
                const char *nl = strchr(l, '\n');
                assert_non_null(nl);
                char line[512];
                size_t ll = (size_t) (nl - l);
                assert_true(ll < sizeof(line));
                memcpy(line, l, ll);
                line[ll] = '\0';
                l = nl + 1;

                if (strncmp(line, "# HELP ", 7) == 0) {
                        char name[64];
                        assert_int_equal(sscanf(line + 7, "%63s", name), 1);
                        for (size_t i = 0; i < n_seen; i++)
                                assert_string_not_equal(seen[i], name);
                        assert_true(n_seen < N_ELEMS(seen));
                        memcpy(seen[n_seen++], name, sizeof(name));
                        memcpy(cur, name, sizeof(name));
                        /* the TYPE line must follow directly */
                        char want[96];
                        (void) snprintf(want, sizeof(want), "# TYPE %s ", name);
                        assert_int_equal(strncmp(l, want, strlen(want)), 0);
                        assert_int_equal(sscanf(l + strlen(want), "%15s", type), 1);
                        continue;
                }
                if (strncmp(line, "# TYPE ", 7) == 0) {
                        char name[64];
                        assert_int_equal(sscanf(line + 7, "%63s", name), 1);
                        assert_string_equal(name, cur);
                        continue;
                }
                assert_true(line[0] != '#');
                assert_true(cur[0] != '\0');
                size_t nlen = strcspn(line, "{ ");
                size_t clen = strlen(cur);
                bool ok = nlen == clen && strncmp(line, cur, clen) == 0;
                bool summary = strcmp(type, "summary") == 0; /* _sum and _count, no _bucket */
                if (!ok && (strcmp(type, "histogram") == 0 || summary) && strncmp(line, cur, clen) == 0) {
                        const char *suffix = line + clen;
                        size_t slen = nlen - clen;
                        ok = (!summary && slen == 7 && strncmp(suffix, "_bucket", 7) == 0) ||
                             (slen == 4 && strncmp(suffix, "_sum", 4) == 0) ||
                             (slen == 6 && strncmp(suffix, "_count", 6) == 0);
                }
                if (!ok)
                        fail_msg("sample outside its family %s: %s", cur, line);
        }
}

/* ---- promtool, when the machine has it ---- */

static bool on_path(const char *prog) {
        const char *path = getenv("PATH");
        char dir[4096];

        while (path && *path) {
                size_t n = strcspn(path, ":");
                if (n > 0 && n + strlen(prog) + 2 < sizeof(dir)) {
                        (void) snprintf(dir, sizeof(dir), "%.*s/%s", (int) n, path, prog);
                        if (access(dir, X_OK) == 0)
                                return true;
                }
                path += n;
                if (*path)
                        path++;
        }
        return false;
}

/* -1 when promtool is absent, else its exit status. */
static int promtool_check(const char *text, size_t len) {
        FILE *p;
        int st;

        if (!on_path("promtool")) {
                print_message("note: promtool not on PATH; skipping `promtool check metrics`\n");
                return -1;
        }
        /* if promtool dies early the write must fail, not kill the test */
        (void) signal(SIGPIPE, SIG_IGN);
        p = popen("promtool check metrics", "w");
        assert_non_null(p);
        assert_int_equal(fwrite(text, 1, len, p), len);
        st = pclose(p);
        assert_true(WIFEXITED(st));
        return WEXITSTATUS(st);
}

static void assert_promtool_ok(const char *text, size_t len) {
        int rc = promtool_check(text, len);
        if (rc >= 0) {
                if (rc != 0)
                        fail_msg("promtool check metrics failed (%d) on:\n%s", rc, text);
                print_message("promtool check metrics: ok\n");
        }
}

/* ---- tests ---- */

static void families_once_and_grouped(void **state) {
        struct gw_metrics_snapshot s = full_snapshot();
        size_t len = 0;
        char *text = gw_metrics_render(&s, &len);

        assert_non_null(text);
        assert_int_equal(len, strlen(text));
        check_structure(text);
        for (size_t i = 0; i < N_ELEMS(all_families); i++) {
                char help[96], type[96];
                (void) snprintf(help, sizeof(help), "# HELP %s ", all_families[i]);
                (void) snprintf(type, sizeof(type), "# TYPE %s ", all_families[i]);
                if (count_lines_with_prefix(text, help) != 1 || count_lines_with_prefix(text, type) != 1)
                        fail_msg("family %s: HELP/TYPE not exactly once", all_families[i]);
        }
        assert_true(has_line(text, "# TYPE gpuward_queue_wait_seconds histogram"));
        assert_true(has_line(text, "# TYPE gpuward_reclaims_total counter"));
        assert_true(has_line(text, "# TYPE process_cpu_seconds_total counter"));
        assert_true(has_line(text, "# TYPE gpuward_jobs gauge"));
        free(text);
}

static void values_and_labels(void **state) {
        struct gw_metrics_snapshot s = full_snapshot();
        char *text = gw_metrics_render(&s, NULL);

        assert_true(has_line(text, "gpuward_gpu_utilization_ratio{gpu=\"0\",uuid=\"GPU-0000\"} 0.1"));
        assert_true(has_line(text, "gpuward_gpu_memory_used_bytes{gpu=\"0\",uuid=\"GPU-0000\"} 85899345920"));
        assert_true(has_line(text, "gpuward_gpu_memory_total_bytes{gpu=\"0\",uuid=\"GPU-0000\"} 85899345921"));
        assert_true(has_line(text, "gpuward_gpu_temperature_celsius{gpu=\"0\",uuid=\"GPU-0000\"} 65.5"));
        assert_true(has_line(text, "gpuward_gpu_power_watts{gpu=\"0\",uuid=\"GPU-0000\"} 301.25"));
        /* Label-stable per GPU; who holds it is the info metric, only for a held GPU. */
        assert_true(has_line(text, "gpuward_gpu_allocated{gpu=\"0\",uuid=\"GPU-0000\"} 0"));
        assert_null(strstr(text, "gpuward_gpu_job_info{gpu=\"0\""));
        assert_true(has_line(text, "gpuward_gpu_healthy{gpu=\"0\",uuid=\"GPU-0000\",health=\"ok\"} 1"));

        /* escaped: backslash, double quote, newline; nothing else is touched */
        assert_true(has_line(text, "gpuward_gpu_utilization_ratio{gpu=\"1\",uuid=\"GPU-a\\\"b\\\\c\\nd\"} 1"));
        assert_true(has_line(text, "gpuward_gpu_allocated{gpu=\"1\",uuid=\"GPU-a\\\"b\\\\c\\nd\"} 1"));
        assert_true(has_line(text, "gpuward_gpu_job_info{gpu=\"1\",uuid=\"GPU-a\\\"b\\\\c\\nd\","
                                   "job=\"42\",display_id=\"42\",user=\"bo\\\"b\\\\x\\ny\"} 1"));
        assert_true(has_line(text, "gpuward_gpu_healthy{gpu=\"1\",uuid=\"GPU-a\\\"b\\\\c\\nd\","
                                   "health=\"drained\"} 0"));
        assert_true(has_line(text,
                             "gpuward_job_gpu_utilization_ratio{job=\"42\",display_id=\"42\",user=\"bo\\\"b\\\\x\\ny\","
                             "name=\"train \\\"big\\\"\",gpu=\"1\"} 0.75"));
        assert_true(has_line(
                text, "gpuward_job_gpu_memory_used_bytes{job=\"43\",display_id=\"40_2\",user=\"carol\",name=\"eval\","
                      "gpu=\"0\"} 0"));
        assert_true(has_line(
                text, "gpuward_job_gpu_utilization_ratio{job=\"43\",display_id=\"40_2\",user=\"carol\",name=\"eval\","
                      "gpu=\"0\"} 0"));

        static const char *const states[] = { "PENDING", "HELD",      "RUNNING", "COMPLETED",
                                              "FAILED",  "CANCELLED", "TIMEOUT", "RECLAIMED" };
        for (size_t i = 0; i < N_ELEMS(states); i++) {
                char want[96];
                (void) snprintf(want, sizeof(want), "gpuward_jobs{state=\"%s\"} %llu", states[i],
                                (unsigned long long) s.jobs_by_state[i]);
                assert_true(has_line(text, want));
        }
        assert_int_equal(count_lines_with_prefix(text, "gpuward_jobs{"), 8);

        assert_true(has_line(text, "gpuward_rogue_processes 1"));
        assert_true(has_line(text, "gpuward_reclaims_total 2"));
        assert_true(has_line(text, "gpuward_retries_total 3"));
        assert_true(has_line(text, "gpuward_leaks_total 4"));
        assert_true(has_line(text, "gpuward_xid_events_total 5"));
        assert_true(has_line(text, "process_cpu_seconds_total 12.34"));
        assert_true(has_line(text, "process_resident_memory_bytes 123456789"));
        assert_true(has_line(text, "process_virtual_memory_bytes 987654321012"));
        assert_true(has_line(text, "process_open_fds 17"));
        assert_true(has_line(text, "process_max_fds 1048576"));
        assert_true(has_line(text, "process_start_time_seconds 1700000000.25"));
        free(text);
}

static void invalid_metrics_omitted(void **state) {
        struct gw_metrics_snapshot s = full_snapshot();
        char *text = gw_metrics_render(&s, NULL);

        assert_int_equal(count_lines_with_prefix(text, "gpuward_gpu_temperature_celsius{gpu=\"1\""), 0);
        assert_int_equal(count_lines_with_prefix(text, "gpuward_gpu_power_watts{gpu=\"1\""), 0);
        assert_int_equal(count_lines_with_prefix(text, "gpuward_gpu_temperature_celsius{"), 1);
        assert_int_equal(count_lines_with_prefix(text, "gpuward_gpu_utilization_ratio{"), 2);
        free(text);

        /* when no GPU has a metric, its family goes entirely, HELP and TYPE included */
        struct gw_metrics_gpu g[2];
        memcpy(g, gpus, sizeof(g));
        g[0].has_temp = 0;
        g[0].has_mem = 0;
        s.gpus = g;
        g[1].has_mem = 0;
        text = gw_metrics_render(&s, NULL);
        check_structure(text);
        assert_null(strstr(text, "gpuward_gpu_temperature_celsius"));
        assert_null(strstr(text, "gpuward_gpu_memory_used_bytes"));
        assert_null(strstr(text, "gpuward_gpu_memory_total_bytes"));
        assert_non_null(strstr(text, "gpuward_gpu_power_watts{gpu=\"0\""));
        free(text);
}

static void histogram_cumulative(void **state) {
        struct gw_metrics_snapshot s = full_snapshot();
        char *text = gw_metrics_render(&s, NULL);
        double prev = 0;

        assert_int_equal(count_lines_with_prefix(text, "gpuward_queue_wait_seconds_bucket{"),
                         GW_METRICS_WAIT_BUCKETS + 1);
        assert_true(has_line(text, "gpuward_queue_wait_seconds_bucket{le=\"1\"} 1"));
        assert_true(has_line(text, "gpuward_queue_wait_seconds_bucket{le=\"86400\"} 11"));
        for (size_t b = 0; b < GW_METRICS_WAIT_BUCKETS; b++) {
                char prefix[96];
                (void) snprintf(prefix, sizeof(prefix), "gpuward_queue_wait_seconds_bucket{le=\"%g\"}", bounds[b]);
                double v = value_of(text, prefix);
                assert_true(v >= prev);
                prev = v;
        }
        double inf = value_of(text, "gpuward_queue_wait_seconds_bucket{le=\"+Inf\"}");
        double count = value_of(text, "gpuward_queue_wait_seconds_count ");
        assert_true(inf >= prev);
        assert_true(inf == count);
        assert_true(count == 12);
        assert_true(value_of(text, "gpuward_queue_wait_seconds_sum ") == 123456.5);
        /* +Inf comes last among the buckets, then _sum and _count */
        const char *pinf = strstr(text, "le=\"+Inf\"");
        const char *plast = strstr(text, "le=\"86400\"");
        assert_true(plast < pinf);
        assert_true(pinf < strstr(text, "gpuward_queue_wait_seconds_sum"));
        free(text);
}

static void numbers_parse_back(void **state) {
        static const double tricky[] = { 0.1, 1.0 / 3.0, 1e-300, 123456789012345678.0, 2.5e20, 0.0 };
        struct gw_metrics_snapshot s = full_snapshot();

        for (size_t i = 0; i < N_ELEMS(tricky); i++) {
                s.cpu_seconds = tricky[i];
                char *text = gw_metrics_render(&s, NULL);
                assert_true(value_of(text, "process_cpu_seconds_total ") == tricky[i]);
                free(text);
        }
        s.cpu_seconds = INFINITY;
        char *text = gw_metrics_render(&s, NULL);
        assert_true(has_line(text, "process_cpu_seconds_total +Inf"));
        free(text);
        s.cpu_seconds = NAN;
        text = gw_metrics_render(&s, NULL);
        assert_true(has_line(text, "process_cpu_seconds_total NaN"));
        free(text);
}

static void empty_and_large(void **state) {
        struct gw_metrics_snapshot s = { 0 };
        size_t len;
        char *text = gw_metrics_render(&s, &len);

        /* no GPUs, no jobs, no buckets: the daemon-wide families still make a valid page */
        assert_int_equal(len, strlen(text));
        check_structure(text);
        assert_null(strstr(text, "gpuward_gpu_"));
        assert_null(strstr(text, "gpuward_job_gpu_"));
        assert_true(has_line(text, "gpuward_queue_wait_seconds_bucket{le=\"+Inf\"} 0"));
        assert_true(has_line(text, "gpuward_queue_wait_seconds_count 0"));
        assert_promtool_ok(text, len);
        free(text);

        /* far past any initial buffer size */
        enum { N = 300 };
        static struct gw_metrics_gpu many[N];
        static char uuids[N][48];
        for (unsigned i = 0; i < N; i++) {
                (void) snprintf(uuids[i], sizeof(uuids[i]), "GPU-%08u-aaaa-bbbb-cccc-dddddddddddd", i);
                many[i] = gpus[0];
                many[i].index = i;
                many[i].uuid = uuids[i];
        }
        s = full_snapshot();
        s.gpus = many;
        s.n_gpus = N;
        text = gw_metrics_render(&s, &len);
        assert_int_equal(len, strlen(text));
        assert_true(len > 100000);
        check_structure(text);
        assert_int_equal(count_lines_with_prefix(text, "gpuward_gpu_healthy{"), N);
        assert_true(has_line(text, "gpuward_gpu_power_watts{gpu=\"299\","
                                   "uuid=\"GPU-00000299-aaaa-bbbb-cccc-dddddddddddd\"} 301.25"));
        free(text);
}

static void promtool_accepts(void **state) {
        struct gw_metrics_snapshot s = full_snapshot();
        size_t len;
        char *text = gw_metrics_render(&s, &len);

        assert_promtool_ok(text, len);
        free(text);
}

/* What the GPU sampler costs, in seconds (the daemon keeps microseconds). */
static void sampler_figures(void **state) {
        struct gw_metrics_snapshot s = full_snapshot();
        s.sampler_snapshots = 4;
        s.sampler_nvml_seconds_sum = 0.5;
        s.sampler_nvml_seconds_max = 0.25;
        s.sampler_cpu_seconds = 1.5;
        char *text = gw_metrics_render(&s, NULL);
        check_structure(text);
        assert_true(has_line(text, "# TYPE gpuward_sampler_snapshot_seconds summary"));
        assert_true(has_line(text, "gpuward_sampler_snapshot_seconds_sum 0.5"));
        assert_true(has_line(text, "gpuward_sampler_snapshot_seconds_count 4"));
        assert_true(has_line(text, "gpuward_sampler_snapshot_max_seconds 0.25"));
        assert_true(has_line(text, "# TYPE gpuward_sampler_cpu_seconds_total counter"));
        assert_true(has_line(text, "gpuward_sampler_cpu_seconds_total 1.5"));
        free(text);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(families_once_and_grouped), cmocka_unit_test(values_and_labels),
                cmocka_unit_test(invalid_metrics_omitted),   cmocka_unit_test(histogram_cumulative),
                cmocka_unit_test(numbers_parse_back),        cmocka_unit_test(empty_and_large),
                cmocka_unit_test(promtool_accepts),          cmocka_unit_test(sampler_figures),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
