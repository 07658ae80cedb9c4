/* Preemption: which running jobs to stop so that a waiting job (or a booking) gets its GPUs.
 * Pure: the caller passes the running jobs, what the preemptor needs and the clock; no I/O.
 *
 * The rules (src/daemon/preempt.c carries them out, src/sim drives the same):
 *   - only jobs marked preemptible, not already being stopped, may be victims; one that
 *     cannot resume (no checkpoint to resume from, no resume command) only when the admin
 *     allows it (unresumable_ok), as it would lose everything it did;
 *   - for a waiting job, only victims of a lower priority than its own; for a booking,
 *     any priority (its window was promised), but only jobs on its GPUs;
 *   - victims are taken by the least work lost first (seconds since their newest
 *     checkpoint, else since their start), then the lowest priority, then the latest
 *     start, until the GPUs free now plus theirs are enough; then any victim the others
 *     make unnecessary is let go again (the costliest first), so none is stopped for nothing;
 *   - none at all when no such set frees enough GPUs: stopping some would help nobody. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"

#define GW_PREEMPT_MAX 64

struct gw_preempt_running {
        int64_t id;
        uint64_t gpu_mask;
        int priority;
        gw_usec_t start_time;   /* wall clock, the attempt's start */
        gw_usec_t ckpt_time;    /* wall clock, its newest checkpoint in this attempt; 0 none */
        bool preemptible;
        bool resumable;         /* its next attempt resumes from a checkpoint or its resume command */
        bool stopping;          /* already being stopped (for whatever reason) */
};

struct gw_preempt_need {
        int ngpus;              /* GPUs it needs, >= 1 */
        uint64_t allowed;       /* the GPUs it may use; 0 = any */
        uint64_t free_mask;     /* GPUs free now that it could use */
        int priority;           /* a waiting job's; ignored for a booking */
        bool booking;           /* a booking's window: victims of any priority */
        bool unresumable_ok;    /* preempt_unresumable: a job that cannot resume may be a victim */
};

struct gw_preempt_victim {
        int64_t id;
        long lost_s;            /* seconds since its newest checkpoint (or its start) */
};

struct gw_preempt_plan {
        struct gw_preempt_victim victims[GW_PREEMPT_MAX];
        size_t n;               /* 0: preempt nothing */
        uint64_t mask;          /* the GPUs the victims free */
};

/* The work a job loses if stopped at now: seconds since its newest checkpoint, or since its
 * start without one (never negative). */
long gw_preempt_lost_seconds(const struct gw_preempt_running *r, gw_usec_t now);

/* Decides the victims for need among running (n of them, any order, at most
 * GW_PREEMPT_MAX considered).  Returns 0 with ret filled (ret->n == 0: nobody), or -EINVAL
 * (NULL, ngpus < 1). */
int gw_preempt_decide(const struct gw_preempt_need *need, const struct gw_preempt_running *running, size_t n,
                      gw_usec_t now, struct gw_preempt_plan *ret);
