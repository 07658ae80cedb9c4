/* The scheduler: plain structs in, decisions out, the clock passed in.  No I/O.
 *
 * Policy: pending jobs in queue order (priority descending, then submission order; with fair
 * share, priority, then the user's fair-share factor, then submission order: core/fairshare.h);
 * the first job that cannot start becomes the head and gets a reservation at the earliest time
 * enough GPUs free up (from running jobs' time limits).  Later jobs may start now
 * (backfill) only when that cannot delay the head: they end before the head's reserved
 * start, or they use only GPUs the head's reservation does not need.  Among the GPUs a job
 * may take, those without a rogue process come first (lowest index first within each kind);
 * a job is still placed beside a rogue process when the clean ones are not enough, rather
 * than wait for a process gpuward cannot end (--gpu-mem keeps it off a GPU too full). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"
#include "core/job.h"

#define GW_SCHED_MAX_GPUS 64

struct gw_sched_gpu {
        int index; /* 0..63, the bit in a gpu mask */
        bool usable; /* healthy and not drained */
        uint64_t mem_total; /* bytes, 0 = unknown */
        uint64_t mem_free; /* bytes now, as NVML reports; used for --gpu-mem */
        int64_t job_id; /* job holding it, 0 if none */
        bool has_rogue; /* a process gpuward did not start uses it: jobs go to clean
                               * GPUs first, and here only when no clean GPU is left for them */
};

struct gw_sched_job {
        int64_t id;
        int priority; /* higher first */
        int ngpus; /* >= 1 */
        uint64_t gpu_mem; /* minimum free bytes per GPU, 0 = any */
        gw_usec_t time_limit; /* > 0 */
        bool held;
        bool backoff; /* waiting out a retry delay: like held, but reported as Backoff */
        enum gw_job_reason blocked; /* not NONE: the shell says it waits (Reservation, Quota) */
        uint64_t allowed; /* not 0: the only GPUs it may use (its booking's; or those free
                               * long enough before the next booking).  Such a job never
                               * becomes the head: it cannot hold back others. */
        bool none_allowed; /* no GPU may take it now (each is booked before it would end):
                               * it waits (RESERVATION) and never becomes the head.  A flag of
                               * its own, as allowed == 0 means any GPU and a 64-GPU host has
                               * no spare bit to stand for none. */
        bool booked_out; /* allowed was narrowed by others' bookings (gw_calendar_limit_job),
                               * not to its own booking's GPUs: when only that keeps it from
                               * GPUs free now, it waits for RESERVATION, not RESOURCES. */
        enum gw_dep_status dep;
        uint32_t fs_user; /* with fair share: its user's index in gw_sched_fair.factor */
        bool first; /* preempted: it goes before the others of its priority, whatever
                               * their fair-share factors (it had its turn already) */
};

struct gw_sched_running {
        int64_t id;
        uint64_t gpu_mask;
        gw_usec_t end; /* start + time limit, same clock as now */
};

struct gw_sched_input {
        const struct gw_sched_gpu *gpus;
        size_t n_gpus;
        const struct gw_sched_job *pending; /* in queue order */
        size_t n_pending;
        const struct gw_sched_running *running;
        size_t n_running;
};

/* Fair share's input to a plan (kept out of gw_sched_input, which callers fill by position):
 * one factor per user (gw_fs_factors(), each in [0, 1]); a pending job's fs_user indexes it. */
struct gw_sched_fair {
        const double *factor;
        size_t n;
};

struct gw_sched_start {
        int64_t job_id;
        uint64_t gpu_mask;
};

struct gw_sched_plan {
        struct gw_sched_start *starts; /* caller-allocated, capacity n_pending */
        size_t n_starts;
        enum gw_job_reason *reasons; /* caller-allocated, one per pending job, same order */
        gw_usec_t head_start; /* reserved start of the head job, or GW_USEC_INFINITY */
        int64_t head_job_id; /* 0 if every pending job could start */
        size_t *order; /* caller-allocated, capacity 2 * n_pending; needed
                                            * by gw_sched_plan_fair: the pending jobs' indexes
                                            * in the order they were planned (queue order) in
                                            * the first n_pending, the rest scratch */
};

/* Plans which pending jobs start now and on which GPUs; writes a wait reason for every
 * pending job (NONE for those that start).  Held jobs get HELD, unmet dependencies
 * DEPENDENCY, jobs that fit but yield to the head PRIORITY, jobs that could fit only with
 * a GPU that is not usable (drained, unhealthy) back DRAINED, the rest RESOURCES.
 * Jobs with dep == GW_DEP_NEVER are reported DEPENDENCY and never started (the daemon
 * ends them).  Returns 0, or -EINVAL for malformed input (a gpu index >= 64, ngpus < 1). */
int gw_sched_plan(const struct gw_sched_input *in, gw_usec_t now, struct gw_sched_plan *out);

/* gw_sched_plan with fair share: the pending jobs are planned by priority, then their user's
 * factor, then the order given (submission order), and the first that cannot start is the
 * head whose reservation backfill respects.  fair NULL is gw_sched_plan.  Also -EINVAL for
 * no out->order, a factor outside [0, 1] or an fs_user >= fair->n. */
int gw_sched_plan_fair(const struct gw_sched_input *in, const struct gw_sched_fair *fair, gw_usec_t now,
                       struct gw_sched_plan *out);

/* The queue order of in's pending jobs into order[0..n_pending-1] (indexes into pending):
 * the order given when fair is NULL, else priority, factor, order given.  order has room for
 * 2 * n_pending (the second half is the sort's scratch).  O(n log n), no allocation (what
 * `gpuward queue` will show).  Returns 0 or -EINVAL, as gw_sched_plan_fair. */
int gw_sched_order(const struct gw_sched_input *in, const struct gw_sched_fair *fair, size_t *order);

/* Lowest-index set of n GPUs from mask; 0 if fewer than n bits are set. */
uint64_t gw_sched_pick(uint64_t mask, int n);

/* GPUs 0..n-1: every bit for n >= 64, where one shift would be undefined. */
uint64_t gw_sched_mask_first(size_t n);

/* Checks the GPUs given to a plan: each index a bit of a mask (0..63) and none twice;
 * -EINVAL otherwise.  On success the bits of all of them into *ret_present and of the
 * usable ones into *ret_usable (either may be NULL). */
int gw_sched_gpus_masks(const struct gw_sched_gpu *gpus, size_t n, uint64_t *ret_present, uint64_t *ret_usable);
