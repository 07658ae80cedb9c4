/* Preemption (preempt.h): the shell around core/preempt.h.  On each loop iteration, when
 * no preemption is in flight, the queue's highest waiting job that only lacks GPUs is
 * offered the running jobs core/preempt.h chooses; each victim is told who takes its GPUs
 * and what it would lose, then
 *   - a recognised training run (--yolo) is stopped right after its next checkpoint
 *     (core/preempt_ckpt.h says when one counts; preempt_watch.h tells of its files' writes
 *     through inotify, so that the stop comes as it is written, not a sample later), or let
 *     finish when that checkpoint is its last epoch's, or stopped when preempt_grace is over
 *     without one;
 *   - another job gets its --signal (it may save), and SIGTERM when it has not ended within
 *     preempt_grace; without one, SIGTERM at once, SIGKILL after preempt_grace;
 * and recovery.c queues the attempt's end again, first of its priority, to resume from its
 * checkpoint (gw_preempt_take), without counting it as a retry.  A booking whose window has
 * started preempts the same way the preemptible jobs of others on its GPUs (they may run
 * there until then: gw_sharing_sched).  One preemption at a time: the next waiting job is
 * looked at once the victims have ended and the preemptor started, and until it starts the
 * GPUs they free are kept for it (gw_preempt_sched), so that a job that backfills onto the
 * first one freed does not make the preemption useless.
 *
 * Kept over a daemon restart (gw_preempt_restore): a victim's preemption is read back from
 * its attempt's events (who preempted it and since when, whether it was sent SIGTERM), and
 * its stop goes on where it was; the preempted attempts are counted again from their rows
 * (jobs_recover.c), and the preemptor named in the victims' events gets its reservation
 * again (rereserve). */
#include "daemon/preempt/preempt.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/parse.h"
#include "core/preempt.h"
#include "core/preempt_ckpt.h"
#include "daemon/daemon.h"
#include "daemon/preempt/preempt_watch.h"
#include "daemon/training/resume.h"
#include "daemon/sharing/sharing.h"
#include "daemon/training/training.h"
#include "daemon/life/jobs.h"
#include "daemon/life/queue.h"

/* The queue's first jobs are looked at for a preemptor: it is sorted by priority, so the
 * highest waiting one is among them unless all of those are held or wait for something else. */
#define PREEMPTOR_SCAN 256
/* A waiting victim's files are looked at this often besides when inotify tells of a change
 * (a watch that could not be added, a run folder found only after the ask). */
#define LOOK_EVERY GW_USEC_PER_SEC

struct gw_preempt_job {
        /* The preemptor's: the GPUs its victims free, kept from the others until it starts
         * (or until the victims' time is over), so that a victim that ends first does not
         * hand its GPU to a job that backfills and makes the preemption useless. */
        bool preemptor;
        uint64_t reserve;
        gw_usec_t reserve_until; /* monotonic */
        int attempt; /* the attempt being preempted */
        char by[160]; /* "job 12 (alice, priority 5)" */
        int64_t by_id; /* the preemptor's job id, 0 a booking */
        gw_usec_t after; /* training: only a checkpoint written later counts (wall) */
        gw_usec_t deadline; /* monotonic: preempt_grace over */
        gw_usec_t next_look; /* monotonic: its files looked at again (training) */
        struct gw_preempt_watch *watch; /* training: its run's checkpoint watch, NULL none */
        bool wait_ckpt; /* a training run: stop after its next checkpoint */
        bool finishing; /* its last epoch's checkpoint is written: let it end */
        bool signalled; /* its --signal was sent */
        bool stopped; /* SIGTERM sent (gw_job_terminate_within) */
};

/* A job's preemption state, kept by job id in d->state.preempt: NULL when it is not being
 * preempted nor preempting. */
static struct gw_preempt_job *pj(const struct gw_daemon *d, const struct gw_djob *dj) {
        return gw_keytab_get(&d->state.preempt, (uint64_t) dj->job->id);
}

static void pj_put(struct gw_daemon *d, struct gw_djob *dj, struct gw_preempt_job *p) {
        gw_preempt_job_free(d, dj);
        gw_keytab_put(&d->state.preempt, (uint64_t) dj->job->id, p);
}

void gw_preempt_job_free(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_preempt_job *p = gw_keytab_take(&d->state.preempt, (uint64_t) dj->job->id);
        if (p)
                gw_preempt_watch_free(p->watch);
        free(p);
}

static bool resumable(const struct gw_job *j) { return j->yolo || j->checkpoint || j->resume_cmd; }

/* The newest checkpoint of the attempt (wall clock), 0 none: the training watch's last.pt,
 * else the newest --checkpoint match written since the attempt started. */
static gw_usec_t ckpt_time(const struct gw_daemon *d, const struct gw_djob *dj) {
        bool settled;
        gw_usec_t t = gw_training_ckpt_time(d, dj, &settled);
        if (t || !dj->job->checkpoint)
                return t;
        char why[256];
        _cleanup_free_ char *path = gw_resume_find(d, dj->job, dj->job->start_time, why, sizeof why);
        struct stat st;
        return path && stat(path, &st) == 0
                       ? (gw_usec_t) st.st_mtim.tv_sec * GW_USEC_PER_SEC + st.st_mtim.tv_nsec / 1000
                       : 0;
}

/* The queued preemptor holding a reservation, NULL none; a reservation that is over (its
 * victims' time is up, or it left the queue's head) goes. */
static struct gw_djob *reserving(struct gw_daemon *d) {
        for (size_t i = 0; i < d->jobs.n_queue && i < PREEMPTOR_SCAN; i++) {
                struct gw_djob *dj = d->jobs.queue[i];
                const struct gw_preempt_job *p = pj(d, dj);
                if (!p || !p->preemptor)
                        continue;
                if (d->now < p->reserve_until)
                        return dj;
                gw_preempt_job_free(d, dj);
        }
        return NULL;
}

/* Set by gw_preempt_restore, once every job is back: the reservation is made again at the
 * next tick.  Daemon-wide, as the restart is (struct gw_daemon holds no feature's state). */
static bool rereserve_due;

/* After a restart (gw_preempt_restore): the victims' preemptor, still waiting, has the GPUs
 * they free kept for it again, until the last of them has had its time. */
static void rereserve(struct gw_daemon *d) {
        struct gw_djob *by = NULL;
        uint64_t mask = 0;
        gw_usec_t until = 0;
        for (size_t i = 0; i < d->jobs.n_running; i++) {
                const struct gw_djob *v = d->jobs.running[i];
                const struct gw_preempt_job *p = pj(d, v);
                if (!p || p->preemptor || !p->by_id)
                        continue;
                struct gw_djob *c = by ? by : gw_jobmap_get(&d->jobs.map, p->by_id);
                if (!c || c->job->id != p->by_id || c->job->state != GW_JOB_PENDING || pj(d, c))
                        continue;
                by = c;
                mask |= v->job->gpu_mask;
                gw_usec_t t = p->deadline + d->cfg->grace + 30 * GW_USEC_PER_SEC;
                until = t > until ? t : until;
        }
        if (!by)
                return;
        struct gw_preempt_job *bp = gw_xcalloc(1, sizeof *bp);
        pj_put(d, by, bp);
        bp->preemptor = true;
        bp->reserve = mask;
        bp->reserve_until = until;
        log_info("job %lld: the GPUs its victims free are kept for it again after the daemon's restart",
                 (long long) by->job->id);
}

static bool in_flight(struct gw_daemon *d) {
        bool any = false;
        for (size_t i = 0; i < d->jobs.n_running; i++) {
                struct gw_djob *dj = d->jobs.running[i];
                const struct gw_preempt_job *p = pj(d, dj);
                if (p && p->preemptor)
                        gw_preempt_job_free(d, dj); /* it started: its reservation is over */
                else if (p)
                        any = true;
        }
        return any || reserving(d);
}

/* The next waiting job from queue position *pos that only lacks GPUs: not held, not in a
 * retry's backoff, not in a booking (its GPUs are its booking's), its dependency met, not
 * waiting on a quota; *pos moved past it.  NULL none. */
static struct gw_djob *preemptor_from(const struct gw_daemon *d, size_t *pos) {
        for (; *pos < d->jobs.n_queue && *pos < PREEMPTOR_SCAN; ++*pos) {
                struct gw_djob *dj = d->jobs.queue[*pos];
                const struct gw_job *j = dj->job;
                /* A slice job waits for slices, which no whole-GPU job's stop frees. */
                if (j->state != GW_JOB_PENDING || j->not_before || j->booking_id || dj->dep != GW_DEP_SATISFIED ||
                    j->mig_profile)
                        continue;
                if (j->wait_reason == GW_REASON_NONE || j->wait_reason == GW_REASON_RESOURCES ||
                    j->wait_reason == GW_REASON_PRIORITY) {
                        ++*pos;
                        return dj;
                }
        }
        return NULL;
}

static uint64_t free_gpus(const struct gw_daemon *d) {
        uint64_t mask = 0;
        for (unsigned i = 0; i < d->host.n_gpus; i++) {
                const struct gw_dgpu *g = &d->host.gpus[i];
                if (!g->job_id && !g->drained && !g->mig) /* a GPU in MIG mode is never free whole */
                        mask |= UINT64_C(1) << i;
        }
        return mask;
}

/* The victim's "preempt" event and the reason of its stop start so, and say who preempted it
 * up to one of those: gw_preempt_restore reads them back by these words. */
#define VICTIM_START "preempted by "
#define BY_JOB ", which needs its GPUs"
#define BY_BOOKING ", whose window has started on its GPUs"
/* The victim's event when its last epoch's checkpoint is written (restore reads it back). */
#define FINISHING_START "its last epoch's checkpoint"

static void describe(const struct gw_job *j, char *buf, size_t n) {
        snprintf(buf, n, "job %lld (%s, priority %d)", (long long) j->id, j->user, j->priority);
}

/* SIGTERM now, SIGKILL after grace; the attempt's end comes to gw_preempt_take.  The stop is
 * recorded as none (PENDING): a daemon restarted before the end then classifies it as any
 * end and may retry it, rather than end a job that only gave way. */
static void stop(struct gw_daemon *d, struct gw_djob *dj, const char *what, gw_usec_t grace) {
        char reason[256];
        struct gw_preempt_job *p = pj(d, dj);
        snprintf(reason, sizeof reason, VICTIM_START "%s: %s", p->by, what);
        p->stopped = true;
        gw_job_terminate_within(d, dj, GW_JOB_PENDING, reason, grace);
}

/* The victim's checkpoint watch, made (or made again, for another run) once the training
 * watch knows its run folder; NULL until then. */
static struct gw_preempt_watch *watch_of(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_preempt_job *p = pj(d, dj);
        const char *run = gw_training_run_dir(d, dj);
        if (run && !gw_preempt_watch_is(p->watch, run)) {
                gw_preempt_watch_free(p->watch);
                p->watch = gw_preempt_watch_new(d, dj->job, run);
        }
        return p->watch;
}

/* At the ask: the checkpoint that counts already (its successor is the one to stop after),
 * 0 none; with no run folder known yet, the ask's time.  The watch is made first, so that a
 * checkpoint written while this looks is not missed. */
static gw_usec_t counted_now(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_preempt_watch *w = watch_of(d, dj);
        if (!w)
                return d->now_wall;
        struct gw_preempt_ckpt_look look;
        gw_preempt_watch_look(d, w, dj->job, gw_training_epochs_planned(d, dj), &look);
        return gw_preempt_ckpt_counted(&look);
}

/* Its last epoch's checkpoint is written: stopping it would save nothing (a resumed attempt
 * would find nothing to resume); it validates and ends, within its grace. */
static void let_finish(struct gw_daemon *d, struct gw_djob *dj, long epoch) {
        struct gw_preempt_job *p = pj(d, dj);
        char msg[400];
        p->finishing = true;
        p->watch = gw_preempt_watch_free(p->watch);
        snprintf(msg, sizeof msg,
                 FINISHING_START " (epoch %ld) is written: it is let finish rather than stopped, "
                                 "then %s gets its GPUs (SIGTERM if it has not ended within its preempt_grace)",
                 epoch, p->by);
        (void) gw_store_job_event(d->store, dj->job->id, dj->job->state, "preempt", msg);
        log_info("job %lld: %s", (long long) dj->job->id, msg);
}

/* A training victim's look at its run (on inotify's word when event, else when due): stopped
 * once its next checkpoint counts (core/preempt_ckpt.h).  Whether it was stopped; *ret_next:
 * when to look again (monotonic). */
static bool ckpt_step(struct gw_daemon *d, struct gw_djob *dj, bool event, gw_usec_t *ret_next) {
        struct gw_preempt_job *p = pj(d, dj);
        *ret_next = GW_USEC_INFINITY;
        if (p->finishing)
                return false;
        if (!event && d->now < p->next_look) {
                *ret_next = p->next_look;
                return false;
        }
        p->next_look = d->now + LOOK_EVERY;
        *ret_next = p->next_look;
        struct gw_preempt_watch *w = watch_of(d, dj);
        if (!w)
                return false;
        struct gw_preempt_ckpt_look look;
        struct gw_preempt_ckpt_verdict v;
        gw_preempt_watch_look(d, w, dj->job, gw_training_epochs_planned(d, dj), &look);
        if (gw_preempt_ckpt_judge(&look, p->after, d->now_wall, &v) < 0)
                return false;
        if (v.act == GW_PREEMPT_CKPT_FINISHING) {
                let_finish(d, dj, v.epoch);
                *ret_next = GW_USEC_INFINITY;
                return false;
        }
        if (v.act == GW_PREEMPT_CKPT_WAIT) {
                gw_usec_t at = v.recheck ? d->now + (v.recheck - d->now_wall) : GW_USEC_INFINITY;
                if (at < p->next_look)
                        p->next_look = *ret_next = at;
                return false;
        }
        char what[96];
        if (v.epoch > 0)
                snprintf(what, sizeof what, "stopped right after its checkpoint of epoch %ld", v.epoch);
        else
                snprintf(what, sizeof what, "stopped right after its checkpoint");
        p->watch = gw_preempt_watch_free(p->watch);
        stop(d, dj, what, d->cfg->grace);
        return true;
}

void gw_preempt_ready(struct gw_daemon *d) {
        if (!gw_preempt_watch_drain())
                return;
        /* Stopping one leaves it in running[] until it exits: the array is stable here. */
        for (size_t i = 0; i < d->jobs.n_running; i++) {
                struct gw_djob *dj = d->jobs.running[i];
                struct gw_preempt_job *p = pj(d, dj);
                gw_usec_t next;
                if (p && !p->preemptor && p->wait_ckpt && !p->stopped && !dj->terminating)
                        (void) ckpt_step(d, dj, true, &next);
        }
}

/* Tells the victim and the preemptor (by_job; NULL for a booking, by_what names it), then asks
 * the victim to give way. */
static void begin(struct gw_daemon *d, struct gw_djob *dj, const char *by_what, const struct gw_djob *by_job,
                  long lost_s) {
        struct gw_job *j = dj->job;
        struct gw_preempt_job *p = gw_xcalloc(1, sizeof *p);
        pj_put(d, dj, p);
        p->attempt = j->attempt;
        p->by_id = by_job ? by_job->job->id : 0;
        snprintf(p->by, sizeof p->by, "%s", by_what);
        p->deadline = d->now + d->cfg->preempt_grace;
        p->wait_ckpt = j->yolo;
        if (p->wait_ckpt)
                p->after = counted_now(d, dj);
        char grace[32], how[200], msg[600], victim[160];
        gw_format_duration(d->cfg->preempt_grace, grace, sizeof grace);
        if (p->wait_ckpt)
                snprintf(how, sizeof how, "it stops right after its next checkpoint (at most %s from now)", grace);
        else if (j->warn_signal)
                snprintf(how, sizeof how, "SIG%s to its main process now, SIGTERM if it has not ended within %s",
                         gw_signal_name(j->warn_signal), grace);
        else
                snprintf(how, sizeof how, "SIGTERM now, SIGKILL %s later", grace);
        snprintf(msg, sizeof msg,
                 VICTIM_START "%s%s; %lds of work since its checkpoint would be lost now; %s; then "
                              "it waits first of its priority and resumes",
                 p->by, by_job ? BY_JOB : BY_BOOKING, lost_s, how);
        (void) gw_store_job_event(d->store, j->id, j->state, "preempt", msg);
        log_info("job %lld: %s", (long long) j->id, msg);
        gw_job_log_note(d, dj, msg);
        describe(j, victim, sizeof victim);
        snprintf(msg, sizeof msg, "preempting %s for its GPUs (%lds of its work since its checkpoint at stake)", victim,
                 lost_s);
        if (by_job) {
                (void) gw_store_job_event(d->store, by_job->job->id, by_job->job->state, "preempt", msg);
                log_info("job %lld: %s", (long long) by_job->job->id, msg);
        } else
                log_info("%s: %s", by_what, msg);
        if (p->wait_ckpt)
                return;
        if (!j->warn_signal) {
                stop(d, dj, "SIGTERM", d->cfg->preempt_grace);
                return;
        }
        int r = d->exec->signal(d, dj, j->warn_signal, GW_EXEC_SIGNAL_MAIN);
        p->signalled = r == 0;
        if (r < 0) /* nobody to warn: stop it as one without --signal */
                stop(d, dj, "its --signal could not be sent; SIGTERM", d->cfg->preempt_grace);
}

/* A victim on its way: stopped after its checkpoint, or when its grace is over. */
static gw_usec_t advance(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_preempt_job *p = pj(d, dj);
        if (p->stopped || dj->terminating)
                return GW_USEC_INFINITY; /* its end comes; a stop of another's (a cancel) wins */
        gw_usec_t next = GW_USEC_INFINITY;
        if (p->wait_ckpt && ckpt_step(d, dj, false, &next))
                return GW_USEC_INFINITY;
        if (d->now < p->deadline)
                return next < p->deadline ? next : p->deadline;
        char grace[32], what[96];
        gw_format_duration(d->cfg->preempt_grace, grace, sizeof grace);
        snprintf(what, sizeof what, "%s over without %s; SIGTERM", grace,
                 p->finishing   ? "its end after its last epoch"
                 : p->wait_ckpt ? "a new checkpoint"
                                : "its end after its --signal");
        stop(d, dj, what, d->cfg->grace);
        return GW_USEC_INFINITY;
}

static size_t running_in(const struct gw_daemon *d, struct gw_preempt_running *r, struct gw_djob **djs) {
        size_t n = 0;
        for (size_t i = 0; i < d->jobs.n_running && n < GW_PREEMPT_MAX; i++) {
                struct gw_djob *dj = d->jobs.running[i];
                const struct gw_job *j = dj->job;
                /* A slice job's stop frees no GPU whole: never a victim for one. */
                if (!gw_config_job_preemptible(d->cfg, j) || dj->terminating || j->start_time <= 0 || j->mig_profile)
                        continue;
                djs[n] = dj;
                r[n++] = (struct gw_preempt_running){
                        .id = j->id,
                        .gpu_mask = j->gpu_mask,
                        .priority = j->priority,
                        .start_time = j->start_time,
                        .preemptible = true,
                        .resumable = resumable(j),
                };
        }
        return n;
}

/* core/preempt.h's choice, first without the checkpoints' times: whether enough GPUs can be
 * freed does not depend on them, and a pass that preempts nobody (most) looks at no file.
 * *looked: the times are in r already (one look serves every preemptor of a pass).  0 with
 * plan, or -ENOENT: nobody (now). */
static int choose(const struct gw_daemon *d, const struct gw_preempt_need *need, struct gw_preempt_running *r,
                  struct gw_djob **djs, size_t n, bool *looked, struct gw_preempt_plan *plan) {
        if (!*looked && (gw_preempt_decide(need, r, n, d->now_wall, plan) < 0 || !plan->n))
                return -ENOENT;
        for (size_t i = 0; i < n && !*looked; i++) {
                r[i].ckpt_time = ckpt_time(d, djs[i]);
                r[i].ckpt_every = gw_training_ckpt_every(d, djs[i]);
        }
        *looked = true;
        return gw_preempt_decide(need, r, n, d->now_wall, plan) < 0 || !plan->n ? -ENOENT : 0;
}

static void start_all(struct gw_daemon *d, const struct gw_preempt_plan *plan, const struct gw_preempt_running *r,
                      struct gw_djob **djs, size_t n, const char *what, const struct gw_djob *by) {
        for (size_t v = 0; v < plan->n; v++)
                for (size_t i = 0; i < n; i++)
                        if (r[i].id == plan->victims[v].id)
                                begin(d, djs[i], what, by, plan->victims[v].lost_s);
}

/* A booking whose window has started gets its GPUs back from the preemptible jobs that ran
 * on them until then (the scheduler lets only those start on GPUs booked later).  Whether
 * one began. */
static bool for_bookings(struct gw_daemon *d) {
        const struct gw_sharing *s = d->sharing;
        for (size_t b = 0; s && b < s->n_bookings; b++) {
                const struct gw_store_booking *bk = &s->bookings[b];
                /* Its end by the clock, not only by its state: the calendar's tick that ends it
                 * may come a moment after a job was let onto its GPUs at its end. */
                if (bk->state != GW_BOOKING_ACTIVE || !bk->gpu_mask || d->now_wall >= bk->end)
                        continue;
                uint64_t others = 0, own = 0, usable = 0;
                for (size_t i = 0; i < d->jobs.n_running; i++) {
                        const struct gw_job *j = d->jobs.running[i]->job;
                        *(j->booking_id == bk->id ? &own : &others) |= j->gpu_mask & bk->gpu_mask;
                }
                if (!others)
                        continue;
                for (unsigned i = 0; i < d->host.n_gpus; i++)
                        if (!d->host.gpus[i].drained)
                                usable |= UINT64_C(1) << i;
                struct gw_preempt_running r[GW_PREEMPT_MAX];
                struct gw_djob *djs[GW_PREEMPT_MAX];
                size_t n = running_in(d, r, djs);
                for (size_t i = 0; i < n; i++) /* its own jobs are where they belong */
                        r[i].preemptible = djs[i]->job->booking_id != bk->id;
                struct gw_preempt_need need = {
                        .ngpus = __builtin_popcountll(bk->gpu_mask & usable),
                        .allowed = bk->gpu_mask,
                        .free_mask = (free_gpus(d) | own) & bk->gpu_mask,
                        .booking = true,
                        .unresumable_ok = d->cfg->preempt_unresumable,
                        .lossy_ok = true, /* its window was promised */
                        .grace = d->cfg->preempt_grace,
                };
                struct gw_preempt_plan plan;
                bool looked = false;
                if (choose(d, &need, r, djs, n, &looked, &plan) < 0)
                        continue;
                char what[160];
                snprintf(what, sizeof what, "booking %lld (%s)", (long long) bk->id, bk->user);
                start_all(d, &plan, r, djs, n, what, NULL);
                return true;
        }
        return false;
}

/* The GPUs the preemptor may take by the bookings' calendar (0: any), as the scheduling
 * filter will let it (gw_sharing_sched): stopping jobs on others would serve nobody.  false:
 * none now. */
static bool preemptor_allowed(struct gw_daemon *d, const struct gw_job *j, uint64_t *ret) {
        *ret = 0;
        if (!d->sharing || !d->sharing->n_bookings)
                return true;
        struct calendar_view v;
        struct gw_calendar_gpus g;
        struct gw_sched_job sj = { .id = j->id, .ngpus = j->ngpus, .time_limit = j->time_limit };
        gw_calendar_view(d, &v);
        if (gw_calendar_gpus_at(&v.in, d->now_wall, &g) == 0)
                gw_calendar_limit_job(&g, gw_sched_mask_first(d->host.n_gpus), d->now_wall, &sj);
        gw_calendar_view_free(&v);
        *ret = sj.allowed;
        return !sj.none_allowed;
}

/* Whether a lower-priority preemptible job runs at all: the cheap test before any plan. */
static bool any_below(const struct gw_daemon *d, int priority) {
        for (size_t i = 0; i < d->jobs.n_running; i++)
                if (d->jobs.running[i]->job->priority < priority &&
                    gw_config_job_preemptible(d->cfg, d->jobs.running[i]->job))
                        return true;
        return false;
}

/* Victims for by (a waiting job), begun, and its reservation made.  Whether it had any.  A
 * victim whose checkpoint (from its own epoch times) is due within the grace goes first; one
 * whose checkpoint is predicted later is left until it is due (lossy_ok false: it loses
 * nothing then); one whose checkpoint cannot be predicted is taken by the work it loses. */
static bool preempt_for(struct gw_daemon *d, struct gw_djob *by, struct gw_preempt_running *r, struct gw_djob **djs,
                        size_t n, bool *looked) {
        const struct gw_job *pj = by->job;
        struct gw_preempt_need need = { .ngpus = pj->ngpus,
                                        .free_mask = free_gpus(d),
                                        .priority = pj->priority,
                                        .unresumable_ok = d->cfg->preempt_unresumable,
                                        .grace = d->cfg->preempt_grace };
        struct gw_preempt_plan plan;
        if (!preemptor_allowed(d, pj, &need.allowed) || choose(d, &need, r, djs, n, looked, &plan) < 0)
                return false;
        char what[160];
        describe(pj, what, sizeof what);
        start_all(d, &plan, r, djs, n, what, by);
        gw_preempt_job_free(d, by);
        struct gw_preempt_job *bp = gw_xcalloc(1, sizeof *bp);
        pj_put(d, by, bp);
        bp->preemptor = true;
        bp->reserve = plan.mask | need.free_mask;
        /* The victims have preempt_grace, then the stop's own grace; a little more for their
         * ends to be told. */
        bp->reserve_until = d->now + d->cfg->preempt_grace + d->cfg->grace + 30 * GW_USEC_PER_SEC;
        return true;
}

/* The first of the queue's GW_PREEMPT_PREEMPTORS waiting jobs that gets victims preempts: one
 * still waiting for its victims' checkpoints does not hold back those behind it. */
static void decide(struct gw_daemon *d) {
        struct gw_preempt_running r[GW_PREEMPT_MAX];
        struct gw_djob *djs[GW_PREEMPT_MAX];
        size_t n = 0, pos = 0;
        bool listed = false, looked = false;
        for (int t = 0; t < GW_PREEMPT_PREEMPTORS; t++) {
                struct gw_djob *by = preemptor_from(d, &pos);
                if (!by)
                        return;
                if (!any_below(d, by->job->priority))
                        continue;
                if (!listed) {
                        n = running_in(d, r, djs);
                        listed = true;
                }
                if (preempt_for(d, by, r, djs, n, &looked))
                        return;
        }
}

void gw_preempt_sched(struct gw_daemon *d, struct gw_sched_job *pending, size_t n) {
        if (!d->cfg->preemption || !gw_backend_preempts(d))
                return;
        const struct gw_djob *by = reserving(d);
        if (!by)
                return;
        uint64_t all = gw_sched_mask_first(d->host.n_gpus);
        const uint64_t reserve = pj(d, by)->reserve;
        for (size_t i = 0; i < n; i++) {
                if (d->jobs.queue[i] == by)
                        continue;
                uint64_t left = (pending[i].allowed ? pending[i].allowed : all) & ~reserve;
                if (left)
                        pending[i].allowed = left;
                else
                        pending[i].none_allowed = true;
        }
}

gw_usec_t gw_preempt_tick(struct gw_daemon *d) {
        if (!d->cfg->preemption || !gw_backend_preempts(d))
                return GW_USEC_INFINITY;
        gw_usec_t next = GW_USEC_INFINITY;
        if (rereserve_due) {
                rereserve_due = false;
                if (!reserving(d))
                        rereserve(d);
        }
        if (in_flight(d)) {
                for (size_t i = 0; i < d->jobs.n_running; i++) {
                        const struct gw_preempt_job *p = pj(d, d->jobs.running[i]);
                        if (p && !p->preemptor) {
                                gw_usec_t t = advance(d, d->jobs.running[i]);
                                if (t < next)
                                        next = t;
                        }
                }
                return next;
        }
        if (d->jobs.n_running && !for_bookings(d) && d->jobs.n_queue)
                decide(d);
        return next;
}

/* The victim ended by itself (exit 0) before it was stopped: it completed and was not
 * preempted; its GPUs are the preemptor's, kept for it (gw_preempt_sched) until it starts. */
static void tell_ended_first(struct gw_daemon *d, const struct gw_djob *dj) {
        const struct gw_preempt_job *p = pj(d, dj);
        const struct gw_job *j = dj->job;
        char msg[400], victim[160];
        snprintf(msg, sizeof msg,
                 "ended by itself (exit 0) while it was giving way to %s: it completed, not preempted; "
                 "its GPUs go to %s",
                 p->by, p->by);
        (void) gw_store_job_event(d->store, j->id, j->state, "preempt", msg);
        log_info("job %lld: %s", (long long) j->id, msg);
        const struct gw_djob *by = p->by_id ? gw_jobmap_get(&d->jobs.map, p->by_id) : NULL;
        if (!by || by->job->id != p->by_id || by->job->state != GW_JOB_PENDING)
                return;
        describe(j, victim, sizeof victim);
        snprintf(msg, sizeof msg,
                 "%s ended by itself before it had to stop (it completed): its GPUs are kept for "
                 "this job",
                 victim);
        (void) gw_store_job_event(d->store, by->job->id, by->job->state, "preempt", msg);
        log_info("job %lld: %s", (long long) by->job->id, msg);
}

bool gw_preempt_take(struct gw_daemon *d, struct gw_djob *dj, bool clean, char *why, size_t n) {
        struct gw_preempt_job *p = pj(d, dj);
        if (!p || p->preemptor)
                return false;
        bool ours = p->attempt == dj->job->attempt && (p->stopped || p->signalled || !clean) &&
                    (!dj->terminating || p->stopped);
        if (ours) {
                bool settled;
                gw_usec_t t = gw_training_ckpt_time(d, dj, &settled);
                if (!t)
                        t = ckpt_time(d, dj);
                struct gw_preempt_running r = { .start_time = dj->job->start_time, .ckpt_time = t };
                snprintf(why, n, "preempted by %s; %lds of work since its checkpoint lost", p->by,
                         gw_preempt_lost_seconds(&r, d->now_wall));
                gw_job_text_set(&dj->job->preempted_by, p->by); /* its waiting reason names it */
        } else if (clean && p->attempt == dj->job->attempt && !dj->terminating)
                tell_ended_first(d, dj);
        gw_preempt_job_free(d, dj);
        return ours;
}

/* Who preempted the victim, from its "preempt" event's message (begin), or -ENOENT: not a
 * victim's event. */
static int victim_by(const struct gw_job_event *ev, char *by, size_t n) {
        size_t head = strlen(VICTIM_START);
        if (strcmp(ev->kind, "preempt") || strncmp(ev->message, VICTIM_START, head))
                return -ENOENT;
        const char *end = strstr(ev->message, BY_JOB);
        if (!end)
                end = strstr(ev->message, BY_BOOKING);
        if (!end)
                return -ENOENT;
        snprintf(by, n, "%.*s", (int) (end - ev->message - head), ev->message + head);
        return 0;
}

void gw_preempt_restore(struct gw_daemon *d, struct gw_djob *dj, const struct gw_job_event *ev, size_t n) {
        struct gw_job *j = dj->job;
        if (!d->cfg->preemption || !gw_backend_preempts(d) || j->start_time <= 0)
                return;
        char by[sizeof((struct gw_preempt_job *) 0)->by] = "";
        gw_usec_t asked = 0;
        bool stopped = false, finishing = false;
        for (size_t i = 0; i < n; i++) {
                if (victim_by(&ev[i], by, sizeof by) == 0)
                        asked = ev[i].time;
                else if (asked && !strcmp(ev[i].kind, "terminate") &&
                         !strncmp(ev[i].message, VICTIM_START, strlen(VICTIM_START)))
                        stopped = true; /* stop() recorded it before its SIGTERM */
                else if (asked && !strcmp(ev[i].kind, "preempt") &&
                         !strncmp(ev[i].message, FINISHING_START, strlen(FINISHING_START)))
                        finishing = true; /* let_finish: not told twice */
        }
        if (!asked)
                return;
        gw_preempt_job_free(d, dj);
        struct gw_preempt_job *p = gw_xcalloc(1, sizeof *p);
        pj_put(d, dj, p);
        p->attempt = j->attempt;
        long long by_id;
        p->by_id = sscanf(by, "job %lld (", &by_id) == 1 && by_id > 0 ? by_id : 0;
        snprintf(p->by, sizeof p->by, "%s", by);
        gw_usec_t left = asked + d->cfg->preempt_grace - d->now_wall;
        p->deadline = d->now + (left > 0 ? left : 0);
        /* A checkpoint written after it was asked is newer than the ask itself. */
        p->after = asked;
        p->wait_ckpt = j->yolo;
        p->finishing = finishing;
        p->stopped = stopped;
        p->signalled = !stopped && !j->yolo && j->warn_signal;
        rereserve_due = true;
        char msg[400];
        if (stopped) {
                /* Its stop goes on as it was, its SIGKILL due when the first one said
                 * (recover_one: gw_job_stop_again), and its end is this preemption's. */
                gw_job_stop_restore(dj);
                snprintf(msg, sizeof msg,
                         "daemon restarted while it was being stopped, " VICTIM_START "%s: its end "
                         "queues it again first of its priority",
                         by);
        } else
                snprintf(msg, sizeof msg, "daemon restarted while it was giving way, " VICTIM_START "%s: %s", by,
                         p->wait_ckpt ? "it still stops right after its next checkpoint"
                                      : "it still has until its grace is over");
        log_info("job %lld: %s", (long long) j->id, msg);
}
