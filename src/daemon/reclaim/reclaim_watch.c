/* Idle-GPU reclamation in the daemon: after every GPU sample, for
 * each running job, gather what gw_reclaim_decide needs, decide, and carry it out:
 *   WARN      -> a "warn" job event with the evidence, and a line in the job's own log;
 *   TERMINATE -> gw_job_terminate(RECLAIMED, evidence): SIGTERM to the whole job, SIGKILL
 *                after the profile's grace (jobs.c's timer); the job then ends through
 *                recovery.c as RECLAIMED and its GPUs go to the next job at once;
 *   KILL      -> jobs.c's SIGKILL path, asked again (at most every KILL_REARM);
 *   a warning withdrawn -> an "unwarn" event and a line in the log.
 * The decision is pure (core/reclaim.h); what survives between samples is struct gw_rwatch.
 * Instants are on the job's clock (jobclock.c), read once per sample: a step of the wall clock
 * neither ages nor rejuvenates a job; file mtimes are shifted onto it (reclaim_watch.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/text.h"
#include "daemon/life/migslots.h"
#include "daemon/reclaim/reclaim_watch.h"
#include "daemon/training/training.h"
#include "daemon/base/jobclock.h"
#include "daemon/life/jobs.h"

#define KILL_REARM (5 * GW_USEC_PER_SEC)
/* The "idle" event that records an idle window starts so; gw_reclaim_idle_restore reads the
 * window's start back from the number after it: seconds since the attempt's start on the
 * job's clock, which a daemon restart within one boot does not move (jobclock.c). */
#define IDLE_TOLD_START "GPUs idle since "
#define IDLE_TOLD_MAX (60 * GW_USEC_PER_SEC)
/* core/reclaim.c's evidence of a WARN starts so (the time limit's "warn" events do not). */
#define RECLAIM_WARN_START "WARNING idle for "

struct gw_rwatch *gw_rwatch_free(struct gw_rwatch *w) {
        if (!w)
                return NULL;
        gw_probe_close(&w->probe);
        gw_rwatch_files_free(w);
        free(w);
        return NULL;
}

/* A job's watch, kept by job id in d->state.rwatch; NULL until it is first sampled. */
static struct gw_rwatch *rwatch_of(const struct gw_daemon *d, const struct gw_djob *dj) {
        return gw_keytab_get(&d->state.rwatch, (uint64_t) dj->job->id);
}

/* Makes w dj's watch, in place of the one it had. */
static void rwatch_put(struct gw_daemon *d, struct gw_djob *dj, struct gw_rwatch *w) {
        gw_rwatch_free(gw_keytab_take(&d->state.rwatch, (uint64_t) dj->job->id));
        gw_keytab_put(&d->state.rwatch, (uint64_t) dj->job->id, w);
}

void gw_reclaim_forget(struct gw_daemon *d, struct gw_djob *dj) {
        gw_rwatch_free(gw_keytab_take(&d->state.rwatch, (uint64_t) dj->job->id));
}

void gw_reclaim_log_line(struct gw_daemon *d, struct gw_djob *dj, const char *line) {
        struct gw_rwatch *w = rwatch_of(d, dj);
        if (w) /* its bytes are gpuward's, not the job's progress */
                (void) gw_rwatch_log_append(dj->job, w, line);
}

const char *gw_reclaim_results_path(const struct gw_daemon *d, const struct gw_djob *dj) {
        const struct gw_rwatch *w = rwatch_of(d, dj);
        return w ? w->results_path : NULL;
}

static struct gw_rwatch *rwatch_new(const struct gw_job *j) {
        struct gw_rwatch *w = gw_xcalloc(1, sizeof *w);
        w->attempt = j->attempt;
        w->start_time = j->start_time;
        w->results_rows = -1;
        gw_probe_init(&w->probe);
        return w;
}

/* A fresh watch for the job's current attempt: a retry starts with a new log and a new clock. */
static struct gw_rwatch *rwatch_for(struct gw_daemon *d, struct gw_djob *dj, gw_usec_t now) {
        const struct gw_job *j = dj->job;
        struct gw_rwatch *w = rwatch_of(d, dj);
        if (w && w->attempt == j->attempt && w->start_time == j->start_time)
                return w;
        w = rwatch_new(j);
        /* A job found running at a restart with no idle window recorded (busy, or idle for
         * less than idle_told_after, when the daemon stopped) gets a fresh window: what its GPUs
         * did while the daemon was down is unknown, and files alone never reclaim a job.  One
         * with a recorded window had its watch made by gw_reclaim_idle_restore. */
        if (j->start_time < d->loop.started_at)
                w->state.last_active = now;
        rwatch_put(d, dj, w);
        return w;
}

/* The rule for the time the daemon was down (why it may count as idle): the window is taken up
 * only when the previous daemon had recorded it (GPUs idle, no progress, for idle_told_after)
 * and no later event said it was over.  The restarted daemon then decides as usual, so the gap
 * counts as idle only if the evidence on both sides of it agrees: the first sample after the
 * restart must find the GPUs idle and the job neither validating nor saving (else the window
 * ends at once), and the files whose mtimes span the gap (the log, results.csv, the progress
 * file, the checkpoints) must not have moved in it (else the window starts at their change).
 * What the GPUs did in between is not known; a job that computed for the whole gap without
 * writing a byte and stopped just before the restart is the case this rule gets wrong, and it
 * still gets the warning and the warn period before it is stopped.  Starting a full window
 * at every restart instead gets every hung job wrong, by one idle timeout per restart. */
void gw_reclaim_idle_restore(struct gw_daemon *d, struct gw_djob *dj, const struct gw_job_event *ev, size_t n) {
        const struct gw_job *j = dj->job;
        long long secs = -1;
        gw_usec_t warned = 0;
        for (size_t i = 0; i < n; i++) {
                const char *m = ev[i].message ? ev[i].message : "";
                if (!strcmp(ev[i].kind, "warn") && !strncmp(m, RECLAIM_WARN_START, strlen(RECLAIM_WARN_START)))
                        warned = ev[i].time;
                else if (!strcmp(ev[i].kind, "unwarn"))
                        warned = 0;
                if (strcmp(ev[i].kind, "idle"))
                        continue;
                secs = -1;
                warned = 0;
                const char *open = strchr(m, '(');
                if (strncmp(m, IDLE_TOLD_START, strlen(IDLE_TOLD_START)) || !open ||
                    sscanf(open, "(%llds into this attempt", &secs) != 1 || secs < 0)
                        secs = -1;
        }
        if (secs < 0 || j->start_time <= 0)
                return;
        struct gw_rwatch *w = rwatch_new(j);
        w->state.last_active = j->start_time + (gw_usec_t) secs * GW_USEC_PER_SEC;
        /* The warning's event is on the wall clock, the window on the job's: they differ only
         * by a step of the wall clock since the attempt began.  A warning cannot have come
         * before the window was idle_timeout old, whatever a step back says; a later instant
         * (a step forward) only delays the stop. */
        const struct gw_reclaim_policy *p = gw_reclaim_policy_of(d, j);
        if (warned > 0 && p)
                w->state.warned_at = warned > w->state.last_active + p->idle_timeout
                                             ? warned
                                             : w->state.last_active + p->idle_timeout;
        w->idle_told = true;
        w->restored = true;
        rwatch_put(d, dj, w);
}

/* The job's GPUs in this sample: its own utilisation (its processes' per-process figures
 * where NVML has them, else the device's), and whether a process that is not the job's
 * (another job's, a rogue one) holds memory or computes there: that counts as busy (never
 * reclaim a job because someone else uses its GPU). */
static size_t job_gpus(const struct gw_daemon *d, const struct gw_job *j, struct gw_reclaim_gpu *out) {
        size_t n = 0;
        for (unsigned gi = 0; gi < d->host.n_gpus && gi < 64; gi++) {
                if (!(j->gpu_mask & (UINT64_C(1) << gi)))
                        continue;
                const struct gw_dgpu *g = &d->host.gpus[gi];
                struct gw_reclaim_gpu *r = &out[n++];
                *r = (struct gw_reclaim_gpu){ .index = (int) gi };
                unsigned util = 0;
                bool per_proc = false;
                for (size_t k = 0; k < g->n_procs; k++) {
                        const struct gw_dproc *p = &g->procs[k];
                        if (p->job_id != j->id) {
                                r->other_busy |= (p->mem != UINT64_MAX && p->mem > 0) || p->sm_util > 0;
                                continue;
                        }
                        if (p->sm_util >= 0) {
                                util += (unsigned) p->sm_util;
                                per_proc = true;
                        }
                }
                if (per_proc) {
                        r->util_valid = true;
                        r->util = util > 100 ? 100 : util;
                } else if (g->sampled && g->sample.health == GW_GPU_OK && (g->sample.valid & GW_GPU_HAS_UTIL)) {
                        r->util_valid = true;
                        r->util = g->sample.util_gpu > 100 ? 100 : g->sample.util_gpu;
                }
        }
        return n;
}

/* Whose process pid on GPU g is: the GPU's own list attributes its slices' processes too. */
static bool proc_is_jobs(const struct gw_dgpu *g, unsigned pid, int64_t job_id) {
        for (size_t k = 0; k < g->n_procs; k++)
                if (g->procs[k].pid == pid)
                        return g->procs[k].job_id == job_id;
        /* Not attributed (yet): on the job's own slice, most likely the job's.  Counting it so
         * keeps the job, which is the safe side. */
        return true;
}

/* A slice job's slices in this sample: the job's processes on each, and GPM's SM activity
 * where the GPU offers it (otherwise NVML has no utilisation for a slice; core/reclaim.h).  A slice missing from the layout is one whose processes are
 * unknown. */
static size_t job_slices(const struct gw_daemon *d, const struct gw_job *j, struct gw_reclaim_gpu *out, size_t max) {
        size_t n = 0;
        for (unsigned gi = 0; gi < d->host.n_gpus && gi < 64; gi++) {
                const struct gw_dgpu *g = &d->host.gpus[gi];
                if (!(j->gpu_mask & (UINT64_C(1) << gi)) || !g->mig)
                        continue;
                for (size_t k = 0; k < g->mig->n && k < GW_GPU_MIG_MAX && n < max; k++) {
                        const struct gw_gpu_mig *m = &g->mig->dev[k];
                        if (gw_mig_slice_job(d, m->uuid) != j->id)
                                continue;
                        struct gw_reclaim_gpu *r = &out[n++];
                        *r = (struct gw_reclaim_gpu){ .index = (int) gi,
                                                      .mig = true,
                                                      .uuid = m->uuid,
                                                      .procs_valid = m->has_procs,
                                                      .mem_valid = m->has_mem,
                                                      .mem_used = m->mem_used,
                                                      .mem_total = m->mem_total,
                                                      /* GPM's SM activity, where the GPU offers it */
                                                      .util_valid = m->activity >= 0,
                                                      .util = m->activity > 0 ? (unsigned) m->activity : 0 };
                        for (size_t p = 0; p < m->n_procs && p < GW_GPU_MIG_PROCS_MAX; p++) {
                                if (proc_is_jobs(g, m->procs[p].pid, j->id))
                                        r->n_procs++;
                                else
                                        r->other_busy = true;
                        }
                }
        }
        if (n == 0 && max > 0) /* its slices are not in the layout now (re-partitioned?) */
                out[n++] = (struct gw_reclaim_gpu){ .index = -1, .mig = true };
        return n;
}

/* Mirrors core/reclaim.c's rule; used only to skip file I/O for jobs that are busy anyway.  A
 * slice with the job's processes may still be idle by its progress: the files must be read. */
static bool any_busy(const struct gw_reclaim_gpu *g, size_t n, unsigned threshold) {
        for (size_t i = 0; i < n; i++) {
                bool unknown = g[i].mig ? !g[i].procs_valid : !g[i].util_valid;
                bool measured_busy = g[i].util_valid && g[i].util >= threshold; /* a slice: GPM's figure */
                if (unknown || g[i].other_busy || measured_busy)
                        return true;
        }
        return false;
}

static long utc_offset(gw_usec_t now) {
        time_t t = (time_t) (now / GW_USEC_PER_SEC);
        struct tm tm;
        return localtime_r(&t, &tm) ? tm.tm_gmtoff : 0;
}

/* "0%/3%" */
static void util_list(const struct gw_reclaim_gpu *g, size_t n, char *buf, size_t len) {
        size_t used = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < n && used < len; i++) {
                int r = g[i].util_valid ? snprintf(buf + used, len - used, "%s%u%%", i ? "/" : "", g[i].util)
                                        : snprintf(buf + used, len - used, "%s?", i ? "/" : "");
                if (r > 0)
                        used += (size_t) r;
        }
}

/* "0,1": the GPUs the decision looked at (the job's own on this host, or on its Slurm node). */
static void index_list(const struct gw_reclaim_gpu *g, size_t n, char *buf, size_t len) {
        size_t used = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < n && used < len; i++) {
                int r = snprintf(buf + used, len - used, "%s%d", i ? "," : "", g[i].index);
                if (r > 0)
                        used += (size_t) r;
        }
}

/* The line for the job's log.  It quotes no log line (gw_rwatch_gather also skips lines
 * starting with "gpuward: "): a quoted "val: " must never read as the job validating. */
static void warn_line(const struct gw_job *j, const struct gw_reclaim_policy *p, const struct gw_reclaim_gpu *g,
                      size_t n, const struct gw_reclaim_decision *dec, gw_usec_t now, char *buf, size_t len) {
        char gpus[256], utils[256], what[600], idle[32], since[16], at[16];
        index_list(g, n, gpus, sizeof gpus);
        util_list(g, n, utils, sizeof utils);
        if (n > 0 && g[0].mig && g[0].util_valid)
                snprintf(what, sizeof what, "GPM SM activity %u%% on %s, threshold %u%%", g[0].util,
                         g[0].uuid ? g[0].uuid : "its MIG slice", p->util_threshold);
        else if (n > 0 && g[0].mig) /* no utilisation to quote: what it was judged by instead */
                snprintf(what, sizeof what, "MIG slice, judged by its processes and training progress");
        else
                snprintf(what, sizeof what, "GPU %s util %s, threshold %u%%", gpus, utils, p->util_threshold);
        snprintf(buf, len,
                 "gpuward: WARNING: job %lld has been idle for %s (%s; no progress "
                 "since %s; profile %s); it will be stopped at %s unless it makes progress (gpuward show %lld)\n",
                 (long long) j->id, gw_format_duration(dec->idle_for, idle, sizeof idle), what,
                 gw_clock_text(dec->idle_since, since, sizeof since), p->name,
                 gw_clock_text(now + p->warn, at, sizeof at), (long long) j->id);
}

static void act_warn(struct gw_daemon *d, struct gw_djob *dj, struct gw_rwatch *w, const struct gw_reclaim_policy *p,
                     const struct gw_reclaim_gpu *g, size_t n, const struct gw_reclaim_decision *dec, gw_usec_t now) {
        const struct gw_job *j = dj->job;
        char line[768];
        (void) gw_store_job_event(d->store, j->id, j->state, "warn", dec->evidence);
        _cleanup_free_ char *said = gw_text_private_render(dec->evidence, true, NULL); /* for the daemon's log */
        log_info("job %lld: %s", (long long) j->id, said);
        warn_line(j, p, g, n, dec, now, line, sizeof line);
        int r = gw_rwatch_log_append(j, w, line);
        if (r < 0)
                log_debug("job %lld: cannot append the warning to its log: %s", (long long) j->id, strerror(-r));
        /* The owner notification (mail, webhook) belongs to the web issue: it reads "warn" events. */
}

static void act_withdraw(struct gw_daemon *d, struct gw_djob *dj, struct gw_rwatch *w,
                         const struct gw_reclaim_decision *dec) {
        const struct gw_job *j = dj->job;
        char msg[GW_RECLAIM_EVIDENCE_MAX + 32];
        snprintf(msg, sizeof msg, "warning withdrawn: %s", dec->evidence);
        (void) gw_store_job_event(d->store, j->id, j->state, "unwarn", msg);
        _cleanup_free_ char *said = gw_text_private_render(msg, true, NULL);
        log_info("job %lld: %s", (long long) j->id, said);
        (void) gw_rwatch_log_append(j, w, "gpuward: warning withdrawn: the job is active again\n");
}

/* The evidence, often 300 characters, goes to a "reclaim" event; the job's reason, which
 * show, queue and history print beside the state, stays one short line that points there. */
static void act_terminate(struct gw_daemon *d, struct gw_djob *dj, struct gw_rwatch *w,
                          const struct gw_reclaim_policy *p, const struct gw_reclaim_decision *dec, gw_usec_t now) {
        const struct gw_job *j = dj->job;
        char evidence[GW_RECLAIM_EVIDENCE_MAX + 64], reason[128], idle[32], at[16], line[160];
        gw_clock_text(now, at, sizeof at);
        snprintf(evidence, sizeof evidence, "%s; SIGTERM %s", dec->evidence, at);
        (void) gw_store_job_event(d->store, j->id, j->state, "reclaim", evidence);
        _cleanup_free_ char *said = gw_text_private_render(evidence, true, NULL); /* for the daemon's log */
        log_info("job %lld: reclaim: %s", (long long) j->id, said);
        snprintf(reason, sizeof reason, "idle for %s; evidence in the reclaim event",
                 gw_format_duration(dec->idle_for, idle, sizeof idle));
        snprintf(line, sizeof line, "gpuward: idle GPUs reclaimed: SIGTERM to the job at %s (gpuward show %lld)\n", at,
                 (long long) j->id);
        (void) gw_rwatch_log_append(j, w, line);
        d->loop.stats.reclaims++;
        /* The profile's grace, not --grace-seconds: a profile may give a job longer to save. */
        gw_job_terminate_within(d, dj, GW_JOB_RECLAIMED, reason, p->grace);
}

/* SIGKILL through jobs.c's timer: due now.  Once it fired (kill_at 0), asked again only every
 * KILL_REARM, for processes that appeared after it. */
static void act_kill(struct gw_daemon *d, struct gw_djob *dj, struct gw_rwatch *w, gw_usec_t now) {
        if (!dj->terminating || (dj->kill_at == 0 && now < w->kill_rearm_at) || (dj->kill_at && dj->kill_at <= d->now))
                return;
        dj->kill_at = d->now;
        w->kill_rearm_at = now + KILL_REARM;
}

/* An idle window is recorded once it is a quarter of the idle timeout old (a minute at most):
 * a pause of the data loader or a short save makes no event, a real hang makes one. */
static gw_usec_t idle_told_after(const struct gw_reclaim_policy *p) {
        gw_usec_t q = p->idle_timeout / 4;
        return q < IDLE_TOLD_MAX ? q : IDLE_TOLD_MAX;
}

/* Keeps the store's copy of the idle window in step with the decision: an "idle" event when a
 * window has lasted idle_told_after (it holds last_active, the window's GPU-side start; the
 * progress side is re-read from the files' mtimes after a restart), and one saying it is over
 * when the job is active again, so that a restart after that does not take up a stale window. */
static void idle_tell(struct gw_daemon *d, struct gw_djob *dj, struct gw_rwatch *w, const struct gw_reclaim_policy *p,
                      const struct gw_reclaim_gpu *gpus, size_t n, const struct gw_reclaim_decision *dec,
                      gw_usec_t now) {
        const struct gw_job *j = dj->job;
        char msg[256], at[16], idle[32], timeout[32];
        gw_usec_t since = w->state.last_active > 0 ? w->state.last_active : j->start_time;
        /* Over when the job is active again, or reclamation is off for it (finetune): a window
         * kept from before would otherwise be taken up should a restart follow a switch back. */
        if (!p->enabled || (dec->next.last_active == now && dec->idle_for == 0)) {
                if (!w->idle_told)
                        return;
                w->idle_told = false;
                snprintf(msg, sizeof msg, "active again: the idle window that began at %s is over",
                         gw_clock_text(since, at, sizeof at));
                (void) gw_store_job_event(d->store, j->id, j->state, "idle", msg);
                return;
        }
        if (w->idle_told || dec->idle_for < idle_told_after(p) || since < j->start_time)
                return;
        w->idle_told = true;
        /* A slice has no utilisation: say what it was judged by, never a threshold it was not
         * measured against.  The "(Ns into this attempt" is what a restart reads back. */
        char measured[64];
        bool gpm = n > 0;
        for (size_t i = 0; i < n; i++)
                gpm &= gpus[i].mig && gpus[i].util_valid;
        if (j->mig_profile && gpm)
                snprintf(measured, sizeof measured, "GPM SM activity below %u%%", p->util_threshold);
        else if (j->mig_profile)
                snprintf(measured, sizeof measured, "MIG slices, no utilisation: by processes and progress");
        else
                snprintf(measured, sizeof measured, "below %u%%", p->util_threshold);
        snprintf(msg, sizeof msg,
                 IDLE_TOLD_START "%s (%llds into this attempt; %s, not validating, not saving), no progress "
                                 "for %s: the idle timeout (%s) counts from then, across daemon restarts",
                 gw_clock_text(since, at, sizeof at), (long long) ((since - j->start_time) / GW_USEC_PER_SEC), measured,
                 gw_format_duration(dec->idle_for, idle, sizeof idle),
                 gw_format_duration(p->idle_timeout, timeout, sizeof timeout));
        (void) gw_store_job_event(d->store, j->id, j->state, "idle", msg);
}

static void watch_decide(struct gw_daemon *d, struct gw_djob *dj, struct gw_rwatch *w,
                         const struct gw_reclaim_gpu *gpus, size_t n, gw_usec_t now) {
        struct gw_job *j = dj->job;
        if (dj->terminating && !w->state.term_at)
                return; /* cancelled or out of time: not ours to end */
        const struct gw_reclaim_policy *p = gw_reclaim_policy_of(d, j);
        /* The log every sample (cheap unless it grew): how long this job's validation passes
         * take is learnt while it works.  Other files only when the answer could be "idle": a
         * busy, young, exempt or already stopping job is kept whatever they say, and mtimes
         * lose nothing meanwhile. */
        if (!w->state.term_at) {
                gw_rwatch_gather_log(d, j, w);
                gw_val_track_step(&w->val, w->phase, now);
        }
        bool look = p->enabled && !w->state.term_at && now - j->start_time >= p->idle_timeout &&
                    !any_busy(gpus, n, p->util_threshold);
        if (look) {
                gw_rwatch_gather(d, j, w);
                w->last_look = now;
                /* The run it chose is the job's for training's watch too (training_runs.c). */
                if (w->results_path)
                        gw_training_results_chosen(d, dj, w->results_path);
        }
        gw_probe_step(&w->probe, j->health_url, look, now);
        struct gw_job_obs o = {
                .started_at = j->start_time,
                .gpus = gpus,
                .n_gpus = n,
                .log_size = w->log_size,
                .log_changed = w->log_changed,
                .results_rows = w->results_rows,
                .results_changed = w->results_changed,
                .progress_changed = w->progress_changed,
                .loss = w->n_losses ? w->losses[0] : NAN,
                .loss_changed = w->loss_changed,
                .ckpt_mtime = w->ckpt_mtime,
                .phase = w->phase,
                .phase_line = w->phase_line[0] ? w->phase_line : NULL,
                .val_since = w->val.since,
                .val_longest = w->val.longest,
                .probe = w->probe.result,
                .probe_detail = w->probe.detail[0] ? w->probe.detail : NULL,
                .utc_offset = utc_offset(now),
                .state = w->state,
        };
        struct gw_reclaim_decision dec;
        int r = gw_reclaim_decide(&o, p, now, &dec);
        if (r < 0) {
                log_debug("job %lld: no reclaim decision: %s", (long long) j->id, strerror(-r));
                return;
        }
        _cleanup_free_ char *said = gw_text_private_render(dec.evidence, true, NULL); /* for the daemon's log */
        switch (dec.action) {
        case GW_RECLAIM_WARN:
                act_warn(d, dj, w, p, gpus, n, &dec, now);
                break;
        case GW_RECLAIM_TERMINATE:
                act_terminate(d, dj, w, p, &dec, now);
                break;
        case GW_RECLAIM_KILL:
                act_kill(d, dj, w, now);
                break;
        default:
                log_debug("job %lld: %s", (long long) j->id, said);
                if (dec.warning_cleared)
                        act_withdraw(d, dj, w, &dec);
                break;
        }
        idle_tell(d, dj, w, p, gpus, n, &dec, now);
        w->state = dec.next;
}

/* When the idle watch will stop dj (wall clock) unless it makes progress: the end of its
 * outstanding warning; 0 when none is outstanding or the stop has begun. */
static gw_usec_t stop_at(const struct gw_daemon *d, const struct gw_djob *dj) {
        const struct gw_rwatch *w = rwatch_of(d, dj);
        const struct gw_job *j = dj->job;
        if (!w || j->state != GW_JOB_RUNNING || dj->dead || w->attempt != j->attempt || !w->state.warned_at ||
            w->state.term_at)
                return 0;
        /* The warning's instant is on the job's clock: shift takes it back to the wall's.  The
         * stop comes at the first sample past warned_at + warn (core/reclaim.h). */
        return w->state.warned_at + gw_reclaim_policy_of(d, j)->warn - w->shift;
}

struct gw_rwatch *gw_reclaim_rwatch(struct gw_daemon *d, struct gw_djob *dj) {
        const struct gw_job *j = dj->job;
        if (j->state != GW_JOB_RUNNING || j->start_time <= 0 || dj->dead)
                return NULL;
        return rwatch_for(d, dj, gw_job_clock_label(d, dj, d->now));
}

void gw_reclaim_watch_job(struct gw_daemon *d, struct gw_djob *dj, const struct gw_reclaim_gpu *gpus, size_t n) {
        struct gw_job *j = dj->job;
        if (j->state != GW_JOB_RUNNING || j->start_time <= 0 || dj->dead)
                return;
        gw_usec_t now = gw_job_clock_label(d, dj, d->now);
        struct gw_rwatch *w = rwatch_for(d, dj, now);
        w->shift = now - d->now_wall;
        watch_decide(d, dj, w, gpus, n, now);
        w->last_sample = now;
        dj->card_stop_at = stop_at(d, dj);
}

void gw_reclaim_watch(struct gw_daemon *d) {
        /* On a cluster the jobs' GPUs are the nodes', seen through their agents (nodes_watch.c). */
        if (gw_backend_placement(d) != GW_EXEC_PLACE_HERE)
                return;
        /* Terminating does not remove a job from running[] (it ends when it exits), so the
         * array is stable during the walk. */
        for (size_t i = 0; i < d->jobs.n_running; i++) {
                struct gw_djob *dj = d->jobs.running[i];
                struct gw_reclaim_gpu gpus[64];
                size_t n = dj->job->mig_profile ? job_slices(d, dj->job, gpus, ELEMENTSOF(gpus))
                                                : job_gpus(d, dj->job, gpus);
                gw_reclaim_watch_job(d, dj, gpus, n);
        }
}
