/* Training awareness in the daemon (ETA, leaks, snapshots): after every GPU
 * sample, for each running job,
 *   - epochs: the run's results.csv (found and read as idle reclamation does, with the same
 *     ownership rules) gives the number of finished epochs; a new row ends an epoch at the
 *     file's mtime; the planned number comes from args.yaml or the command's epochs=;
 *   - ETA: core/eta.h over the epochs' durations; the estimated end is kept in j->eta for
 *     the job JSON, `gpuward queue`, the GPU list and /metrics;
 *   - leak: each finished epoch's low and peak memory per GPU, from the job's telemetry
 *     rings, go to core/leak.h and to the store (a restarted daemon goes on from them); a
 *     leak is told once per attempt (event "leak", a line in the job's log); under
 *     leak_policy restart the job is stopped right after its next checkpoint and
 *     recovery.c retries it from that checkpoint (gw_training_take_restart);
 *   - snapshots of weights/last.pt and best.pt (training_snap.c).
 * What survives between samples is struct gw_train (training_int.h), reset per attempt.
 * The wall clock is read once per sample: epoch ends are file mtimes. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/leak_respond.h"
#include "core/progress.h"
#include "core/resume_check.h"
#include "core/scratch.h"
#include "daemon/training/training.h"
#include "daemon/training/resume.h"
#include "daemon/training/training_int.h"
#include "daemon/base/userfile.h"
#include "daemon/life/jobs.h"
#include "daemon/life/migslots.h"
#include "daemon/life/queue.h"
#include "daemon/observe/observe.h"
#include "store/epochs.h"
#include "store/jobarray.h"

/* How often to look for a results.csv not found yet: every sample at first (the first epoch
 * should be timed), then rarely (most jobs that have none by then never will). */
#define FIND_EARLY (120 * GW_USEC_PER_SEC)
#define FIND_LATER (10 * GW_USEC_PER_SEC)
#define RESULTS_MAX (16u << 20)
#define ARGS_MAX (64u << 10)

struct gw_train *gw_train_of(const struct gw_daemon *d, const struct gw_djob *dj) {
        return gw_keytab_get(&d->state.train, (uint64_t) dj->job->id);
}

struct gw_train *gw_train_at(const struct gw_daemon *d, const struct gw_djob *dj, int attempt) {
        struct gw_train *t = dj ? gw_train_of(d, dj) : NULL;
        return t && t->attempt == attempt ? t : NULL;
}

struct gw_train *gw_train_current(const struct gw_daemon *d, const struct gw_djob *dj) {
        return gw_train_at(d, dj, dj->job->attempt);
}

void gw_training_forget(struct gw_daemon *d, struct gw_djob *dj) {
        gw_train_free(gw_keytab_take(&d->state.train, (uint64_t) dj->job->id));
        gw_train_pick_free(gw_keytab_take(&d->state.train_pick, (uint64_t) dj->job->id));
}

struct gw_train *gw_train_free(struct gw_train *t) {
        if (!t)
                return NULL;
        gw_train_copy_abort(t);
        free(t->results_path);
        free(t->run_dir);
        free(t->gpus);
        free(t);
        return NULL;
}

/* The attempt's epochs as the store kept them: a restarted daemon goes on from there instead
 * of sharing the time since the start out over all rows. */
static void load_epochs(struct gw_daemon *d, const struct gw_job *j, struct gw_train *t) {
        struct gw_store_epoch e[TRAIN_EPOCHS_KEEP];
        int n = gw_store_epochs(d->store, j->id, j->attempt, e, TRAIN_EPOCHS_KEEP);
        if (n < 0)
                log_warn("job %lld: cannot read its epoch times: %s", (long long) j->id, gw_store_errmsg(d->store));
        for (int i = 0; i < n; i++)
                t->epochs[i] = (struct train_epoch){ .epoch = e[i].epoch,
                                                     .start = e[i].start,
                                                     .end = e[i].end,
                                                     .startup = e[i].startup,
                                                     .exact = e[i].exact };
        t->n_epochs = n > 0 ? (size_t) n : 0;
        if (n > 0)
                t->done = e[n - 1].epoch;
}

/* Appends one epoch's low and peak to g's series, the oldest dropped when it is full.  false
 * (nothing kept) when the epoch is not newer than the newest kept. */
static bool baseline_push(struct train_gpu *g, long epoch, double low, double peak) {
        if (g->n && g->epoch[g->n - 1] >= epoch)
                return false;
        if (g->n == GW_LEAK_MAX_EPOCHS) {
                memmove(g->epoch, g->epoch + 1, (GW_LEAK_MAX_EPOCHS - 1) * sizeof *g->epoch);
                memmove(g->low, g->low + 1, (GW_LEAK_MAX_EPOCHS - 1) * sizeof *g->low);
                memmove(g->peak, g->peak + 1, (GW_LEAK_MAX_EPOCHS - 1) * sizeof *g->peak);
                g->n--;
        }
        g->epoch[g->n] = epoch;
        g->low[g->n] = low;
        g->peak[g->n] = peak;
        g->n++;
        return true;
}

static void baseline_keep(const struct gw_store_epoch_mem *m, void *userdata) {
        struct gw_train *t = userdata;
        for (size_t i = 0; i < t->n_gpus; i++)
                if (t->gpus[i].gpu == m->gpu)
                        (void) baseline_push(&t->gpus[i], m->epoch, m->low, m->peak);
}

/* The attempt's per-epoch memory as the store kept it: the telemetry rings start empty in a
 * restarted daemon, and without the earlier epochs the leak detector would start over. */
static void load_baselines(struct gw_daemon *d, const struct gw_job *j, struct gw_train *t) {
        if (gw_store_epoch_mems(d->store, j->id, j->attempt, GW_LEAK_MAX_EPOCHS, baseline_keep, t) < 0)
                log_warn("job %lld: cannot read its memory per epoch: %s", (long long) j->id,
                         gw_store_errmsg(d->store));
}

/* GPU gi as the leak detector sees it: the whole GPU, or, for a job on MIG slices, its
 * slices there, whose memory is the job's limit and whose name the evidence gives. */
static void train_gpu_init(const struct gw_daemon *d, const struct gw_job *j, unsigned gi, struct train_gpu *g) {
        *g = (struct train_gpu){ .gpu = gi, .mem_total = d->host.gpus[gi].info.mem_total };
        struct gw_mig_use use;
        gw_mig_job_use(d, j, gi, &use);
        if (!j->mig_profile || use.n == 0)
                return;
        g->mem_total = use.has_mem ? use.mem_total : 0;
        if (use.n == 1)
                snprintf(g->name, sizeof g->name, "%s (%s on GPU %u)", use.uuid, use.profile, gi);
        else
                snprintf(g->name, sizeof g->name, "%zu %s slices on GPU %u (%s, ...)", use.n, use.profile, gi,
                         use.uuid);
}

/* A fresh state for the job's current attempt: a retry is a new process with a new clock. */
static struct gw_train *train_for(struct gw_daemon *d, struct gw_djob *dj) {
        const struct gw_job *j = dj->job;
        struct gw_train *t = gw_train_of(d, dj);
        if (t && t->attempt == j->attempt && t->start_time == j->start_time)
                return t;
        gw_train_free(t);
        dj->job->eta = dj->job->eta_overdue = 0; /* the previous attempt's */
        /* Its predicted start is spent: a retry's wait in backoff is predicted anew. */
        dj->job->predicted_start = dj->job->predicted_end = 0;
        t = gw_xcalloc(1, sizeof *t);
        t->attempt = j->attempt;
        t->start_time = j->start_time;
        t->done = t->total = -1;
        t->row_epoch = t->prev_row_epoch = t->best_epoch = t->best_epoch_before = -1;
        t->row_map = t->prev_row_map = t->best_map = t->best_map_before = NAN;
        for (int k = 0; k < _TRAIN_FILES; k++)
                t->files[k].done_size = -1;
        size_t n = (size_t) __builtin_popcountll(j->gpu_mask);
        t->gpus = gw_xcalloc(n ? n : 1, sizeof *t->gpus);
        for (unsigned gi = 0; gi < d->host.n_gpus && gi < 64 && t->n_gpus < n; gi++)
                if (j->gpu_mask & (UINT64_C(1) << gi))
                        train_gpu_init(d, j, gi, &t->gpus[t->n_gpus++]);
        load_epochs(d, j, t);
        load_baselines(d, j, t);
        gw_keytab_put(&d->state.train, (uint64_t) j->id, t);
        return t;
}

/* ---- results.csv ---------------------------------------------------------------------- */

static void planned_epochs(const struct gw_job *j, struct gw_train *t) {
        long e;
        if (t->run_dir) {
                char path[4200];
                size_t len;
                snprintf(path, sizeof path, "%s/args.yaml", t->run_dir);
                _cleanup_free_ char *text = gw_user_file_tail(j, path, true, ARGS_MAX, NULL, &len);
                if (text && gw_args_yaml_epochs(text, len, &e) == 0 && e > 0) {
                        t->total = e;
                        t->total_from = "args.yaml";
                        return;
                }
        }
        size_t argc = gw_strv_length(j->argv);
        if (argc && gw_argv_epochs((const char *const *) j->argv, argc, &e) == 0 && e > 0) {
                t->total = e;
                t->total_from = "command";
        }
}

static double fitness(const struct gw_results *r, size_t row) {
        return gw_results_fitness(r, row); /* Ultralytics' own, per task: core/progress.h */
}

/* The best row by fitness among the first n: its epoch and mAP50-95. */
static void best_of(const struct gw_results *r, size_t n, long *ret_epoch, double *ret_map) {
        double best = NAN;
        *ret_epoch = -1;
        *ret_map = NAN;
        for (size_t i = 0; i < n; i++) {
                double f = fitness(r, i);
                if (!isnan(f) && (isnan(best) || f > best)) {
                        best = f;
                        *ret_epoch = gw_results_epoch1(r, i);
                        *ret_map = gw_results_map50_95(r, i);
                }
        }
}

/* Keeps e, in memory and in the store (a finished job's page draws its epochs from there). */
static void push_epoch(struct gw_daemon *d, const struct gw_job *j, struct gw_train *t, const struct train_epoch *e) {
        if (t->n_epochs == TRAIN_EPOCHS_KEEP) {
                memmove(t->epochs, t->epochs + 1, (TRAIN_EPOCHS_KEEP - 1) * sizeof *t->epochs);
                t->n_epochs--;
        }
        t->epochs[t->n_epochs++] = *e;
        struct gw_store_epoch se = { .epoch = e->epoch,
                                     .start = e->start,
                                     .end = e->end,
                                     .startup = e->startup,
                                     .exact = e->exact };
        if (gw_store_epoch_put(d->store, j->id, j->attempt, &se) < 0)
                log_warn("job %lld: cannot record the end of epoch %ld: %s", (long long) j->id, e->epoch,
                         gw_store_errmsg(d->store));
}

/* The epoch's low and peak on each of the job's GPUs, from its telemetry ring; kept in
 * memory and in the store (load_baselines). */
static void measure_epoch(struct gw_daemon *d, const struct gw_djob *dj, struct gw_train *t,
                          const struct train_epoch *e) {
        for (size_t i = 0; i < t->n_gpus; i++) {
                struct train_gpu *g = &t->gpus[i];
                const struct gw_ring *ring = NULL;
                size_t n_tel;
                const struct gw_jobtel *tel = gw_observe_jobtel(d, dj, &n_tel);
                for (size_t k = 0; k < n_tel; k++)
                        if (tel[k].gpu == g->gpu)
                                ring = &tel[k].ring;
                if (!ring || !ring->n)
                        continue;
                _cleanup_free_ struct gw_point *pts = gw_xmalloc(ring->n * sizeof *pts);
                size_t n = gw_ring_since(ring, e->start, pts, ring->n);
                double lo, hi;
                if (gw_leak_epoch_stats(pts, n, e->start, e->end, &lo, &hi) < 0 || !baseline_push(g, e->epoch, lo, hi))
                        continue;
                struct gw_store_epoch_mem m = { .gpu = g->gpu, .epoch = e->epoch, .low = lo, .peak = hi };
                if (gw_store_epoch_mem_put(d->store, dj->job->id, dj->job->attempt, &m) < 0)
                        log_warn("job %lld: cannot record its memory in epoch %ld: %s", (long long) dj->job->id,
                                 e->epoch, gw_store_errmsg(d->store));
        }
}

/* done epochs now, the newest row written at t_row: records the epochs that ended since the
 * last look.  Returns how many of them can be measured for the leak detector. */
static size_t new_epochs(struct gw_daemon *d, const struct gw_djob *dj, struct gw_train *t, long done,
                         gw_usec_t t_row) {
        const struct gw_job *j = dj->job;
        long prev = t->done;
        if (done < prev) { /* the file was rewritten: start over */
                t->n_epochs = 0;
                for (size_t i = 0; i < t->n_gpus; i++)
                        t->gpus[i].n = 0; /* its memory series too: a new run */
                prev = -1;
                if (gw_store_epochs_drop(d->store, j->id, j->attempt) < 0)
                        log_warn("job %lld: cannot forget its epoch times: %s", (long long) j->id,
                                 gw_store_errmsg(d->store));
        }
        t->done = done;
        if (done <= 0 || done == prev)
                return 0;
        long k;
        gw_usec_t start;
        if (prev < 0) {
                /* First look: when resumed, the earlier rows are another process's; otherwise
                 * the rows so far share the time since the start. */
                struct gw_yolo_run run;
                bool resumed = j->resume_from || (gw_train_resolve_run(j, false, &run) == 0 && run.resumed);
                k = resumed ? 1 : done;
                start = t->start_time;
        } else {
                k = done - prev;
                start = t->n_epochs ? t->epochs[t->n_epochs - 1].end : t->start_time;
        }
        if (t_row <= start)
                t_row = start + 1;
        bool first = t->n_epochs == 0;
        size_t measurable = 0;
        for (long i = 0; i < k; i++) {
                struct train_epoch e = {
                        .epoch = done - k + 1 + i,
                        .start = start + (t_row - start) * i / k,
                        .end = start + (t_row - start) * (i + 1) / k,
                        .startup = first && i == 0,
                        .exact = k == 1,
                };
                push_epoch(d, j, t, &e);
                if (e.exact && !e.startup) {
                        measure_epoch(d, dj, t, &e);
                        measurable++;
                }
        }
        return measurable;
}

/* A retry offered a checkpoint: at the first epoch its run shows, whether it continued from
 * it or started over, as an event (core/resume_check.h), so that "resumed from" is claimed
 * only when it happened. */
static void tell_resume(struct gw_daemon *d, const struct gw_djob *dj, struct gw_train *t, long epoch) {
        const struct gw_job *j = dj->job;
        t->resume_told = true;
        _cleanup_free_ char *given = gw_resume_run_dir(j->resume_from);
        /* A --scratch retry was given its run's copy in the shared folder, restored into
         * the node-local folder it writes in: the same run. */
        char shared[4400];
        const char *run = t->run_dir;
        if (run && j->scratch_dir && gw_scratch_map(run, j->scratch_dir, j->cwd, shared, sizeof shared) > 0)
                run = shared;
        struct gw_resume_seen seen = {
                .given_run = given,
                .run = run,
                .epoch = epoch,
                .reached = dj->last_mark.valid ? dj->last_mark.epoch : -1,
                .ckpt_epoch = j->resume_epoch,
                .offer = j->resume_cmd ? GW_RESUME_BY_CMD
                         : j->yolo     ? GW_RESUME_BY_ARG
                                       : GW_RESUME_BY_ENV,
        };
        char msg[GW_RESUME_CHECK_MAX];
        enum gw_resume_verdict v = gw_resume_judge(&seen, msg, sizeof msg);
        log_info("job %lld: attempt %d %s", (long long) j->id, j->attempt, msg);
        if (gw_store_job_event(d->store, j->id, j->state, v == GW_RESUME_CONTINUED ? "resumed" : "started_over", msg) <
            0)
                log_warn("job %lld: cannot record its resume: %s", (long long) j->id, gw_store_errmsg(d->store));
}

/* Re-reads results.csv when it changed.  Returns how many new epochs can be measured. */
static size_t read_results(struct gw_daemon *d, const struct gw_djob *dj, struct gw_train *t, gw_usec_t now) {
        const struct gw_job *j = dj->job;
        if (!t->results_path && now >= t->next_find) {
                t->next_find = now - t->start_time < FIND_EARLY ? now : now + FIND_LATER;
                t->results_path = gw_train_find_results(d, j);
                if (t->results_path) {
                        t->run_dir = gw_xstrdup(t->results_path);
                        char *slash = strrchr(t->run_dir, '/');
                        if (slash)
                                *slash = '\0';
                }
        }
        if (!t->results_path)
                return 0;
        struct stat st;
        if (!gw_user_file_stat(j, t->results_path, &st))
                return 0;
        if (t->results_seen && st.st_size == t->results_size && gw_file_mtime_us(&st) == t->results_mtime)
                return 0;
        size_t len;
        _cleanup_free_ char *text = gw_user_file_tail(j, t->results_path, true, RESULTS_MAX, &st, &len);
        struct gw_results r;
        if (!text || (uint64_t) st.st_size > RESULTS_MAX || gw_results_parse(text, len, &r) < 0)
                return 0;
        t->results_seen = true;
        t->results_size = st.st_size;
        t->results_mtime = gw_file_mtime_us(&st);
        if (t->total < 0)
                planned_epochs(j, t);
        long done = r.n_rows ? (r.zero_based ? r.last_epoch + 1 : r.last_epoch) : 0;
        if (r.n_rows) {
                t->row_epoch = gw_results_epoch1(&r, r.n_rows - 1); /* 1-based, as the log's */
                t->row_map = gw_results_map50_95(&r, r.n_rows - 1);
                t->prev_row_epoch = r.n_rows > 1 ? gw_results_epoch1(&r, r.n_rows - 2) : -1;
                t->prev_row_map = r.n_rows > 1 ? gw_results_map50_95(&r, r.n_rows - 2) : NAN;
                best_of(&r, r.n_rows, &t->best_epoch, &t->best_map);
                best_of(&r, r.n_rows - 1, &t->best_epoch_before, &t->best_map_before);
        }
        gw_results_free(&r);
        /* Only rows this attempt wrote tell whether it resumed: those its retry kept (up to the
         * checkpoint's epoch) were in the file before it started, and a first look that came
         * before its first epoch found just those ("started over: epoch 1 written"). */
        if (!t->resume_told && j->attempt > 1 && j->resume_from && done > 0 && t->results_mtime >= j->start_time)
                tell_resume(d, dj, t, done);
        return new_epochs(d, dj, t, done, t->results_mtime);
}

/* ---- ETA and leak ----------------------------------------------------------------------- */

static void update_eta(struct gw_job *j, struct gw_train *t, gw_usec_t now) {
        struct gw_eta_epoch e[TRAIN_EPOCHS_KEEP];
        for (size_t i = 0; i < t->n_epochs; i++)
                e[i] = (struct gw_eta_epoch){ .duration = t->epochs[i].end - t->epochs[i].start,
                                              .startup = t->epochs[i].startup };
        struct gw_eta_input in = {
                .epochs = e,
                .n_epochs = t->n_epochs,
                .done = t->done > 0 ? t->done : 0,
                .total = t->total,
                .last_end = t->n_epochs ? t->epochs[t->n_epochs - 1].end : t->start_time,
                .now = now,
        };
        t->has_eta = gw_eta_estimate(&in, &t->eta) == 0;
        j->eta = t->has_eta && t->eta.has_end ? t->eta.end : 0;
        j->eta_overdue = j->eta && t->eta.overdue_s > 0 ? (gw_usec_t) (t->eta.overdue_s * (double) GW_USEC_PER_SEC) : 0;
}

static const char *leak_policy(const struct gw_job *j) { return j->leak_policy ? j->leak_policy : "warn"; }

/* The "leak" event (report_leak) and the stop of leak_policy restart (respond_leak) are what
 * gw_training_leak_restore reads back after a restart: they share these words. */
#define LEAK_EVENT_POLICY "; leak_policy "
#define LEAK_STOP_START "memory leak ("
#define LEAK_STOP_END "): stopped after its checkpoint to resume from it"

static void report_leak(struct gw_daemon *d, struct gw_djob *dj, struct gw_train *t, const struct gw_leak_response *r) {
        const struct gw_job *j = dj->job;
        char msg[GW_LEAK_EVIDENCE_MAX + 200], line[GW_LEAK_EVIDENCE_MAX + 240];
        snprintf(msg, sizeof msg, "%s" LEAK_EVENT_POLICY "%s: %s", t->leak.evidence, leak_policy(j), r->outcome);
        (void) gw_store_job_event(d->store, j->id, j->state, "leak", msg);
        log_warn("job %lld: GPU memory leak: %s", (long long) j->id, msg);
        snprintf(line, sizeof line, "gpuward: LEAK: %s (gpuward show %lld)\n", msg, (long long) j->id);
        gw_lifecycle_log_line(d, dj, line);
        snprintf(t->leak_evidence, sizeof t->leak_evidence, "%s", t->leak.evidence);
        t->leak_reported = true;
        t->restart_pending = r->restart_pending;
}

/* The config's [policy.NAME], NULL none: read here from the config itself, as reclamation
 * does (reclaim_policy.c), which training does not call. */
static const struct gw_policy_conf *policy_conf(const struct gw_daemon *d, const char *name) {
        for (size_t i = 0; name && i < d->cfg->n_policies; i++)
                if (!strcmp(d->cfg->policies[i].p.name, name))
                        return &d->cfg->policies[i];
        return NULL;
}

/* The job's profile's thresholds ([policy.NAME] leak_mib_per_epoch, leak_epochs), else the
 * global keys; a job of an unknown profile is under "default", as for reclamation. */
static void leak_params_of(const struct gw_daemon *d, const struct gw_job *j, struct gw_leak_params *p) {
        gw_leak_params_default(p);
        p->mib_per_epoch = d->cfg->leak_mib_per_epoch;
        p->epochs = d->cfg->leak_epochs;
        const struct gw_policy_conf *pc = policy_conf(d, j->idle_policy ? j->idle_policy : "default");
        if (!pc)
                pc = policy_conf(d, "default");
        if (pc && pc->leak_mib_per_epoch > 0)
                p->mib_per_epoch = pc->leak_mib_per_epoch;
        if (pc && pc->leak_epochs > 0)
                p->epochs = pc->leak_epochs;
        if (p->window < p->epochs)
                p->window = p->epochs;
}

static void check_leak(struct gw_daemon *d, const struct gw_job *j, struct gw_train *t) {
        struct gw_leak_gpu g[GW_LEAK_MAX_GPUS];
        size_t n = 0;
        for (size_t i = 0; i < t->n_gpus && n < GW_LEAK_MAX_GPUS; i++)
                g[n++] = (struct gw_leak_gpu){ .gpu = t->gpus[i].gpu,
                                               .mem_total = t->gpus[i].mem_total,
                                               .epoch = t->gpus[i].epoch,
                                               .low = t->gpus[i].low,
                                               .peak = t->gpus[i].peak,
                                               .n = t->gpus[i].n,
                                               .name = t->gpus[i].name };
        struct gw_leak_params p;
        leak_params_of(d, j, &p);
        struct gw_leak_input in = { .gpus = g, .n_gpus = n, .sec_per_epoch = t->has_eta ? t->eta.sec_per_epoch : 0 };
        if (gw_leak_detect(&p, &in, &t->leak) == 0)
                t->leak_flagged = t->leak.leak;
}

/* What core/leak_respond.h is told of the job and of what this attempt already did. */
static struct gw_leak_respond_input respond_input(const struct gw_daemon *d, const struct gw_djob *dj,
                                                  const struct gw_train *t) {
        const struct gw_job *j = dj->job;
        int max = j->retries >= 0 ? j->retries : d->cfg->default_retries;
        return (struct gw_leak_respond_input){
                .policy = gw_leak_policy_from_name(j->leak_policy),
                .flagged = t->leak_flagged,
                .resumable = j->yolo, /* the retry resumes from the run's weights/last.pt */
                .attempt = (unsigned) j->attempt,
                .max_retries = max > 0 ? (unsigned) max : 0,
                .reported = t->leak_reported,
                .restart_pending = t->restart_pending,
                .stop_sent = t->restart_sent,
                .stopping = dj->terminating,
                .ckpt_settled = t->restart_pending && gw_train_ckpt_settled(t),
        };
}

/* What to do about a leak is core/leak_respond.h's decision (the simulator drives the same):
 * report it once per attempt; under leak_policy restart, stop right after a checkpoint, so
 * the retry loses nothing and starts with the leaked memory given back. */
static void respond_leak(struct gw_daemon *d, struct gw_djob *dj, struct gw_train *t) {
        for (int look = 0; look < 2; look++) {
                struct gw_leak_respond_input in = respond_input(d, dj, t);
                struct gw_leak_response r;
                if (gw_leak_respond(&in, &r) < 0 || r.act == GW_LEAK_ACT_NONE)
                        return;
                if (r.act == GW_LEAK_ACT_REPORT) {
                        report_leak(d, dj, t, &r);
                        continue; /* the stop may be due at the same look */
                }
                char reason[GW_LEAK_EVIDENCE_MAX + 96];
                snprintf(reason, sizeof reason, LEAK_STOP_START "%s" LEAK_STOP_END, t->leak_evidence);
                gw_lifecycle_log_line(d, dj,
                                      "gpuward: LEAK: stopping the job after its checkpoint to resume from it\n");
                t->restart_sent = true;
                gw_job_terminate(d, dj, GW_JOB_FAILED, reason);
                return;
        }
}

/* A job on a cluster's node has no GPU of this host (gpu_mask 0): its GPUs are the ones its
 * telemetry found on the node (nodes_telem.c), each added to the leak detector's when its
 * series starts. */
static void node_gpus(struct gw_daemon *d, const struct gw_djob *dj, struct gw_train *t) {
        if (dj->job->gpu_mask)
                return;
        size_t n_tel;
        const struct gw_jobtel *tel = gw_observe_jobtel(d, dj, &n_tel);
        for (size_t k = 0; k < n_tel; k++) {
                size_t i = 0;
                while (i < t->n_gpus && t->gpus[i].gpu != tel[k].gpu)
                        i++;
                if (i < t->n_gpus)
                        continue;
                t->gpus = gw_xrealloc(t->gpus, (t->n_gpus + 1) * sizeof *t->gpus);
                t->gpus[t->n_gpus++] = (struct train_gpu){ .gpu = tel[k].gpu, .mem_total = tel[k].mem_total };
                load_baselines(d, dj->job, t); /* what the store kept of it, after a restart */
        }
}

static void watch_job(struct gw_daemon *d, struct gw_djob *dj, gw_usec_t now) {
        struct gw_job *j = dj->job;
        if (j->state != GW_JOB_RUNNING || j->start_time <= 0 || dj->dead)
                return;
        struct gw_train *t = train_for(d, dj);
        node_gpus(d, dj, t);
        size_t measured = read_results(d, dj, t, now);
        update_eta(j, t, now);
        if (measured)
                check_leak(d, j, t);
        gw_train_snap_step(d, dj, t, now);
        respond_leak(d, dj, t);
}

/* The leak reported in dj's attempt, for its GPUs' cards: the evidence, and the forecast
 * while the newest verdict still says leak. */
static void card_leak(const struct gw_daemon *d, struct gw_djob *dj) {
        dj->card_leak = gw_training_leak_flagged(d, dj);
        dj->card_leak_epochs = dj->card_leak_seconds = -1;
        if (!dj->card_leak)
                return;
        const struct gw_train *t = gw_train_current(d, dj);
        const struct gw_leak_verdict *v = &t->leak;
        if (v->leak) {
                dj->card_leak_epochs = v->epochs_to_oom >= 0 ? v->epochs_to_oom : -1;
                dj->card_leak_seconds = v->seconds_to_oom >= 0 ? v->seconds_to_oom : -1;
        }
        snprintf(dj->card_leak_evidence, sizeof dj->card_leak_evidence, "%s", t->leak_evidence);
}

void gw_training_watch(struct gw_daemon *d) {
        gw_usec_t now = d->now_wall;
        /* Terminating leaves a job in running[] until it exits: the array is stable here. */
        for (size_t i = 0; i < d->jobs.n_running; i++) {
                watch_job(d, d->jobs.running[i], now);
                card_leak(d, d->jobs.running[i]);
        }
        gw_training_predict(d, false); /* with the ETAs just updated */
        gw_train_snap_housekeeping(d, d->now);
}

void gw_training_attempt_ended(struct gw_daemon *d, struct gw_djob *dj) {
        const struct gw_job *j = dj->job;
        if (j->start_time <= 0)
                return;
        const struct gw_train *seen = gw_train_of(d, dj);
        if (!(seen && seen->attempt == j->attempt && seen->start_time == j->start_time)) {
                /* A run too short for the watch to have looked at: only one that wrote a
                 * results.csv is worth a training state (and its store query). */
                _cleanup_free_ char *results = gw_train_find_results(d, j);
                if (!results) {
                        gw_training_results_none(d, dj);
                        return;
                }
        }
        struct gw_train *t = train_for(d, dj);
        t->next_find = 0; /* a run too short for the watch to have found its results.csv */
        (void) read_results(d, dj, t, d->now_wall);
        /* A task of a sweep: its best, as an event its array's summary reads back to name the
         * best task (store/jobarray.h); the task's run is not looked for again once it ended. */
        if (j->array_job > 0 && !isnan(t->best_map)) {
                char msg[96];
                snprintf(msg, sizeof msg, GW_ARRAY_BEST_FORMAT, t->best_map, t->best_epoch);
                (void) gw_store_job_event(d->store, j->id, j->state, "best", msg);
        }
}

bool gw_training_take_restart(struct gw_daemon *d, struct gw_djob *dj, char *why, size_t n) {
        struct gw_train *t = gw_train_of(d, dj);
        if (!t || !t->restart_sent || t->attempt != dj->job->attempt)
                return false;
        t->restart_sent = false;
        snprintf(why, n, "memory leak: %s; stopped after its checkpoint (leak_policy restart)", t->leak_evidence);
        return true;
}

gw_usec_t gw_training_ckpt_time(const struct gw_daemon *d, const struct gw_djob *dj, bool *ret_settled) {
        const struct gw_train *t = gw_train_current(d, dj);
        *ret_settled = t && gw_train_ckpt_settled(t);
        return t && t->files[TRAIN_LAST].seen ? t->files[TRAIN_LAST].mtime : 0;
}

const char *gw_training_run_dir(const struct gw_daemon *d, const struct gw_djob *dj) {
        const struct gw_train *t = gw_train_current(d, dj);
        return t ? t->run_dir : NULL;
}

long gw_training_epochs_planned(const struct gw_daemon *d, const struct gw_djob *dj) {
        const struct gw_train *t = gw_train_current(d, dj);
        return t ? t->total : -1;
}

gw_usec_t gw_training_ckpt_every(const struct gw_daemon *d, const struct gw_djob *dj) {
        const struct gw_train *t = gw_train_current(d, dj);
        gw_usec_t sum = 0;
        size_t n = 0;
        for (size_t i = 0; t && i < t->n_epochs; i++)
                if (t->epochs[i].exact && !t->epochs[i].startup) {
                        sum += t->epochs[i].end - t->epochs[i].start;
                        n++;
                }
        return n >= 2 ? sum / (gw_usec_t) n : 0;
}

long gw_training_epochs_done(const struct gw_daemon *d, const struct gw_djob *dj) {
        const struct gw_train *t = gw_train_current(d, dj);
        return t ? t->done : -1;
}

bool gw_training_leak_flagged(const struct gw_daemon *d, const struct gw_djob *dj) {
        const struct gw_train *t = gw_train_current(d, dj);
        return t && t->leak_reported;
}

int gw_training_leak_of_event(const char *kind, const char *message, char *evidence, size_t n) {
        const char *p = strcmp(kind, "leak") ? NULL : strstr(message, LEAK_EVENT_POLICY);
        if (!p)
                return -ENOENT;
        snprintf(evidence, n, "%.*s", (int) (p - message), message);
        return 0;
}

/* The evidence in the recorded stop of leak_policy restart ("memory leak (EVIDENCE): stopped
 * after ..."; the only stop recorded as FAILED), or -ENOENT for no stop or another one. */
static int leak_stop_evidence(const struct gw_job *j, char *evidence, size_t n) {
        const char *r = j->stop_reason;
        size_t len = r ? strlen(r) : 0, head = strlen(LEAK_STOP_START), tail = strlen(LEAK_STOP_END);
        if (j->stop_state != GW_JOB_FAILED || len < head + tail || strncmp(r, LEAK_STOP_START, head) ||
            strcmp(r + len - tail, LEAK_STOP_END))
                return -ENOENT;
        snprintf(evidence, n, "%.*s", (int) (len - head - tail), r + head);
        return 0;
}

void gw_training_leak_restore(struct gw_daemon *d, struct gw_djob *dj, const struct gw_job_event *ev, size_t n) {
        const struct gw_job *j = dj->job;
        char told[GW_LEAK_EVIDENCE_MAX] = "", stop[GW_LEAK_EVIDENCE_MAX] = "";
        bool reported = false;
        for (size_t i = 0; i < n && !reported; i++)
                reported = gw_training_leak_of_event(ev[i].kind, ev[i].message, told, sizeof told) == 0;
        bool stopped = leak_stop_evidence(j, stop, sizeof stop) == 0;
        if ((!reported && !stopped) || j->start_time <= 0)
                return;
        struct gw_train *t = train_for(d, dj);
        snprintf(t->leak_evidence, sizeof t->leak_evidence, "%s", reported ? told : stop);
        t->leak_reported = true;
        t->restart_sent = stopped;
        /* The leak's figures are the newest verdict's (gw_train_leak_json): judged again now,
         * over the per-epoch memory the store kept (train_for), not epochs from now. */
        update_eta(dj->job, t, d->now_wall);
        check_leak(d, j, t);
        /* Whether the report put a stop after the next checkpoint in hand is not in its event
         * in so many words: it is decided again, from the same job and policy. */
        struct gw_leak_respond_input in = respond_input(d, dj, t);
        in.flagged = true;
        in.reported = false;
        struct gw_leak_response r;
        t->restart_pending = stopped || (gw_leak_respond(&in, &r) == 0 && r.restart_pending);
}

double gw_training_eta_seconds(const struct gw_djob *dj, gw_usec_t now) {
        const struct gw_job *j = dj->job;
        if (j->state != GW_JOB_RUNNING || !j->eta)
                return NAN;
        return j->eta > now ? (double) (j->eta - now) / 1e6 : 0;
}

json_t *gw_training_job_json(struct gw_daemon *d, const struct gw_job *j) {
        struct gw_djob *dj = gw_jobmap_get(&d->jobs.map, j->id);
        const struct gw_train *t = gw_train_at(d, dj, j->attempt);
        if (j->state == GW_JOB_PENDING || j->state == GW_JOB_HELD)
                return json_pack("{s:o}", "prediction", gw_training_prediction_json(d, j));
        json_t *snaps = gw_train_snapshots_summary(d, j->id);
        bool running = t && j->state == GW_JOB_RUNNING;
        /* An ended job keeps its epoch end times (the store's): its page still draws them. */
        json_t *ends = running ? NULL : gw_train_epoch_ends_json(d, j);
        if (!t && !snaps && !ends)
                return json_null();
        json_t *o = running ? gw_train_eta_json(t, d->now_wall) : json_object();
        if (ends)
                json_object_set_new(o, "epoch_ends", ends);
        json_object_set_new(o, "leak", t ? gw_train_leak_json(j, t) : json_null());
        json_object_set_new(o, "snapshots", snaps ? snaps : json_null());
        return o;
}
