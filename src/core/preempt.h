/* Preemption: which running jobs to stop so that a waiting job (or a booking) gets its GPUs.
 * Pure: the caller passes the running jobs, what the preemptor needs and the clock; no I/O.
 *
 * The rules (src/daemon/preempt/preempt.c carries them out, src/sim drives the same):
 *   - only jobs marked preemptible, not already being stopped, may be victims; one that
 *     cannot resume (no checkpoint to resume from, no resume command) only when the admin
 *     allows it (unresumable_ok), as it would lose everything it did;
 *   - for a waiting job, only victims of a lower priority than its own; for a booking,
 *     any priority (its window was promised), but only jobs on its GPUs;
 *   - a victim is stopped right after its next checkpoint, or when the grace is over; so
 *     victims are taken by the least work they would lose first: none for one whose next
 *     checkpoint, predicted from the spacing of its own (its epoch times), comes within the
 *     grace (a tenth of its spacing, at most half the grace, before its end), else what it did since its newest checkpoint (or its start) until the grace is
 *     over; then the soonest stop (the preemptor waits for it), then the lowest priority,
 *     then the latest start, until the GPUs free now plus theirs are enough; then any victim
 *     the others make unnecessary is let go again (the costliest first), so none is stopped
 *     for nothing;
 *   - a victim whose next checkpoint is predicted but not due within the grace is not taken
 *     for a waiting job (unless lossy_ok): its checkpoint comes within one spacing, and
 *     until then it goes on working, so waiting for it costs the preemptor time but wastes
 *     no work.  One whose checkpoint cannot be predicted (spacing unknown, overdue, or no
 *     grace to wait in) would lose work whenever it is taken: it is taken by its loss;
 *   - none at all when no such set frees enough GPUs: stopping some would help nobody. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"

#define GW_PREEMPT_MAX 64
/* A predicted checkpoint counts as due within the grace only this share of its spacing (1/N)
 * before the grace ends, and at most half the grace before. */
#define GW_PREEMPT_CKPT_SLACK_DIV 10

struct gw_preempt_running {
        int64_t id;
        uint64_t gpu_mask;
        int priority;
        gw_usec_t start_time; /* wall clock, the attempt's start */
        gw_usec_t ckpt_time; /* wall clock, its newest checkpoint in this attempt; 0 none */
        gw_usec_t ckpt_every; /* the usual time between its checkpoints (its own epochs); 0
                                 * not known: then its next one is not counted on */
        bool preemptible;
        bool resumable; /* its next attempt resumes from a checkpoint or its resume command */
        bool stopping; /* already being stopped (for whatever reason) */
};

struct gw_preempt_need {
        int ngpus; /* GPUs it needs, >= 1 */
        uint64_t allowed; /* the GPUs it may use; 0 = any */
        uint64_t free_mask; /* GPUs free now that it could use */
        int priority; /* a waiting job's; ignored for a booking */
        bool booking; /* a booking's window: victims of any priority */
        bool unresumable_ok; /* preempt_unresumable: a job that cannot resume may be a victim */
        gw_usec_t grace; /* preempt_grace: how long a victim's stop waits for its
                                 * checkpoint; 0: it is stopped at once */
        bool lossy_ok; /* a victim whose checkpoint is predicted but not yet due
                                 * within the grace may be taken too, losing work (a
                                 * booking's window, which cannot wait); else it is left
                                 * until its checkpoint comes due */
};

/* How many waiting jobs, in queue order, the shell offers victims in one pass (the first that
 * gets a plan preempts).  One whose victims' checkpoints are not due yet would otherwise hold
 * back every job behind it, which then waits too, or loses work it need not. */
#define GW_PREEMPT_PREEMPTORS 8

struct gw_preempt_victim {
        int64_t id;
        long lost_s; /* seconds since its newest checkpoint (or its start) */
        long expect_lost_s; /* the work it is expected to lose: 0 when its next checkpoint
                                 * is due within the grace */
        long stop_in_s; /* when its stop is expected: its next checkpoint, or the
                                 * grace's end */
};

struct gw_preempt_plan {
        struct gw_preempt_victim victims[GW_PREEMPT_MAX];
        size_t n; /* 0: preempt nothing */
        uint64_t mask; /* the GPUs the victims free */
};

/* The work a job loses if stopped at now: seconds since its newest checkpoint, or since its
 * start without one (never negative). */
long gw_preempt_lost_seconds(const struct gw_preempt_running *r, gw_usec_t now);

/* When r's next checkpoint is due (wall clock), from its newest one (or its start) and its
 * spacing; 0 when the spacing is not known or it is overdue (a run past its usual epoch
 * length may hang: its checkpoint is not counted on). */
gw_usec_t gw_preempt_next_ckpt(const struct gw_preempt_running *r, gw_usec_t now);

/* Decides the victims for need among running (n of them, any order, at most
 * GW_PREEMPT_MAX considered).  Returns 0 with ret filled (ret->n == 0: nobody), or -EINVAL
 * (NULL, ngpus < 1). */
int gw_preempt_decide(const struct gw_preempt_need *need, const struct gw_preempt_running *running, size_t n,
                      gw_usec_t now, struct gw_preempt_plan *ret);
