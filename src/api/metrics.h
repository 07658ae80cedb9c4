/* Prometheus text exposition (format 0.0.4) of a snapshot of the daemon.  Pure: the daemon
 * fills the snapshot, this writes the text. */
#pragma once
#include <stddef.h>
#include <stdint.h>

struct gw_metrics_gpu {
        unsigned index;
        const char *uuid;
        const char *name;
        int has_util, has_mem, has_temp, has_power; /* validity: absent metrics are omitted */
        double util_ratio; /* 0..1 */
        uint64_t mem_used, mem_total;
        double temp_c;
        double power_w;
        int64_t job_id; /* 0 = not allocated */
        int64_t array_job; /* the job is a task of this array (0: none), */
        int64_t array_index; /* this one: its display_id is "8_2" */
        const char *user; /* of the job, "" if none */
        const char *health; /* "ok", "drained", "lost" */
};

struct gw_metrics_job {
        int64_t id;
        int64_t array_job; /* a task of this array (0: none), its index below */
        int64_t array_index;
        const char *user;
        const char *name;
        unsigned gpu; /* one series per job GPU */
        double util_ratio;
        uint64_t mem_used;
        int has_eta; /* an estimated end is known (training.c) */
        double eta_seconds; /* until then */
};

#define GW_METRICS_WAIT_BUCKETS 10
struct gw_metrics_snapshot {
        const struct gw_metrics_gpu *gpus;
        size_t n_gpus;
        const struct gw_metrics_job *jobs; /* running jobs, per GPU */
        size_t n_jobs;
        uint64_t jobs_by_state[8]; /* indexed by enum gw_job_state */
        /* Queue wait of started jobs: cumulative counts for the bucket bounds (seconds) below. */
        const double *wait_bounds; /* GW_METRICS_WAIT_BUCKETS upper bounds, ascending */
        uint64_t wait_counts[GW_METRICS_WAIT_BUCKETS]; /* cumulative, as Prometheus wants */
        uint64_t wait_count;
        double wait_sum;
        uint64_t rogue_processes;
        uint64_t reclaims, retries, leaks, xid_events;
        uint64_t webhooks_sent, webhooks_failed, webhooks_dropped; /* deliveries (URL x event) */
        /* The dataset cache: datasets found unchanged, copied (new or changed), their bytes,
         * entries evicted for room. */
        uint64_t cache_hits, cache_misses, cache_bytes_copied, cache_evictions;
        /* The GPU sampler: snapshots taken, their NVML time (sum, longest) and the thread's CPU. */
        uint64_t sampler_snapshots;
        double sampler_nvml_seconds_sum, sampler_nvml_seconds_max, sampler_cpu_seconds;
        /* process_* of the daemon itself */
        double cpu_seconds;
        uint64_t resident_bytes, virtual_bytes;
        uint64_t open_fds, max_fds;
        double start_time; /* Unix seconds */
};

/* Writes the exposition text; returns a malloc'ed NUL-terminated string (aborts on OOM). */
char *gw_metrics_render(const struct gw_metrics_snapshot *s, size_t *ret_len);
