#include "api/metrics.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/job.h"

_Static_assert(_GW_JOB_STATE_MAX == ELEMENTSOF(((struct gw_metrics_snapshot *) 0)->jobs_by_state),
               "jobs_by_state must have one slot per job state");

struct out {
        char *p;
        size_t len, cap;
};

static void out_reserve(struct out *o, size_t more) {
        size_t want = o->len + more + 1;

        if (want <= o->cap)
                return;
        while (o->cap < want)
                o->cap = o->cap ? o->cap * 2 : 4096;
        o->p = gw_xrealloc(o->p, o->cap);
}

static void out_mem(struct out *o, const char *s, size_t n) {
        out_reserve(o, n);
        memcpy(o->p + o->len, s, n);
        o->len += n;
        o->p[o->len] = '\0';
}

static void out_str(struct out *o, const char *s) { out_mem(o, s, strlen(s)); }

__attribute__((format(printf, 2, 3))) static void out_printf(struct out *o, const char *fmt, ...) {
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        if (n < 0)
                abort(); /* only for an invalid format, a programming error */
        out_reserve(o, (size_t) n);
        va_start(ap, fmt);
        (void) vsnprintf(o->p + o->len, (size_t) n + 1, fmt, ap);
        va_end(ap);
        o->len += (size_t) n;
}

/* Label values may hold anything a user typed (job names, user names); the exposition
 * format only needs these three escaped. */
static void out_label_value(struct out *o, const char *v) {
        for (const char *c = v ? v : ""; *c; c++) {
                switch (*c) {
                case '\\':
                        out_str(o, "\\\\");
                        break;
                case '"':
                        out_str(o, "\\\"");
                        break;
                case '\n':
                        out_str(o, "\\n");
                        break;
                default:
                        out_mem(o, c, 1);
                }
        }
}

/* Shortest text that reads back as the same double, so 0.1 is "0.1" rather than
 * "0.10000000000000001", and the spellings Prometheus expects for the non-finite values. */
static void fmt_double(char buf[static 32], double v) {
        if (isnan(v)) {
                memcpy(buf, "NaN", 4);
                return;
        }
        if (isinf(v)) {
                memcpy(buf, v > 0 ? "+Inf" : "-Inf", 5);
                return;
        }
        (void) snprintf(buf, 32, "%.15g", v);
        if (strtod(buf, NULL) != v)
                (void) snprintf(buf, 32, "%.17g", v);
}

static void out_double(struct out *o, double v) {
        char buf[32];

        fmt_double(buf, v);
        out_str(o, buf);
}

static void family(struct out *o, const char *name, const char *type, const char *help) {
        out_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Label lists are written as name/value pairs terminated by NULL, so every series goes
 * through one escaping path. */
static void series_labels(struct out *o, const char *name, va_list ap) {
        const char *k;
        bool first = true;

        out_str(o, name);
        while ((k = va_arg(ap, const char *))) {
                const char *v = va_arg(ap, const char *);
                out_str(o, first ? "{" : ",");
                out_str(o, k);
                out_str(o, "=\"");
                out_label_value(o, v);
                out_str(o, "\"");
                first = false;
        }
        if (!first)
                out_str(o, "}");
        out_str(o, " ");
}

__attribute__((sentinel)) static void sample_u64(struct out *o, uint64_t v, const char *name, ...) {
        va_list ap;

        va_start(ap, name);
        series_labels(o, name, ap);
        va_end(ap);
        out_printf(o, "%" PRIu64 "\n", v);
}

__attribute__((sentinel)) static void sample_double(struct out *o, double v, const char *name, ...) {
        va_list ap;

        va_start(ap, name);
        series_labels(o, name, ap);
        va_end(ap);
        out_double(o, v);
        out_str(o, "\n");
}

/* ---- per GPU ---- */

enum gpu_metric { GPU_UTIL, GPU_MEM_USED, GPU_MEM_TOTAL, GPU_TEMP, GPU_POWER };

/* Each family's value is a field of struct gw_metrics_gpu: a count of bytes (uint64_t) or a
 * double. */
#define GPU_FIELD(f) offsetof(struct gw_metrics_gpu, f)
static const struct {
        const char *name, *help;
        size_t field;
        bool bytes;
} gpu_families[] = {
        [GPU_UTIL] = { "gpuward_gpu_utilization_ratio", "GPU utilization, 0 to 1.", GPU_FIELD(util_ratio), false },
        [GPU_MEM_USED] = { "gpuward_gpu_memory_used_bytes", "GPU memory in use.", GPU_FIELD(mem_used), true },
        [GPU_MEM_TOTAL] = { "gpuward_gpu_memory_total_bytes", "GPU memory installed.", GPU_FIELD(mem_total), true },
        [GPU_TEMP] = { "gpuward_gpu_temperature_celsius", "GPU temperature.", GPU_FIELD(temp_c), false },
        [GPU_POWER] = { "gpuward_gpu_power_watts", "GPU power draw.", GPU_FIELD(power_w), false },
};
#undef GPU_FIELD

static bool gpu_has(const struct gw_metrics_gpu *g, enum gpu_metric m) {
        switch (m) {
        case GPU_UTIL:
                return g->has_util;
        case GPU_MEM_USED:
        case GPU_MEM_TOTAL:
                return g->has_mem;
        case GPU_TEMP:
                return g->has_temp;
        case GPU_POWER:
                return g->has_power;
        }
        return false;
}

static void gpu_sample(struct out *o, const struct gw_metrics_gpu *g, enum gpu_metric m) {
        const char *name = gpu_families[m].name;
        const char *field = (const char *) g + gpu_families[m].field;
        char idx[24];

        (void) snprintf(idx, sizeof(idx), "%u", g->index);
        if (gpu_families[m].bytes)
                sample_u64(o, *(const uint64_t *) (const void *) field, name, "gpu", idx, "uuid", g->uuid, NULL);
        else
                sample_double(o, *(const double *) (const void *) field, name, "gpu", idx, "uuid", g->uuid, NULL);
}

/* The job as a person names it (the API's display_id): "8_2" for a task of array 8, else its id. */
static const char *display_id(char *buf, size_t n, int64_t id, int64_t array_job, int64_t array_index) {
        if (array_job > 0)
                (void) snprintf(buf, n, "%" PRId64 "_%" PRId64, array_job, array_index);
        else
                (void) snprintf(buf, n, "%" PRId64, id);
        return buf;
}

static void render_gpus(struct out *o, const struct gw_metrics_snapshot *s) {
        for (size_t m = 0; m < ELEMENTSOF(gpu_families); m++) {
                bool any = false;
                /* A family nobody can report is left out whole: HELP/TYPE with no samples
                 * would only advertise a metric that never has a value. */
                for (size_t i = 0; i < s->n_gpus && !any; i++)
                        any = gpu_has(&s->gpus[i], (enum gpu_metric) m);
                if (!any)
                        continue;
                family(o, gpu_families[m].name, "gauge", gpu_families[m].help);
                for (size_t i = 0; i < s->n_gpus; i++)
                        if (gpu_has(&s->gpus[i], (enum gpu_metric) m))
                                gpu_sample(o, &s->gpus[i], (enum gpu_metric) m);
        }
        if (!s->n_gpus)
                return;

        /* Per GPU, labels that never change: a job id or user among them would start a new
         * series with every job.  Who holds the GPU is the info metric below, present only
         * while a job does (as the DCGM exporter labels its per-GPU series). */
        family(o, "gpuward_gpu_allocated", "gauge", "1 when a job holds the GPU.");
        for (size_t i = 0; i < s->n_gpus; i++) {
                const struct gw_metrics_gpu *g = &s->gpus[i];
                char idx[24];
                (void) snprintf(idx, sizeof(idx), "%u", g->index);
                sample_u64(o, g->job_id ? 1 : 0, "gpuward_gpu_allocated", "gpu", idx, "uuid", g->uuid, NULL);
        }
        bool any = false;
        for (size_t i = 0; i < s->n_gpus && !any; i++)
                any = s->gpus[i].job_id != 0;
        if (any)
                family(o, "gpuward_gpu_job_info", "gauge", "1 for each GPU a job holds, with the job and its user.");
        for (size_t i = 0; i < s->n_gpus; i++) {
                const struct gw_metrics_gpu *g = &s->gpus[i];
                char idx[24], job[24], shown[48];
                if (!g->job_id)
                        continue;
                (void) snprintf(idx, sizeof(idx), "%u", g->index);
                (void) snprintf(job, sizeof(job), "%" PRId64, g->job_id);
                display_id(shown, sizeof shown, g->job_id, g->array_job, g->array_index);
                sample_u64(o, 1, "gpuward_gpu_job_info", "gpu", idx, "uuid", g->uuid, "job", job, "display_id", shown,
                           "user", g->user, NULL);
        }

        family(o, "gpuward_gpu_healthy", "gauge", "1 when the GPU is healthy and schedulable.");
        for (size_t i = 0; i < s->n_gpus; i++) {
                const struct gw_metrics_gpu *g = &s->gpus[i];
                char idx[24];
                bool ok = g->health && strcmp(g->health, "ok") == 0;
                (void) snprintf(idx, sizeof(idx), "%u", g->index);
                sample_u64(o, ok ? 1 : 0, "gpuward_gpu_healthy", "gpu", idx, "uuid", g->uuid, "health", g->health,
                           NULL);
        }
}

/* ---- per job GPU ---- */

static void render_jobs(struct out *o, const struct gw_metrics_snapshot *s) {
        static const char *const names[] = { "gpuward_job_gpu_utilization_ratio", "gpuward_job_gpu_memory_used_bytes" };
        static const char *const helps[] = { "Utilization of a GPU by a running job, 0 to 1.",
                                             "GPU memory used by a running job." };

        if (!s->n_jobs)
                return;
        for (size_t m = 0; m < ELEMENTSOF(names); m++) {
                family(o, names[m], "gauge", helps[m]);
                for (size_t i = 0; i < s->n_jobs; i++) {
                        const struct gw_metrics_job *j = &s->jobs[i];
                        char id[24], gpu[24], shown[48];
                        (void) snprintf(id, sizeof(id), "%" PRId64, j->id);
                        (void) snprintf(gpu, sizeof(gpu), "%u", j->gpu);
                        display_id(shown, sizeof shown, j->id, j->array_job, j->array_index);
                        if (m == 0)
                                sample_double(o, j->util_ratio, names[m], "job", id, "display_id", shown, "user",
                                              j->user, "name", j->name, "gpu", gpu, NULL);
                        else
                                sample_u64(o, j->mem_used, names[m], "job", id, "display_id", shown, "user", j->user,
                                           "name", j->name, "gpu", gpu, NULL);
                }
        }
}

/* Training awareness: one series per running job with an estimated end (jobs[] has one
 * entry per GPU). */
static void render_eta(struct out *o, const struct gw_metrics_snapshot *s) {
        bool any = false;
        for (size_t i = 0; i < s->n_jobs; i++) {
                const struct gw_metrics_job *j = &s->jobs[i];
                bool seen = false;
                for (size_t k = 0; k < i && !seen; k++)
                        seen = s->jobs[k].id == j->id;
                if (!j->has_eta || seen)
                        continue;
                if (!any)
                        family(o, "gpuward_job_eta_seconds", "gauge", "Seconds until a running job's estimated end.");
                any = true;
                char id[24], shown[48];
                (void) snprintf(id, sizeof(id), "%" PRId64, j->id);
                display_id(shown, sizeof shown, j->id, j->array_job, j->array_index);
                sample_double(o, j->eta_seconds, "gpuward_job_eta_seconds", "job", id, "display_id", shown, "user",
                              j->user, "name", j->name, NULL);
        }
}

/* ---- queue ---- */

static void render_queue(struct out *o, const struct gw_metrics_snapshot *s) {
        family(o, "gpuward_jobs", "gauge", "Jobs known to the daemon, by state.");
        for (int st = 0; st < _GW_JOB_STATE_MAX; st++)
                sample_u64(o, s->jobs_by_state[st], "gpuward_jobs", "state", gw_job_state_name((enum gw_job_state) st),
                           NULL);

        family(o, "gpuward_queue_wait_seconds", "histogram", "Time started jobs waited in the queue.");
        for (size_t b = 0; s->wait_bounds && b < GW_METRICS_WAIT_BUCKETS; b++) {
                char le[32];
                /* A +Inf bound here would duplicate the series written below. */
                if (!isfinite(s->wait_bounds[b]))
                        continue;
                fmt_double(le, s->wait_bounds[b]);
                sample_u64(o, s->wait_counts[b], "gpuward_queue_wait_seconds_bucket", "le", le, NULL);
        }
        sample_u64(o, s->wait_count, "gpuward_queue_wait_seconds_bucket", "le", "+Inf", NULL);
        sample_double(o, s->wait_sum, "gpuward_queue_wait_seconds_sum", NULL);
        sample_u64(o, s->wait_count, "gpuward_queue_wait_seconds_count", NULL);

        family(o, "gpuward_rogue_processes", "gauge", "Processes on GPUs that belong to no job.");
        sample_u64(o, s->rogue_processes, "gpuward_rogue_processes", NULL);
}

/* A family of one sample without labels. */
static void single(struct out *o, const char *name, const char *type, const char *help, uint64_t v) {
        family(o, name, type, help);
        sample_u64(o, v, name, NULL);
}

static void counter(struct out *o, const char *name, const char *help, uint64_t v) {
        single(o, name, "counter", help, v);
}

/* What watching the GPUs costs: a snapshot reads every GPU's utilisation, memory,
 * temperature, power and processes through NVML on the sampler's own thread. */
static void render_sampler(struct out *o, const struct gw_metrics_snapshot *s) {
        family(o, "gpuward_sampler_snapshot_seconds", "summary",
               "Time of the NVML calls of one snapshot of every GPU (sampler thread).");
        sample_double(o, s->sampler_nvml_seconds_sum, "gpuward_sampler_snapshot_seconds_sum", NULL);
        sample_u64(o, s->sampler_snapshots, "gpuward_sampler_snapshot_seconds_count", NULL);
        family(o, "gpuward_sampler_snapshot_max_seconds", "gauge", "The longest snapshot's NVML time so far.");
        sample_double(o, s->sampler_nvml_seconds_max, "gpuward_sampler_snapshot_max_seconds", NULL);
        family(o, "gpuward_sampler_cpu_seconds_total", "counter", "CPU time of the GPU sampler thread.");
        sample_double(o, s->sampler_cpu_seconds, "gpuward_sampler_cpu_seconds_total", NULL);
}

static void render_daemon(struct out *o, const struct gw_metrics_snapshot *s) {
        counter(o, "gpuward_reclaims_total", "Jobs whose GPUs were reclaimed.", s->reclaims);
        counter(o, "gpuward_retries_total", "Jobs retried after a failure.", s->retries);
        counter(o, "gpuward_leaks_total", "GPU memory leaks detected after jobs ended.", s->leaks);
        counter(o, "gpuward_xid_events_total", "Xid error events reported by the driver.", s->xid_events);
        counter(o, "gpuward_cache_hits_total", "Datasets found unchanged in the node's cache.", s->cache_hits);
        counter(o, "gpuward_cache_misses_total", "Datasets copied into the node's cache (new or changed).",
                s->cache_misses);
        counter(o, "gpuward_cache_bytes_copied_total", "Bytes copied into the node's dataset cache.",
                s->cache_bytes_copied);
        counter(o, "gpuward_cache_evictions_total", "Dataset cache entries evicted to make room.", s->cache_evictions);
        family(o, "gpuward_webhook_deliveries_total", "counter",
               "Job events sent to webhook URLs, by result (failed: after every try; dropped: the queue was full).");
        sample_u64(o, s->webhooks_sent, "gpuward_webhook_deliveries_total", "result", "sent", NULL);
        sample_u64(o, s->webhooks_failed, "gpuward_webhook_deliveries_total", "result", "failed", NULL);
        sample_u64(o, s->webhooks_dropped, "gpuward_webhook_deliveries_total", "result", "dropped", NULL);
        render_sampler(o, s);

        family(o, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
        sample_double(o, s->cpu_seconds, "process_cpu_seconds_total", NULL);
        single(o, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", s->resident_bytes);
        single(o, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", s->virtual_bytes);
        single(o, "process_open_fds", "gauge", "Number of open file descriptors.", s->open_fds);
        single(o, "process_max_fds", "gauge", "Maximum number of open file descriptors.", s->max_fds);
        family(o, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.");
        sample_double(o, s->start_time, "process_start_time_seconds", NULL);
}

char *gw_metrics_render(const struct gw_metrics_snapshot *s, size_t *ret_len) {
        struct out o = { 0 };

        out_reserve(&o, 0);
        o.p[0] = '\0';
        render_gpus(&o, s);
        render_jobs(&o, s);
        render_eta(&o, s);
        render_queue(&o, s);
        render_daemon(&o, s);
        if (ret_len)
                *ret_len = o.len;
        return o.p;
}
