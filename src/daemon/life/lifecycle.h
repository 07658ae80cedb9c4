/* The lifecycle of a job: the one owner of its state transitions and of their durability,
 * and the hooks through which the features hear of them.
 *
 * Transitions (lifecycle.c, lifecycle_stop.c): submit (gw_job_record + gw_job_enqueue),
 * hold and release (gw_job_hold), the start's record (gw_job_start, undone by
 * gw_job_start_undo), a retry (gw_job_requeue), a stop (gw_job_terminate*, gw_job_cancel,
 * used for timeouts, reclaims and cancels), the end (gw_job_end*).  Each is written to the
 * store before it is acted on; when the store refuses one that must be recorded, the
 * transition undoes its own change in memory and returns -errno: the caller has nothing to
 * put back.
 *
 * Hooks, published in this order for an attempt:
 *
 *   GW_HOOK_JOB_SUBMITTED    the job is recorded and queued.
 *   GW_HOOK_ATTEMPT_STARTED  its start is recorded (inside the loop's batch: written with
 *                            it, undone by gw_job_start_undo if that is not committed) and
 *                            it holds its GPUs; its launch comes next.  Sharing first: the
 *                            attempt's limit (dj->limit_at) is set before anything reads it.
 *   GW_HOOK_ATTEMPT_LAUNCHING  its start is committed and the executor starts it next
 *                            (gw_job_launch): the wait it had is counted (observe).
 *   GW_HOOK_SAMPLED          after each GPU sample is applied (dj NULL: every running job).
 *   GW_HOOK_ATTEMPT_ENDED    its executor told its end (gw_exec_attempt_end), how in
 *                            info->end; recovery subscribes last: it classifies the end
 *                            and decides the retry, after the others' last looks.
 *   GW_HOOK_JOB_ENDING       the job's final state is set in memory, not yet written.
 *   GW_HOOK_JOB_ENDED        the end is written (or kept to be written again); the job is
 *                            about to be forgotten.
 *
 *   GW_HOOK_ATTEMPT_REQUEUED the attempt failed and the job is queued again for its retry
 *                            (gw_job_requeue, from recovery's ATTEMPT_ENDED), before the
 *                            retry is written: what was kept for the attempt alone goes
 *                            (its telemetry, observe).
 *   GW_HOOK_JOB_FREED        the daemon lets go of the job (a loop iteration after its end,
 *                            or at shutdown): each feature frees its state of it.
 *
 * A retried attempt goes from ATTEMPT_ENDED through ATTEMPT_REQUEUED back to
 * ATTEMPT_STARTED; a job ended while queued (cancelled, a dependency failed) gets JOB_ENDING,
 * JOB_ENDED and JOB_FREED only.
 *
 * At a restart (jobs_recover.c), for each job the store has as running:
 *
 *   GW_HOOK_JOB_RECOVERED    its current attempt's events were read back (info->events,
 *                            info->n_events; none when the store could not read them): each
 *                            feature rebuilds what the previous daemon kept in memory (GPU
 *                            faults, a leak, a booking's warning), before the executor is
 *                            asked to adopt it, as its end may be told at once.
 *   GW_HOOK_ATTEMPT_ADOPTED  the executor adopted it (still running) and it holds its GPUs
 *                            again: as at its start, its limit is set (sharing).
 *
 * Before any of them, a submission's checks (gw_lifecycle_subscribe_check): each feature's
 * refusal of a job (its quotas, its booking, its idle profile) at submit, in order.  And on
 * each scheduling pass, its filters (gw_lifecycle_subscribe_sched): what the bookings and
 * quotas let each pending job use, before the scheduler plans.
 *
 * Besides, whenever the store has written one (the lifecycle is the store's observer):
 *
 *   GW_HOOK_RECORDED         an event of a job: a transition above, or one that changes no
 *                            state (a warning, a rogue process, a SIGKILL sent...); info->rec.
 *   GW_HOOK_BOOKED           a booking made or changed; info->booking.
 *
 * And when a feature has a line of gpuward's for a running job's log (gw_lifecycle_log_line):
 *
 *   GW_HOOK_LOG_LINE         info->line (ending in '\n'): the idle watch appends it and counts
 *                            its bytes as gpuward's, not as the job's progress; nothing is
 *                            written for a job it does not watch.
 *
 * Subscribers of one hook run in the order they subscribed, and they subscribe in one
 * place, gw_lifecycle_subscribe_features (lifecycle_features.c), which says why that order.
 * A subscriber keeps its own state in its own struct; it reaches another feature only
 * through a narrow function of that feature's header, never through these hooks. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/jobrec.h"

struct gw_daemon;
struct gw_djob;
struct gw_store_booking;
struct gw_submit_error;
struct gw_sched_job;
struct gw_job_event;

enum gw_hook {
        GW_HOOK_JOB_SUBMITTED,
        GW_HOOK_ATTEMPT_STARTED,
        GW_HOOK_SAMPLED,
        GW_HOOK_ATTEMPT_ENDED,
        GW_HOOK_JOB_ENDING,
        GW_HOOK_JOB_ENDED,
        GW_HOOK_RECORDED,
        GW_HOOK_BOOKED,
        GW_HOOK_JOB_RECOVERED,
        GW_HOOK_ATTEMPT_ADOPTED,
        GW_HOOK_ATTEMPT_LAUNCHING,
        GW_HOOK_ATTEMPT_REQUEUED,
        GW_HOOK_JOB_FREED,
        GW_HOOK_LOG_LINE,
        _GW_HOOK_MAX,
};

/* A job event as the store wrote it (borrowed for the call).  job: the job's row as written
 * with it, NULL for an event alone (then the daemon's copy, if the job is active, is in
 * the map). */
struct gw_hook_record {
        int64_t id;
        const struct gw_job *job;
        enum gw_job_state state;
        const char *kind;
        const char *message;
};

/* How an attempt ended (GW_HOOK_ATTEMPT_ENDED): lost (no status known) or its wait status,
 * at end_time (the job's clock, jobclock.c). */
struct gw_hook_end {
        bool lost;
        int status;
        int64_t end_time;
        const char *why; /* lost: how the executor knows it (a Slurm NODE_FAIL); NULL: not told */
};

/* What a hook tells besides the job: whether the job was running when it ended (its GPUs
 * are freed, its telemetry is final; false for the other hooks), the record written
 * (GW_HOOK_RECORDED only), the booking (GW_HOOK_BOOKED only), the attempt's end
 * (GW_HOOK_ATTEMPT_ENDED only), its events (GW_HOOK_JOB_RECOVERED only) and a line for its
 * log (GW_HOOK_LOG_LINE only). */
struct gw_hook_info {
        enum gw_hook hook;
        bool was_running;
        const struct gw_hook_record *rec;
        const struct gw_store_booking *booking;
        const struct gw_hook_end *end;
        const struct gw_job_event *events;
        size_t n_events;
        const char *line;
};

/* dj: the job (NULL for GW_HOOK_SAMPLED, GW_HOOK_RECORDED and GW_HOOK_BOOKED). */
typedef void gw_hook_fn(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info);

/* A check of a submission, before anything is written: 0, or -errno with err filled (the
 * HTTP status, the field, why).  ahead: the user's jobs of the same batch (an array's tasks
 * one each), checked but not queued yet. */
typedef int gw_submit_check_fn(struct gw_daemon *d, struct gw_job *j, size_t ahead, struct gw_submit_error *err);
/* A filter of a scheduling pass: sets what each pending job may use (allowed, blocked GPUs:
 * bookings, quotas) before the scheduler plans (queue.c). */
typedef void gw_sched_filter_fn(struct gw_daemon *d, struct gw_sched_job *pending, size_t n);

#define GW_HOOK_MAX_SUBSCRIBERS 12

struct gw_hooks {
        struct {
                gw_hook_fn *fn;
                const char *name; /* for the log and the tests: "training", "joblog", ... */
        } sub[_GW_HOOK_MAX][GW_HOOK_MAX_SUBSCRIBERS];
        size_t n[_GW_HOOK_MAX];
        struct {
                gw_submit_check_fn *fn;
                const char *name;
        } check[GW_HOOK_MAX_SUBSCRIBERS];
        size_t n_check;
        struct {
                gw_sched_filter_fn *fn;
                const char *name;
        } sched[GW_HOOK_MAX_SUBSCRIBERS];
        size_t n_sched;
};

/* Adds fn to hook's subscribers, after those already there.  Called at daemon start only;
 * more than GW_HOOK_MAX_SUBSCRIBERS on one hook is a programming error (asserted). */
void gw_lifecycle_subscribe(struct gw_hooks *h, enum gw_hook hook, const char *name, gw_hook_fn *fn);
/* The checks of a submission, after the lifecycle's own (jobs_submit.c), in the order they
 * subscribed; the first refusal ends them: -EINVAL with err. */
void gw_lifecycle_subscribe_check(struct gw_hooks *h, const char *name, gw_submit_check_fn *fn);
int gw_lifecycle_check_submit(struct gw_daemon *d, struct gw_job *j, size_t ahead, struct gw_submit_error *err);
/* A scheduling pass's filters, in the order they subscribed. */
void gw_lifecycle_subscribe_sched(struct gw_hooks *h, const char *name, gw_sched_filter_fn *fn);
void gw_lifecycle_sched_filter(struct gw_daemon *d, struct gw_sched_job *pending, size_t n);
/* Calls hook's subscribers in order. */
void gw_lifecycle_publish(struct gw_daemon *d, enum gw_hook hook, struct gw_djob *dj, bool was_running);
/* GW_HOOK_ATTEMPT_ENDED with how it ended; GW_HOOK_JOB_RECOVERED with the attempt's events. */
void gw_lifecycle_publish_end(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_end *end);
void gw_lifecycle_log_line(struct gw_daemon *d, struct gw_djob *dj, const char *line);
void gw_lifecycle_publish_recovered(struct gw_daemon *d, struct gw_djob *dj, const struct gw_job_event *ev, size_t n);
/* Makes the lifecycle the store's observer: from now on each job event and booking the
 * store writes is published (GW_HOOK_RECORDED, GW_HOOK_BOOKED).  _close: no more, at
 * shutdown, before the features that subscribe go away. */
void gw_lifecycle_open(struct gw_daemon *d);
void gw_lifecycle_close(struct gw_daemon *d);
/* lifecycle_features.c: every feature's subscriptions, in their documented order. */
void gw_lifecycle_subscribe_features(struct gw_hooks *h);
const char *gw_hook_name(enum gw_hook hook);
