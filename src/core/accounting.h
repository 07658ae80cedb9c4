/* Accounting: who used how many GPU-hours over a window, how well, and how their jobs ended
 * (product: "per user efficiency report").  Pure: the daemon hands each job in. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"
#include "core/job.h"

/* One job as accounting sees it. */
struct gw_acct_job {
        uint32_t uid;
        const char *user;
        enum gw_job_state state;
        unsigned ngpus;
        gw_usec_t start, end; /* wall clock; end 0: still running */
        double util_mean; /* its GPUs' mean utilisation, %; < 0 when not measured */
        double share; /* > 0: a job on MIG slices, counted as the GPUs they make up
                               * (1g.10gb of an A100 is 1/7: core/migplace.h) instead of ngpus */
};

struct gw_acct_user {
        uint32_t uid;
        char user[64];
        unsigned jobs; /* that ran inside the window */
        unsigned by_state[_GW_JOB_STATE_MAX]; /* how they stand or ended */
        double gpu_hours; /* inside the window */
        double measured_gpu_hours, util_weighted; /* util_mean x GPU-hours of measured jobs */
        double reclaimed_gpu_hours; /* of jobs that ended RECLAIMED */
};

struct gw_acct {
        gw_usec_t since, until;
        struct gw_acct_user *users; /* malloc'ed */
        size_t n, cap;
};

/* Counts j when it ran inside [a->since, a->until]: its GPU-hours are the part inside. */
void gw_acct_add(struct gw_acct *a, const struct gw_acct_job *j);
/* Users by GPU-hours, most first (then by name). */
void gw_acct_sort(struct gw_acct *a);
/* GPU-hour weighted mean utilisation of the user's measured jobs; < 0 when none was. */
double gw_acct_util(const struct gw_acct_user *u);
void gw_acct_free(struct gw_acct *a);
