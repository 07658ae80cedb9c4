/* The rows accounting sums (GET /api/v1/usage): the jobs that ended since a time, with only
 * the columns it needs, so that a long window does not load every job's command line and
 * environment on the daemon's loop. */
#pragma once
#include <stdint.h>

#include "base/time.h"
#include "store/store.h"

struct gw_store_usage_row {
        uint32_t uid;
        const char *user; /* borrowed for the callback's length */
        int state; /* enum gw_job_state, a final one */
        int ngpus;
        gw_usec_t start, end; /* wall clock */
        const char *telemetry; /* the job's telemetry summary (JSON), or NULL */
        double mig_share; /* > 0: the GPUs its MIG slices made up (jobs.mig_share) */
};
typedef void (*gw_store_usage_cb)(const struct gw_store_usage_row *r, void *userdata);

/* Each job in a final state whose end_time is at or after ended_since.  0 or -errno. */
int gw_store_usage_rows(struct gw_store *s, gw_usec_t ended_since, gw_store_usage_cb cb, void *userdata);

/* One finished attempt, for fair share's usage (daemon/base/fairshare.c). */
struct gw_store_attempt_use {
        uint32_t uid;
        const char *user; /* borrowed for the callback's length */
        uint64_t gpu_mask; /* the GPUs it held */
        gw_usec_t start, end; /* wall clock */
};
typedef void (*gw_store_attempt_use_cb)(const struct gw_store_attempt_use *r, void *userdata);

/* Each recorded attempt (job_attempts) whose end_time is at or after ended_since, with its
 * job's user, oldest end first.  0 or -errno. */
int gw_store_attempt_uses(struct gw_store *s, gw_usec_t ended_since, gw_store_attempt_use_cb cb, void *userdata);
