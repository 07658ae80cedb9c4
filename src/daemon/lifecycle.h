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
 *                            it holds its GPUs; its launch comes next.
 *   GW_HOOK_SAMPLED          after each GPU sample is applied (dj NULL: every running job).
 *   GW_HOOK_ATTEMPT_ENDED    its supervisor told its end, or died; before the end is
 *                            classified and the retry is decided.
 *   GW_HOOK_JOB_ENDING       the job's final state is set in memory, not yet written.
 *   GW_HOOK_JOB_ENDED        the end is written (or kept to be written again); the job is
 *                            about to be forgotten.
 *
 * A retried attempt goes from ATTEMPT_ENDED back to ATTEMPT_STARTED; a job ended while
 * queued (cancelled, a dependency failed) gets JOB_ENDING and JOB_ENDED only.
 *
 * Besides, whenever the store has written one (the lifecycle is the store's observer):
 *
 *   GW_HOOK_RECORDED         an event of a job: a transition above, or one that changes no
 *                            state (a warning, a rogue process, a SIGKILL sent...); info->rec.
 *   GW_HOOK_BOOKED           a booking made or changed; info->booking.
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

enum gw_hook {
        GW_HOOK_JOB_SUBMITTED,
        GW_HOOK_ATTEMPT_STARTED,
        GW_HOOK_SAMPLED,
        GW_HOOK_ATTEMPT_ENDED,
        GW_HOOK_JOB_ENDING,
        GW_HOOK_JOB_ENDED,
        GW_HOOK_RECORDED,
        GW_HOOK_BOOKED,
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

/* What a hook tells besides the job: whether the job was running when it ended (its GPUs
 * are freed, its telemetry is final; false for the other hooks), the record written
 * (GW_HOOK_RECORDED only) and the booking (GW_HOOK_BOOKED only). */
struct gw_hook_info {
        enum gw_hook hook;
        bool was_running;
        const struct gw_hook_record *rec;
        const struct gw_store_booking *booking;
};

/* dj: the job (NULL for GW_HOOK_SAMPLED, GW_HOOK_RECORDED and GW_HOOK_BOOKED). */
typedef void gw_hook_fn(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info);

#define GW_HOOK_MAX_SUBSCRIBERS 8

struct gw_hooks {
        struct {
                gw_hook_fn *fn;
                const char *name; /* for the log and the tests: "training", "joblog", ... */
        } sub[_GW_HOOK_MAX][GW_HOOK_MAX_SUBSCRIBERS];
        size_t n[_GW_HOOK_MAX];
};

/* Adds fn to hook's subscribers, after those already there.  Called at daemon start only;
 * more than GW_HOOK_MAX_SUBSCRIBERS on one hook is a programming error (asserted). */
void gw_lifecycle_subscribe(struct gw_hooks *h, enum gw_hook hook, const char *name, gw_hook_fn *fn);
/* Calls hook's subscribers in order. */
void gw_lifecycle_publish(struct gw_daemon *d, enum gw_hook hook, struct gw_djob *dj, bool was_running);
/* Makes the lifecycle the store's observer: from now on each job event and booking the
 * store writes is published (GW_HOOK_RECORDED, GW_HOOK_BOOKED).  _close: no more, at
 * shutdown, before the features that subscribe go away. */
void gw_lifecycle_open(struct gw_daemon *d);
void gw_lifecycle_close(struct gw_daemon *d);
/* lifecycle_features.c: every feature's subscriptions, in their documented order. */
void gw_lifecycle_subscribe_features(struct gw_hooks *h);
const char *gw_hook_name(enum gw_hook hook);
