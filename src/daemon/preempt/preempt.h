/* Preemption (preempt.c): under the `preemption` setting, a preemptible running job is
 * stopped for a booking whose window has started on its GPUs, or for a waiting job of a
 * higher priority that cannot start otherwise, and queued again first of its priority to
 * resume.  The choice of victims is core/preempt.h's. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "base/time.h"

struct gw_daemon;
struct gw_djob;
struct gw_job_event;
struct gw_sched_job;

/* Each loop iteration: carries on the preemptions in flight (a victim's checkpoint reached,
 * its grace over), and decides new ones for the queue's highest waiting job when none is in
 * flight.  Returns the next deadline (monotonic) or GW_USEC_INFINITY. */
gw_usec_t gw_preempt_tick(struct gw_daemon *d);

/* The checkpoint watch's inotify descriptor is readable (GW_SRC_PREEMPT): a victim waiting
 * for its checkpoint is stopped now if it was just written. */
void gw_preempt_ready(struct gw_daemon *d);

/* Recovery, when dj's attempt ended: whether it ended because it was preempted (clean: it
 * exited 0 by itself before it was asked to stop, and then it was not).  When so, what to
 * tell into why (n bytes: "preempted by job 12 (alice, priority 5); 3s of work since its
 * checkpoint lost") and the preemption is over for that attempt. */
bool gw_preempt_take(struct gw_daemon *d, struct gw_djob *dj, bool clean, char *why, size_t n);

/* A scheduling pass's filter: while a preemption is in flight, the GPUs its victims free are
 * kept for its preemptor. */
void gw_preempt_sched(struct gw_daemon *d, struct gw_sched_job *pending, size_t n);

/* A restarted daemon, a running job's attempt's events read back (ev, n): its preemption in
 * progress, if it was a victim, goes on (its stop, when it was sent SIGTERM, too). */
void gw_preempt_restore(struct gw_daemon *d, struct gw_djob *dj, const struct gw_job_event *ev, size_t n);

/* Frees dj's preemption state (the job let go). */
void gw_preempt_job_free(struct gw_daemon *d, struct gw_djob *dj);
