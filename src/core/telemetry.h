/* Telemetry as plain data: rings of recent samples, per-minute aggregates, per-job usage
 * statistics, and the attribution of GPU processes to jobs.  Pure: no I/O, no clock. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"

/* One sample of one GPU (or of one job on one GPU). */
struct gw_point {
        gw_usec_t t; /* wall clock */
        uint8_t util; /* percent, 0-100 */
        uint8_t mem_util; /* percent, 0-100 */
        uint64_t mem; /* bytes used */
};

/* A fixed-capacity ring; the oldest point is overwritten when full. */
struct gw_ring {
        struct gw_point *v;
        size_t cap, start, n;
};
void gw_ring_init(struct gw_ring *r, size_t cap); /* allocates; aborts on OOM */
void gw_ring_free(struct gw_ring *r);
void gw_ring_push(struct gw_ring *r, const struct gw_point *p);
/* Copies the points with t >= since, oldest first, at most max; returns how many. */
size_t gw_ring_since(const struct gw_ring *r, gw_usec_t since, struct gw_point *out, size_t max);
const struct gw_point *gw_ring_last(const struct gw_ring *r); /* NULL when empty */

/* A downsampled bucket (e.g. one minute): min / mean / max of util and memory. */
struct gw_agg {
        gw_usec_t bucket; /* start of the bucket (t rounded down to the width); 0 = empty */
        unsigned n;
        unsigned util_min, util_max;
        double util_sum;
        uint64_t mem_min, mem_max;
        double mem_sum;
};
/* Adds p to a's bucket of the given width.  When p belongs to a later bucket than a's, the
 * finished bucket is copied to *done, a restarts with p, and true is returned.  Points older
 * than a's bucket are ignored (false). */
bool gw_agg_add(struct gw_agg *a, gw_usec_t width, const struct gw_point *p, struct gw_agg *done);
double gw_agg_util_mean(const struct gw_agg *a);
uint64_t gw_agg_mem_mean(const struct gw_agg *a);

/* Utilisation statistics of one GPU over a job's life: exact percentiles from a histogram. */
struct gw_usage {
        uint64_t hist[101]; /* number of samples at each utilisation percent */
        uint64_t n;
        double util_sum;
        uint64_t mem_peak;
};
void gw_usage_add(struct gw_usage *u, unsigned util, uint64_t mem); /* util above 100 counts as 100 */
double gw_usage_mean(const struct gw_usage *u); /* 0 when empty */
/* Smallest u such that at least pct% of the samples are <= u (nearest rank); 0 when empty. */
unsigned gw_usage_percentile(const struct gw_usage *u, unsigned pct);

/* Attribution of a process seen on a GPU to a job. */
struct gw_proc_facts {
        unsigned pid;
        const char *cgroup; /* its cgroup path(s) from /proc/PID/cgroup, NULL if unknown */
        const unsigned *ancestors; /* ppid chain: parent, grandparent, ... up to 1 */
        size_t n_ancestors;
};
struct gw_job_anchor {
        int64_t job_id;
        unsigned shim_pid; /* the job's supervisor; every job process descends from it */
        const char *cgroup_name; /* last path component of its cgroup ("job-17.1"), or NULL */
};
/* The job a process belongs to: by cgroup name first (a path component equal to
 * cgroup_name), else by ancestry (the process or one of its ancestors is a job's shim);
 * 0 when it belongs to no job (a rogue process). */
int64_t gw_attribute(const struct gw_proc_facts *p, const struct gw_job_anchor *jobs, size_t n_jobs);
