/* Every feature's subscription to the lifecycle's hooks (lifecycle.h), in one place and in
 * the order they run.  The order is the order these side effects had when the lifecycle
 * called each feature by name, and some of it matters; each hook says why below. */
#include "daemon/cache/cache.h"
#include "daemon/daemon.h"
#include "daemon/base/fairshare.h"
#include "daemon/life/lifecycle.h"
#include "daemon/notify/notify.h"
#include "daemon/observe/observe.h"
#include "daemon/preempt/preempt.h"
#include "daemon/publish/publish.h"
#include "daemon/sharing/sharing.h"
#include "daemon/training/training.h"
#include "daemon/http/web.h"
#include "daemon/http/api.h"
#include "daemon/joblog/joblog.h"
#include "daemon/life/jobs.h"
#include "daemon/life/queue.h"
#include "daemon/reclaim/reclaim_watch.h"
#include "daemon/scratch/scratch.h"
#include "daemon/recovery/recovery.h"

/* Submission checks */

static int reclaim_check(struct gw_daemon *d, struct gw_job *j, size_t ahead, struct gw_submit_error *err) {
        (void) ahead;
        return gw_reclaim_check_submit(d, j, err); /* the idle profile the user may choose */
}

/* GW_HOOK_JOB_SUBMITTED */

static void cache_submitted(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_cache_job_queued(d, dj); /* its --dataset's copy begins while it waits */
}

/* GW_HOOK_JOB_RECOVERED */

static void cache_recovered(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_cache_job_recovered(d, dj); /* the copy it reads stays pinned */
}

/* GW_HOOK_ATTEMPT_STARTED, GW_HOOK_ATTEMPT_ADOPTED */

static void sharing_limit(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_sharing_job_limit(d, dj); /* the time limit from the recorded start, or the booking's end */
}

static void observe_placed(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_observe_job_placed(d, dj);
}

static void scratch_started(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_scratch_attempt_started(d, dj); /* its folder, a retry's run restored into it */
}

static void scratch_recovered(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_scratch_job_recovered(d, dj);
}

static void scratch_attempt_ended(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_scratch_attempt_ended(d, dj); /* the rest synced back, the folder removed */
}

static void scratch_freed(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_scratch_job_freed(d, dj);
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

static void recovery_attempt_ended(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        gw_recovery_attempt_ended(d, dj, info->end->lost, info->end->status, info->end->end_time, info->end->why);
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

static void publish_ended(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_publish_job_ended(d, dj); /* --publish: its run's copy is queued */
}

static void api_ended(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_api_resume_waiters(d, dj);
}

/* GW_HOOK_JOB_RECOVERED */

static void observe_recovered(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) d;
        gw_observe_faults_restore(dj, info->events, info->n_events);
}

static void training_recovered(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        gw_training_leak_restore(d, dj, info->events, info->n_events); /* also from its recorded stop alone */
}

static void reclaim_recovered(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        gw_reclaim_idle_restore(d, dj, info->events, info->n_events); /* the idle window, a warning given */
}

static void sharing_recovered(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        gw_sharing_warned_restore(d, dj, info->events, info->n_events);
}

static void preempt_recovered(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        gw_preempt_restore(d, dj, info->events, info->n_events); /* a victim's stop, before its end is told */
}

/* GW_HOOK_ATTEMPT_LAUNCHING */

static void observe_launching(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_observe_job_started(d, dj->job); /* the queue wait's histogram */
}

/* GW_HOOK_ATTEMPT_REQUEUED, GW_HOOK_JOB_FREED */

static void observe_forget(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_jobtel_free(d, dj);
}

static void reclaim_freed(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_reclaim_forget(d, dj);
}

static void preempt_freed(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_preempt_job_free(d, dj);
}

static void cache_freed(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_cache_job_freed(d, dj);
}

static void sharing_freed(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_sharing_forget(d, dj);
}

static void fair_freed(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_fair_forget(d, dj);
}

static void api_freed(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_api_forget_waiters(d, dj);
}

static void joblog_freed(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_joblog_forget(d, dj);
}

static void training_freed(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        (void) info;
        gw_training_forget(d, dj);
}

/* GW_HOOK_LOG_LINE */

static void reclaim_log_line(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        gw_reclaim_log_line(d, dj, info->line);
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
        gw_notify_job(d->notify, r->id,
                      r->job   ? r->job
                      : active ? active->job
                               : NULL,
                      r->state, r->kind, r->message, d->now_wall);
}

static void events_booked(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        gw_events_booking(d, info->booking);
}

void gw_lifecycle_subscribe_features(struct gw_hooks *h) {
        /* A submission's checks, after the lifecycle's own (the host, the user, the job's
         * fields), in the order they had: the quotas and the booking, then the dependency
         * (the lifecycle's own, between them, so that a job refused for more than one reason
         * is told the same one), then the idle profile, then the model store --publish needs. */
        gw_lifecycle_subscribe_check(h, "sharing", gw_sharing_check_submit);
        gw_lifecycle_subscribe_check(h, "dependency", gw_job_check_dependency);
        gw_lifecycle_subscribe_check(h, "reclaim", reclaim_check);
        gw_lifecycle_subscribe_check(h, "cache", gw_cache_check_submit);
        gw_lifecycle_subscribe_check(h, "publish", gw_publish_check_submit); /* a model store */
        gw_lifecycle_subscribe_check(h, "scratch", gw_scratch_check_submit); /* a scratch_dir */

        /* A --dataset's copy starts as soon as the job is queued: it costs no GPU, and the
         * sooner it starts the less the job waits once GPUs free up.  The event stream and
         * the webhooks hear of a submission when its record is written (GW_HOOK_RECORDED). */
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_SUBMITTED, "cache", cache_submitted);

        /* A scheduling pass: what bookings and quotas let each pending job use. */
        gw_lifecycle_subscribe_sched(h, "sharing", gw_sharing_sched);
        /* Then preemption: the GPUs its victims free wait for its preemptor. */
        gw_lifecycle_subscribe_sched(h, "preempt", gw_preempt_sched);
        /* Then the cache: a job whose dataset is not staged yet waits (Staging), unless
         * something above holds it already. */
        gw_lifecycle_subscribe_sched(h, "cache", gw_cache_sched);

        /* The attempt's limit first, before anything reads it (the jobs' tick, the calendar,
         * a time limit's warning); then the job's rogue neighbours are told in its events
         * with its start, in the same transaction. */
        gw_lifecycle_subscribe(h, GW_HOOK_ATTEMPT_STARTED, "sharing", sharing_limit);
        gw_lifecycle_subscribe(h, GW_HOOK_ATTEMPT_STARTED, "observe", observe_placed);
        /* Its node-local folder before its launch reads GPUWARD_SCRATCH; a retry's run is
         * restored into it first (waited for: the command resumes from it at once). */
        gw_lifecycle_subscribe(h, GW_HOOK_ATTEMPT_STARTED, "scratch", scratch_started);

        /* At a restart, what each feature kept in memory about a running attempt, from its
         * events: the GPU faults (the classifier's), a leak (a retry's), the booking's
         * warning (not given twice), a preemption in progress (a victim's stop goes on, its
         * end is told as preempted); the order they had, none reads another's.  Once the
         * executor adopted it, its limit as at its start. */
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_RECOVERED, "observe", observe_recovered);
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_RECOVERED, "training", training_recovered);
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_RECOVERED, "sharing", sharing_recovered);
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_RECOVERED, "reclaim", reclaim_recovered);
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_RECOVERED, "preempt", preempt_recovered);
        /* Its dataset's copy is pinned again before the first tick trashes the versions
         * nobody pins and before any copy may evict it. */
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_RECOVERED, "cache", cache_recovered);
        /* Its attempt's folder again, before its end may be told: recovery then maps the run
         * found there to its copy in the shared folder. */
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_RECOVERED, "scratch", scratch_recovered);
        gw_lifecycle_subscribe(h, GW_HOOK_ATTEMPT_ADOPTED, "sharing", sharing_limit);

        /* The start is committed: its wait counts (the wait histogram of /metrics). */
        gw_lifecycle_subscribe(h, GW_HOOK_ATTEMPT_LAUNCHING, "observe", observe_launching);

        /* Reclaim first: a stop it decides on this sample is what training's watch then
         * sees (the job is stopping), and it does not stop the job a second time for a
         * leak.  The log watch last: it only tells, it changes no job. */
        gw_lifecycle_subscribe(h, GW_HOOK_SAMPLED, "reclaim", reclaim_sampled);
        gw_lifecycle_subscribe(h, GW_HOOK_SAMPLED, "training", training_sampled);
        gw_lifecycle_subscribe(h, GW_HOOK_SAMPLED, "joblog", joblog_sampled);

        /* Recovery last: it classifies the end and decides the retry, which may queue the
         * job again as its next attempt; before it, training's last look at this attempt's
         * results.csv (the times of its last rows) and the log watch's count of what the log
         * cap dropped are taken while the job's run, attempt and log are still this
         * attempt's. */
        gw_lifecycle_subscribe(h, GW_HOOK_ATTEMPT_ENDED, "training", training_attempt_ended);
        gw_lifecycle_subscribe(h, GW_HOOK_ATTEMPT_ENDED, "joblog", joblog_attempt_ended);
        /* Fair share charges the attempt from its start, which a retry resets. */
        gw_lifecycle_subscribe(h, GW_HOOK_ATTEMPT_ENDED, "fairshare", fair_attempt_ended);
        /* A --scratch attempt's last checkpoints reach the shared folder before recovery
         * looks there for the one to resume from. */
        gw_lifecycle_subscribe(h, GW_HOOK_ATTEMPT_ENDED, "scratch", scratch_attempt_ended);
        gw_lifecycle_subscribe(h, GW_HOOK_ATTEMPT_ENDED, "recovery", recovery_attempt_ended);

        /* Telemetry is summarised into the job before its end is written: the summary goes
         * into the same row, and a daemon that goes down just after still has it. */
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_ENDING, "observe", observe_ending);

        /* After the end is written: the booking's last use follows the job's recorded end;
         * the API's waiters (a cancel with ?wait) last, as they read the job back from the
         * store, where its end now is. */
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_ENDED, "sharing", sharing_ended);
        /* Publishing reads the run training found (freed only with the job); its outcome is an
         * event of its own, later. */
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_ENDED, "publish", publish_ended);
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_ENDED, "api", api_ended);

        /* A retry: the failed attempt's telemetry goes (the next one's starts afresh).  The
         * job let go: each feature frees its own state of it, in the order they had; none
         * reads another's. */
        gw_lifecycle_subscribe(h, GW_HOOK_ATTEMPT_REQUEUED, "observe", observe_forget);
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_FREED, "observe", observe_forget);
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_FREED, "reclaim", reclaim_freed);
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_FREED, "training", training_freed);
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_FREED, "preempt", preempt_freed);
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_FREED, "cache", cache_freed);
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_FREED, "scratch", scratch_freed);
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_FREED, "joblog", joblog_freed);
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_FREED, "sharing", sharing_freed);
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_FREED, "fairshare", fair_freed);
        gw_lifecycle_subscribe(h, GW_HOOK_JOB_FREED, "api", api_freed);

        /* A line of gpuward's for a job's log (training's leak): the idle watch writes it, as
         * it must know those bytes are not the job's. */
        gw_lifecycle_subscribe(h, GW_HOOK_LOG_LINE, "reclaim", reclaim_log_line);

        /* Every job event once written, transitions or not (a warning, a rogue process...):
         * the dashboard's stream, then the webhooks (queued to their own thread; neither
         * reads what the other did, the order is the one they had). */
        gw_lifecycle_subscribe(h, GW_HOOK_RECORDED, "events", events_recorded);
        gw_lifecycle_subscribe(h, GW_HOOK_RECORDED, "notify", notify_recorded);
        gw_lifecycle_subscribe(h, GW_HOOK_BOOKED, "events", events_booked);
}
