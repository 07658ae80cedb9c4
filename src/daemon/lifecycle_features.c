/* Every feature's subscription to the lifecycle's hooks (lifecycle.h), in one place and in
 * the order they run.  The order is the order these side effects had when the lifecycle
 * called each feature by name, and some of it matters; each hook says why below. */
#include "daemon/daemon.h"
#include "daemon/fairshare.h"
#include "daemon/lifecycle.h"
#include "daemon/notify.h"
#include "daemon/observe.h"
#include "daemon/web.h"

/* GW_HOOK_ATTEMPT_STARTED */

static void observe_placed(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_observe_job_placed(d, dj);
}

/* GW_HOOK_SAMPLED */

static void reclaim_sampled(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) dj, (void) info;
        gw_reclaim_watch(d);
}

static void training_sampled(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) dj, (void) info;
        gw_training_watch(d); /* epochs, ETA, leaks, snapshots */
}

static void joblog_sampled(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) dj, (void) info;
        gw_joblog_watch(d);
}

/* GW_HOOK_ATTEMPT_ENDED */

static void training_attempt_ended(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_training_attempt_ended(d, dj); /* the times of its last results.csv rows */
}

static void joblog_attempt_ended(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_joblog_attempt_ended(d, dj);
}

static void fair_attempt_ended(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_fair_attempt_ended(d, dj); /* its GPU-hours, up to now, into its user's usage */
}

/* GW_HOOK_JOB_ENDING */

static void observe_ending(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        if (info->was_running)
                gw_observe_job_end(d, dj);
}

/* GW_HOOK_JOB_ENDED */

static void sharing_ended(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        if (info->was_running)
                gw_sharing_job_ended(d, dj->job);
}

static void api_ended(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) d, (void) info;
        gw_api_resume_waiters(dj);
}

/* GW_HOOK_RECORDED, GW_HOOK_BOOKED */

static void events_recorded(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        const struct gw_hook_record *r = info->rec;
        gw_events_job_recorded(d, r->id, r->job, r->state, r->kind, r->message);
}

static void notify_recorded(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        const struct gw_hook_record *r = info->rec;
        if (!d->notify)
                return;
        /* An event alone: the job as the daemon holds it, when it is active. */
        const struct gw_djob *active = r->job ? NULL : gw_jobmap_get(&d->jobs.map, r->id);
        gw_notify_job(d->notify, r->id, r->job ? r->job : active ? active->job : NULL, r->state, r->kind, r->message,
                      d->now_wall);
}

static void events_booked(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        gw_events_booking(d, info->booking);
}

void gw_lifecycle_subscribe_features(struct gw_hooks *h) {
        /* Nothing subscribes to GW_HOOK_JOB_SUBMITTED yet: the event stream and the webhooks
         * hear of a submission when its record is written (GW_HOOK_RECORDED, below). */

        /* The job's rogue neighbours are told in its events with its start, in the same
         * transaction. */
        gw_lifecycle_subscribe(h, GW_HOOK_ATTEMPT_STARTED, "observe", observe_placed);

        /* Reclaim first: a stop it decides on this sample is what training's watch then
         * sees (the job is stopping), and it does not stop the job a second time for a
         * leak.  The log watch last: it only tells, it changes no job. */
        gw_lifecycle_subscribe(h, GW_HOOK_SAMPLED, "reclaim", reclaim_sampled);
        gw_lifecycle_subscribe(h, GW_HOOK_SAMPLED, "training", training_sampled);
        gw_lifecycle_subscribe(h, GW_HOOK_SAMPLED, "joblog", joblog_sampled);

        /* Run before the end is classified and the retry decided (recovery.c), which may
         * queue the job again as its next attempt: training's last look at this attempt's
         * results.csv (the times of its last rows) and the log watch's count of what the log
         * cap dropped are taken while the job's run, attempt and log are still this
         * attempt's. */
        gw_lifecycle_subscribe(h, GW_HOOK_ATTEMPT_ENDED, "training", training_attempt_ended);
        gw_lifecycle_subscribe(h, GW_HOOK_ATTEMPT_ENDED, "joblog", joblog_attempt_ended);
        /* Fair share charges the attempt from its start, which a retry resets. */
        gw_lifecycle_subscribe(h, GW_HOOK_ATTEMPT_ENDED, "fairshare", fair_attempt_ended);

        /* Telemetry is summarised into the job before its end is written: the summary goes
         * into the same row, and a daemon that goes down just after still has it. */
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_ENDING, "observe", observe_ending);

        /* After the end is written: the booking's last use follows the job's recorded end;
         * the API's waiters (a cancel with ?wait) last, as they read the job back from the
         * store, where its end now is. */
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_ENDED, "sharing", sharing_ended);
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_ENDED, "api", api_ended);

        /* Every job event once written, transitions or not (a warning, a rogue process...):
         * the dashboard's stream, then the webhooks (queued to their own thread; neither
         * reads what the other did, the order is the one they had). */
        gw_lifecycle_subscribe(h, GW_HOOK_RECORDED, "events", events_recorded);
        gw_lifecycle_subscribe(h, GW_HOOK_RECORDED, "notify", notify_recorded);
        gw_lifecycle_subscribe(h, GW_HOOK_BOOKED, "events", events_booked);
}
