/* Idle-GPU reclamation on a cluster (nodes_watch.h).  A node's snapshot lists each GPU's
 * processes with their Slurm job (the agent reads /proc/PID/cgroup); a job gpuward handed to
 * Slurm has its Slurm id (exec_slurm.h).  So each round, a job's GPUs are the ones where a
 * process of its Slurm job runs, with the GPU's utilisation, and any other process there
 * (another job's, a rogue) counts as busy, as on one host.  The file signals (log, results.csv,
 * checkpoints) are read by reclaim_gather.c as on one host: the runs live on storage the
 * controller sees.  The stop is the executor's: scancel --signal=TERM --full, then scancel.
 *
 * Trust in the samples: a snapshot older than GW_NODES_WATCH_FRESH_ROUNDS agent intervals
 * says nothing about now (the agent, its node or the network is down), so it feeds no
 * decision; the job's events say so, and the idle window starts over once its node's
 * snapshots are fresh again, since what its GPUs did meanwhile is unknown.  A job is watched
 * from the first snapshot that lists one of its processes: time spent pending in Slurm, or
 * starting up before it touches a GPU, is not idle time. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/text.h"
#include "daemon/exec/exec_slurm.h"
#include "daemon/nodes/nodes.h"
#include "daemon/nodetelem/nodes_telem.h"
#include "daemon/nodewatch/nodes_watch.h"
#include "daemon/reclaim/reclaim_watch.h"
#include "daemon/base/jobclock.h"

#define WATCH_EVERY GW_USEC_PER_SEC
/* A job gone from every snapshot for this long is forgotten. */
#define FORGET_AFTER (30 * GW_USEC_PER_SEC)
#define KILL_REARM (5 * GW_USEC_PER_SEC)

static struct gw_slurm_seen *seen_get(struct gw_nodes *t, uint32_t slurm_id, gw_usec_t now) {
        struct gw_slurm_seen *s = (struct gw_slurm_seen *) gw_nodes_seen_find(t, slurm_id);
        if (s)
                return s;
        t->seen = gw_xrealloc(t->seen, (t->n_seen + 1) * sizeof *t->seen);
        s = &t->seen[t->n_seen++];
        *s = (struct gw_slurm_seen){ .slurm_id = slurm_id, .first_seen = now };
        return s;
}

/* ---- gpuward's own jobs ---- */

static void own_stale(struct gw_daemon *d, struct gw_djob *dj, struct gw_rwatch *w, const struct gw_nodes_job_gpus *jg,
                      uint32_t slurm_id) {
        const struct gw_job *j = dj->job;
        if (w->node_stale_told)
                return;
        char msg[400], age[32], iv[32];
        snprintf(msg, sizeof msg,
                 "idle watch paused: node %s's last snapshot of Slurm job %" PRIu32 " is %s old, more than %d of "
                 "its agent's intervals (%s): a stale snapshot never feeds a reclaim decision",
                 jg->stale->name, slurm_id, gw_format_duration(jg->stale_age, age, sizeof age),
                 GW_NODES_WATCH_FRESH_ROUNDS, gw_format_duration(jg->stale->interval, iv, sizeof iv));
        (void) gw_store_job_event(d->store, j->id, j->state, "idle", msg);
        log_info("job %lld: %s", (long long) j->id, msg);
        w->node_stale_told = true;
}

/* The first fresh look at the job's GPUs in this attempt, or the first after a stale spell:
 * the idle window starts here (gw_reclaim_rwatch made the watch for the attempt). */
static void own_fresh(struct gw_daemon *d, struct gw_djob *dj, struct gw_rwatch *w,
                      const struct gw_nodes_job_gpus *jg) {
        const struct gw_job *j = dj->job;
        gw_usec_t now = gw_job_clock_label(d, dj, d->now);
        if (w->node_stale_told) {
                char msg[300], at[16];
                snprintf(msg, sizeof msg,
                         "idle watch resumed: fresh snapshots of node %s again; the idle window "
                         "starts over at %s",
                         jg->nodes, gw_clock_text(now, at, sizeof at));
                (void) gw_store_job_event(d->store, j->id, j->state, "idle", msg);
                log_info("job %lld: %s", (long long) j->id, msg);
        }
        if (w->node_stale_told || !w->restored)
                w->state.last_active = now;
        w->node_seen = true;
        w->node_stale_told = false;
}

/* The idle watch and the job's telemetry (nodes_telem.h) for each of gpuward's jobs. */
static void watch_own(struct gw_daemon *d, struct gw_nodes *t) {
        struct gw_exec_slurm *s = slurm_of(d);
        for (size_t i = 0; i < d->jobs.n_running; i++) {
                struct gw_djob *dj = d->jobs.running[i];
                const struct gw_slurm_job *sj = gw_slurm_job_find(s, dj->job->id);
                if (!sj || sj->pending_in_slurm)
                        continue;
                struct gw_nodes_job_gpus jg;
                gw_nodes_job_gpus(t, sj->slurm_id, d->now, GW_NODES_WATCH_FRESH_ROUNDS, &jg);
                if (jg.n || jg.stale) {
                        struct gw_slurm_seen *seen = seen_get(t, sj->slurm_id, d->now);
                        seen->job = dj->job->id;
                        seen->last_seen = d->now;
                        snprintf(seen->user, sizeof seen->user, "%s", jg.user);
                }
                if (jg.n)
                        (void) gw_nodes_telem_job(d, dj, t, sj->slurm_id, GW_NODES_WATCH_FRESH_ROUNDS);
                struct gw_rwatch *w = gw_reclaim_rwatch(d, dj);
                if (!w)
                        continue;
                if (jg.stale) {
                        own_stale(d, dj, w, &jg, sj->slurm_id);
                        continue;
                }
                if (!jg.n)
                        continue; /* on no GPU yet: not started, or not using one */
                if (!w->node_seen || w->node_stale_told)
                        own_fresh(d, dj, w, &jg);
                gw_reclaim_watch_job(d, dj, jg.gpus, jg.n);
        }
}

/* ---- Slurm jobs gpuward did not submit ---- */

static bool slurm_id_ours(struct gw_exec_slurm *s, uint32_t id) {
        for (size_t i = 0; i < s->n_jobs; i++)
                if (s->jobs[i].slurm_id == id)
                        return true;
        return false;
}

static void scancel(struct gw_daemon *d, const struct gw_slurm_seen *f, bool term) {
        struct gw_exec_slurm *s = slurm_of(d);
        char id[16], conf[4200], *env[2];
        snprintf(id, sizeof id, "%" PRIu32, f->slurm_id);
        char *full[] = { s->scancel, "--signal=TERM", "--full", id, NULL }, *plain[] = { s->scancel, id, NULL };
        gw_slurm_client_env(conf, sizeof conf, env);
        pid_t pid = gw_slurm_spawn(term ? full : plain, env, false, 0, 0, NULL, 0, NULL, -1);
        if (pid < 0) {
                log_warn("Slurm job %s: cannot run scancel: %s", id, strerror((int) -pid));
                return;
        }
        gw_slurm_kid_add(s, pid);
        log_info("Slurm job %s (not gpuward's): scancel %s%s", id, term ? "--signal=TERM --full " : "", id);
}

/* What the decision says, done as slurm_foreign_jobs says: "watch" reports (the log, and
 * gpuward gpus through f->action), "reclaim" cancels through Slurm. */
static void foreign_act(struct gw_daemon *d, struct gw_slurm_seen *f, const struct gw_nodes_job_gpus *jg,
                        const struct gw_reclaim_decision *dec) {
        bool reclaim = d->cfg->slurm_foreign == GW_FOREIGN_RECLAIM;
        _cleanup_free_ char *said = gw_text_private_render(dec->evidence, true, NULL);
        const char *who = f->user[0] ? f->user : "?";
        struct gw_reclaim_state next = dec->next;
        switch (dec->action) {
        case GW_RECLAIM_WARN:
                log_info("Slurm job %" PRIu32 " (user %s, node %s, not submitted through gpuward): %s", f->slurm_id,
                         who, jg->nodes, said);
                f->action = "warned";
                break;
        case GW_RECLAIM_TERMINATE:
                if (!reclaim) {
                        if (!f->action || strcmp(f->action, "reported"))
                                log_info("Slurm job %" PRIu32 " (user %s, node %s, not submitted through gpuward): "
                                         "idle past its warning, not cancelled (slurm_foreign_jobs = watch): %s",
                                         f->slurm_id, who, jg->nodes, said);
                        f->action = "reported";
                        next.term_at = 0; /* asked again each round, reported once */
                        break;
                }
                log_info("Slurm job %" PRIu32 " (user %s, node %s, not submitted through gpuward): reclaim: %s; "
                         "SIGTERM through Slurm (slurm_foreign_jobs = reclaim)",
                         f->slurm_id, who, jg->nodes, said);
                scancel(d, f, true);
                f->action = "cancelled";
                break;
        case GW_RECLAIM_KILL:
                if (reclaim && d->now >= f->kill_rearm_at) {
                        scancel(d, f, false);
                        f->kill_rearm_at = d->now + KILL_REARM;
                }
                break;
        default:
                if (dec->warning_cleared) {
                        log_info("Slurm job %" PRIu32 " (user %s, not submitted through gpuward): active again: %s",
                                 f->slurm_id, who, said);
                        f->action = NULL;
                }
                break;
        }
        f->state = next;
        f->idle_for = dec->idle_for;
}

static void foreign_decide(struct gw_daemon *d, struct gw_nodes *t, struct gw_slurm_seen *f) {
        struct gw_nodes_job_gpus jg;
        gw_nodes_job_gpus(t, f->slurm_id, d->now, GW_NODES_WATCH_FRESH_ROUNDS, &jg);
        if (jg.stale) {
                if (!f->stale_told)
                        log_info("Slurm job %" PRIu32 ": idle watch paused: node %s's snapshot is too old to "
                                 "decide on",
                                 f->slurm_id, jg.stale->name);
                f->stale_told = true;
                f->idle_for = 0;
                return;
        }
        if (!jg.n)
                return;
        /* The decision's clock: the wall clock's labels on the loop's monotonic time. */
        gw_usec_t shift = d->now_wall - d->now, now = d->now + shift;
        if (f->stale_told) /* the stale spell's time is unknown: the window starts over */
                f->state.last_active = now;
        f->stale_told = false;
        struct tm tm;
        time_t secs = (time_t) (d->now_wall / GW_USEC_PER_SEC);
        struct gw_job nojob = { .idle_policy = NULL };
        const struct gw_reclaim_policy *p = gw_reclaim_policy_of(d, &nojob);
        struct gw_job_obs o = {
                .started_at = f->first_seen + shift,
                .gpus = jg.gpus,
                .n_gpus = jg.n,
                .results_rows = -1,
                .loss = NAN,
                .phase = GW_PHASE_UNKNOWN,
                .probe = GW_PROBE_NONE,
                .utc_offset = localtime_r(&secs, &tm) ? tm.tm_gmtoff : 0,
                .state = f->state,
        };
        struct gw_reclaim_decision dec;
        if (gw_reclaim_decide(&o, p, now, &dec) < 0)
                return;
        foreign_act(d, f, &jg, &dec);
}

/* Every Slurm job on the nodes' GPUs that is not gpuward's, each round; forgotten once
 * gone from every snapshot. */
static void watch_foreign(struct gw_daemon *d, struct gw_nodes *t) {
        struct gw_exec_slurm *s = slurm_of(d);
        for (size_t i = 0; i < t->n; i++) {
                size_t k, m;
                const json_t *g, *p;
                json_array_foreach (json_object_get(t->v[i].snapshot, "gpus"), k, g) {
                        json_array_foreach (json_object_get(g, "procs"), m, p) {
                                const json_t *job = json_object_get(p, "job");
                                if (!json_is_integer(job) || slurm_id_ours(s, (uint32_t) json_integer_value(job)))
                                        continue;
                                struct gw_slurm_seen *f = seen_get(t, (uint32_t) json_integer_value(job), d->now);
                                if (f->job) {
                                        /* gpuward's job a moment ago (its processes outlive its end
                                         * by a snapshot or two): a foreign one's clock starts now. */
                                        *f = (struct gw_slurm_seen){ .slurm_id = f->slurm_id, .first_seen = d->now };
                                }
                                f->last_seen = d->now;
                                snprintf(f->user, sizeof f->user, "%s",
                                         json_string_value(json_object_get(p, "user")) ?: "");
                        }
                }
        }
        for (size_t i = 0; i < t->n_seen;) {
                struct gw_slurm_seen *f = &t->seen[i];
                if (d->now - f->last_seen > FORGET_AFTER) {
                        *f = t->seen[--t->n_seen];
                        continue;
                }
                if (!f->job && d->cfg->slurm_foreign != GW_FOREIGN_IGNORE)
                        foreign_decide(d, t, f);
                i++;
        }
}

gw_usec_t gw_nodes_watch_tick(struct gw_daemon *d) {
        struct gw_nodes *t = d->nodes;
        if (gw_backend_placement(d) != GW_EXEC_PLACE_NODES || !t || !t->n)
                return GW_USEC_INFINITY;
        if (d->now < t->watch_next)
                return t->watch_next;
        t->watch_next = d->now + WATCH_EVERY;
        watch_own(d, t);
        gw_nodes_telem_sampled(d);
        watch_foreign(d, t);
        return t->watch_next;
}
