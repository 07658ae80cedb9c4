/* Active jobs in memory: an id map, the queue in order, the running set, and the
 * scheduling pass that feeds them to the pure scheduler. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/waitwhy.h"
#include "daemon/daemon.h"
#include "daemon/base/fairshare.h"
#include "daemon/life/jobarray.h"
#include "daemon/life/migslots.h"
#include "daemon/observe/observe.h"
#include "daemon/sharing/sharing.h"
#include "daemon/life/jobs.h"
#include "daemon/life/queue.h"
#include "daemon/observe/gpus.h"

#define TOMBSTONE ((struct gw_djob *) (uintptr_t) 1)

static size_t slot_of(int64_t id, size_t cap) {
        uint64_t h = (uint64_t) id * UINT64_C(0x9E3779B97F4A7C15);
        return (size_t) (h >> 16) & (cap - 1);
}

struct gw_djob *gw_jobmap_get(const struct gw_jobmap *m, int64_t id) {
        if (!m->cap)
                return NULL;
        for (size_t i = slot_of(id, m->cap), k = 0; k < m->cap; i = (i + 1) & (m->cap - 1), k++) {
                struct gw_djob *dj = m->slots[i];
                if (!dj)
                        return NULL;
                if (dj != TOMBSTONE && dj->job->id == id)
                        return dj;
        }
        return NULL;
}

static void map_grow(struct gw_jobmap *m) {
        struct gw_jobmap old = *m;
        m->cap = old.cap ? old.cap * 2 : 64;
        while (m->n * 2 >= m->cap)
                m->cap *= 2;
        m->slots = gw_xcalloc(m->cap, sizeof *m->slots);
        m->n = m->used = 0;
        for (size_t i = 0; i < old.cap; i++)
                if (old.slots[i] && old.slots[i] != TOMBSTONE)
                        gw_jobmap_put(m, old.slots[i]);
        free(old.slots);
}

void gw_jobmap_put(struct gw_jobmap *m, struct gw_djob *dj) {
        if ((m->used + 1) * 2 > m->cap)
                map_grow(m);
        size_t i = slot_of(dj->job->id, m->cap);
        while (m->slots[i] && m->slots[i] != TOMBSTONE)
                i = (i + 1) & (m->cap - 1);
        if (!m->slots[i])
                m->used++;
        m->slots[i] = dj;
        m->n++;
}

void gw_jobmap_del(struct gw_jobmap *m, int64_t id) {
        if (!m->cap)
                return;
        for (size_t i = slot_of(id, m->cap), k = 0; k < m->cap; i = (i + 1) & (m->cap - 1), k++) {
                struct gw_djob *dj = m->slots[i];
                if (!dj)
                        return;
                if (dj != TOMBSTONE && dj->job->id == id) {
                        m->slots[i] = TOMBSTONE;
                        m->n--;
                        return;
                }
        }
}

void gw_jobmap_free(struct gw_jobmap *m) {
        free(m->slots);
        memset(m, 0, sizeof *m);
}

/* Queue order: priority descending, then a preempted job first (it had its turn), then
 * submission (id) ascending. */
static bool before(const struct gw_job *a, const struct gw_job *b) {
        if (a->priority != b->priority)
                return a->priority > b->priority;
        return a->queue_first != b->queue_first ? a->queue_first : a->id < b->id;
}

void gw_queue_insert(struct gw_daemon *d, struct gw_djob *dj) {
        if (d->jobs.n_queue == d->jobs.cap_queue) {
                d->jobs.cap_queue = d->jobs.cap_queue ? d->jobs.cap_queue * 2 : 256;
                d->jobs.queue = gw_xrealloc(d->jobs.queue, d->jobs.cap_queue * sizeof *d->jobs.queue);
        }
        /* New jobs almost always go last: search from the end. */
        size_t lo = 0, hi = d->jobs.n_queue;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (before(d->jobs.queue[mid]->job, dj->job))
                        lo = mid + 1;
                else
                        hi = mid;
        }
        memmove(d->jobs.queue + lo + 1, d->jobs.queue + lo, (d->jobs.n_queue - lo) * sizeof *d->jobs.queue);
        d->jobs.queue[lo] = dj;
        d->jobs.n_queue++;
        gw_fair_queued(d, dj); /* placed by before(): fair share's pass sorts it in */
        d->jobs.n_queued++;
        d->jobs.sched_dirty = true;
}

static void array_remove(struct gw_djob **a, size_t *n, struct gw_djob *dj) {
        for (size_t i = *n; i-- > 0;)
                if (a[i] == dj) {
                        memmove(a + i, a + i + 1, (*n - i - 1) * sizeof *a);
                        (*n)--;
                        return;
                }
}

void gw_queue_remove(struct gw_daemon *d, struct gw_djob *dj) {
        array_remove(d->jobs.queue, &d->jobs.n_queue, dj);
        d->jobs.sched_dirty = true;
}

void gw_running_add(struct gw_daemon *d, struct gw_djob *dj) {
        if (d->jobs.n_running == d->jobs.cap_running) {
                d->jobs.cap_running = d->jobs.cap_running ? d->jobs.cap_running * 2 : 16;
                d->jobs.running = gw_xrealloc(d->jobs.running, d->jobs.cap_running * sizeof *d->jobs.running);
        }
        d->jobs.running[d->jobs.n_running++] = dj;
}

void gw_running_remove(struct gw_daemon *d, struct gw_djob *dj) {
        array_remove(d->jobs.running, &d->jobs.n_running, dj);
        d->jobs.sched_dirty = true;
}

/* Whether dj's dependency allows it to start; caches final answers. */
static enum gw_dep_status dep_status(struct gw_daemon *d, struct gw_djob *dj) {
        const struct gw_job *j = dj->job;
        if (j->after_job <= 0 || dj->dep_final)
                return j->after_job <= 0 ? GW_DEP_SATISFIED : dj->dep;
        struct gw_djob *other = gw_jobmap_get(&d->jobs.map, j->after_job);
        if (other)
                return GW_DEP_WAITING;
        enum gw_job_state st;
        if (gw_store_job_state(d->store, j->after_job, &st) < 0)
                st = GW_JOB_CANCELLED; /* vanished: treat as never completing */
        dj->dep = gw_dep_status_of(j->after_kind, st);
        dj->dep_final = dj->dep != GW_DEP_WAITING;
        return dj->dep;
}

static void fill_gpus(const struct gw_daemon *d, struct gw_sched_gpu *g) {
        for (unsigned i = 0; i < d->host.n_gpus; i++) {
                const struct gw_dgpu *dg = &d->host.gpus[i];
                uint64_t total = dg->info.mem_total;
                uint64_t used = dg->sampled && (dg->sample.valid & GW_GPU_HAS_MEM) ? dg->sample.mem_used : 0;
                g[i] = (struct gw_sched_gpu){
                        .index = (int) i,
                        .usable = gw_gpu_whole_usable(dg),
                        .mem_total = total,
                        .mem_free = total > used ? total - used : 0,
                        .job_id = dg->job_id,
                        .has_rogue = dg->rogue > 0,
                };
        }
}

/* Whether any usable GPU is unallocated: without one nothing can start, and a pass would
 * only recompute the same wait reasons (new jobs arrive with theirs already set). */
static bool any_gpu_free(const struct gw_sched_gpu *g, unsigned n) {
        for (unsigned i = 0; i < n; i++)
                if (g[i].usable && g[i].job_id == 0)
                        return true;
        return false;
}

/* A job runs as the account that submitted it or not at all: once that account is deleted
 * its uid may be the next account's, which would run it, release it and read its log.  A
 * job whose account is gone ends CANCELLED, as one whose dependency or booking can no longer
 * be met: withdrawn by the daemon before it ran.  One whose account cannot be looked up now
 * waits for the next round. */
static bool account_still_there(struct gw_daemon *d, struct gw_djob *dj) {
        char why[256];
        int r = gw_job_account_check(d, dj->job, why, sizeof why);
        if (r == 0) {
                dj->account_unread_told = false;
                return true;
        }
        if (r == -EIO) { /* once, not at every round it waits */
                if (!dj->account_unread_told)
                        log_warn("job %lld: not started while %s", (long long) dj->job->id, why);
                dj->account_unread_told = true;
        } else
                gw_job_end(d, dj, GW_JOB_CANCELLED, why, "user");
        return false;
}

/* backend = slurm: the host's GPUs are not the cluster's, so nothing is placed here.  Each
 * queued job whose dependency is met goes to Slurm at once (a retry's backoff as --begin),
 * which queues and places it (docs/CLUSTER.md); a booking's window is a Slurm reservation the
 * job goes into (exec_slurm_book.c), and quotas were applied at its submission. */
/* Whether the backend takes dj as the cluster is now: not yet (it waits for resources: the
 * cluster's GPU types not read yet), or never (its MIG profile is on no node since it was
 * submitted: it ends FAILED with the backend's words). */
static bool backend_admits(struct gw_daemon *d, struct gw_djob *dj) {
        char why[600];
        const char *field = "";
        int r = d->exec->admit ? d->exec->admit(d, dj->job, &field, why, sizeof why) : 0;
        if (r == -EAGAIN)
                dj->job->wait_reason = GW_REASON_RESOURCES;
        else if (r < 0)
                gw_job_end(d, dj, GW_JOB_FAILED, why, "slurm");
        return r >= 0;
}

static void schedule_slurm(struct gw_daemon *d) {
        size_t n = d->jobs.n_queue;
        _cleanup_free_ struct gw_djob **q = gw_xmalloc((n + 1) * sizeof *q);
        memcpy(q, d->jobs.queue, n * sizeof *q); /* starting and ending jobs reshape the queue */
        for (size_t i = 0; i < n; i++) {
                struct gw_djob *dj = q[i];
                struct gw_job *j = dj->job;
                if (j->state != GW_JOB_PENDING)
                        continue;
                enum gw_dep_status dep = dep_status(d, dj);
                if (dep == GW_DEP_NEVER) {
                        char why[128];
                        snprintf(why, sizeof why, "dependency never satisfied: job %lld did not %s",
                                 (long long) j->after_job, j->after_kind == GW_DEP_KIND_OK ? "complete" : "end");
                        gw_job_end(d, dj, GW_JOB_CANCELLED, why, "dependency");
                        continue;
                }
                /* A retry's backoff is Slurm's to wait out (sbatch --begin): the job is
                 * submitted at once, and Slurm holds it (reason BeginTime) until then. */
                j->wait_reason = dep == GW_DEP_WAITING ? GW_REASON_DEPENDENCY : GW_REASON_NONE;
                j->wait_why = 0; /* Slurm's reasons are squeue's */
                bool array = j->array_spec || j->array_job > 0;
                if (array && j->wait_reason == GW_REASON_NONE && !gw_array_may_start(d, dj)) {
                        gw_array_end_if_done(d, dj);
                        continue;
                }
                if (j->wait_reason == GW_REASON_NONE && !backend_admits(d, dj))
                        continue;
                if (j->wait_reason == GW_REASON_NONE && account_still_there(d, dj))
                        (void) (j->array_spec ? gw_array_start_task(d, dj, 0) : gw_job_start(d, dj, 0));
        }
}

/* A job's reasons from gw_sched_why: held is its array's %N where the job itself is not
 * held (the plan saw both as held), or both. */
static uint32_t why_of(const struct gw_job *j, uint32_t bits, bool array_blocked) {
        if (!array_blocked || !(bits & GW_WHY_BIT(GW_REASON_HELD)))
                return bits;
        bits |= GW_WHY_BIT(GW_REASON_ARRAY_LIMIT);
        return j->state == GW_JOB_HELD ? bits : bits & ~GW_WHY_BIT(GW_REASON_HELD);
}

const char *gw_queue_drained_words(const struct gw_daemon *d, const struct gw_job *j, char *buf, size_t n) {
        struct gw_why_gpu g[GW_SCHED_MAX_GPUS];
        struct gw_sched_gpu s[GW_SCHED_MAX_GPUS];
        fill_gpus(d, s); /* usable as the scheduler sees it */
        for (unsigned i = 0; i < d->host.n_gpus; i++)
                g[i] = (struct gw_why_gpu){
                        .index = (int) i,
                        .usable = s[i].usable,
                        .drained = d->host.gpus[i].drained,
                        .mem_total = d->host.gpus[i].info.mem_total,
                        .why = d->host.gpus[i].drain_reason,
                };
        return gw_why_drained(j->ngpus, j->gpu_mem, g, d->host.n_gpus, buf, n);
}

const char *gw_job_drained_view(const struct gw_daemon *d, const struct gw_job *j, char *buf, size_t n) {
        bool waits = j->state == GW_JOB_PENDING || j->state == GW_JOB_HELD;
        if (!waits || !((j->wait_why | gw_why_bit(j->wait_reason)) & GW_WHY_BIT(GW_REASON_DRAINED)))
                return NULL;
        return gw_queue_drained_words(d, j, buf, n);
}

/* The GPUs no running job holds and no start of plan takes: none left means no job after the
 * planned ones could have started in this pass. */
static uint64_t gpus_left(const struct gw_sched_input *in, const struct gw_sched_plan *plan) {
        uint64_t left = 0;
        for (size_t i = 0; i < in->n_gpus; i++)
                if (in->gpus[i].usable && in->gpus[i].job_id == 0)
                        left |= UINT64_C(1) << in->gpus[i].index;
        for (size_t i = 0; i < in->n_running; i++)
                left &= ~in->running[i].gpu_mask;
        for (size_t i = 0; i < plan->n_starts; i++)
                left &= ~plan->starts[i].gpu_mask;
        return left;
}

/* Plans the first n queued jobs and starts what the plan says.  With only_if_exact, nothing
 * is changed and false returned when a GPU is left over after them: a job further back might
 * have taken it. */
static bool plan_and_start(struct gw_daemon *d, const struct gw_sched_gpu *gpus, const struct gw_sched_fair *fair,
                           size_t n, bool only_if_exact) {
        _cleanup_free_ struct gw_sched_job *pending = gw_xmalloc(n * sizeof *pending);
        _cleanup_free_ struct gw_sched_start *starts = gw_xmalloc(n * sizeof *starts);
        _cleanup_free_ enum gw_job_reason *reasons = gw_xmalloc(n * sizeof *reasons);
        _cleanup_free_ uint32_t *all_why = gw_xmalloc(n * sizeof *all_why);
        _cleanup_free_ struct gw_sched_running *running = gw_xmalloc((d->jobs.n_running + 1) * sizeof *running);
        for (size_t i = 0; i < n; i++) {
                struct gw_djob *dj = d->jobs.queue[i];
                pending[i] = (struct gw_sched_job){
                        .id = dj->job->id,
                        .priority = dj->job->priority,
                        .ngpus = dj->job->ngpus,
                        .gpu_mem = dj->job->gpu_mem,
                        .time_limit = dj->job->time_limit,
                        /* An array whose tasks may not start now (its %N) waits as if held. */
                        .held = dj->job->state == GW_JOB_HELD ||
                                ((dj->job->array_spec || dj->job->array_job > 0) && !gw_array_may_start(d, dj)),
                        .backoff = dj->job->not_before > 0,
                        .dep = dep_status(d, dj),
                        .first = dj->job->queue_first,
                };
        }
        gw_lifecycle_sched_filter(d, pending, n); /* bookings, quotas (lifecycle_features.c) */
        gw_fair_users(d, pending, n);
        _cleanup_free_ bool *on_slices = gw_xcalloc(n, sizeof *on_slices);
        gw_mig_set_aside(d, pending, n, on_slices);
        _cleanup_free_ size_t *order = fair->factor ? gw_xmalloc(2 * n * sizeof *order) : NULL;
        for (size_t i = 0; i < d->jobs.n_running; i++)
                running[i] = (struct gw_sched_running){
                        .id = d->jobs.running[i]->job->id,
                        .gpu_mask = d->jobs.running[i]->job->gpu_mask,
                        .end = d->jobs.running[i]->limit_at,
                };
        struct gw_sched_input in = { gpus, d->host.n_gpus, pending, n, running, d->jobs.n_running };
        struct gw_sched_plan plan = { .starts = starts, .reasons = reasons, .order = order };
        if (gw_sched_plan_fair(&in, fair->factor ? fair : NULL, d->now, &plan) < 0) {
                if (only_if_exact)
                        return false;
                log_err("scheduler refused its input; nothing started");
                return true;
        }
        if (only_if_exact && gpus_left(&in, &plan))
                return false;
        if (gw_sched_why(&in, &plan, all_why) < 0)
                memset(all_why, 0, n * sizeof *all_why); /* only each job's main reason is told */
        _cleanup_free_ struct gw_mig_start *mig_starts = gw_xmalloc(n * sizeof *mig_starts);
        size_t n_mig = gw_mig_plan(d, on_slices, plan.order, n, reasons, mig_starts);
        /* Copy what we need first: starting and ending jobs reshapes the queue. */
        _cleanup_free_ struct gw_djob **never = gw_xmalloc(n * sizeof *never);
        size_t n_never = 0;
        _cleanup_free_ struct gw_djob **arrays_blocked = gw_xmalloc(n * sizeof *arrays_blocked);
        size_t n_blocked = 0;
        for (size_t i = 0; i < n; i++) {
                struct gw_job *j = d->jobs.queue[i]->job;
                bool array_blocked = pending[i].held && j->state != GW_JOB_HELD;
                j->wait_reason = array_blocked ? GW_REASON_ARRAY_LIMIT : reasons[i];
                j->wait_why = why_of(j, all_why[i], array_blocked);
                if (array_blocked && j->array_spec)
                        arrays_blocked[n_blocked++] = d->jobs.queue[i];
                if (pending[i].dep == GW_DEP_NEVER || d->jobs.queue[i]->booking_closed)
                        never[n_never++] = d->jobs.queue[i];
        }
        for (size_t i = 0; i < plan.n_starts; i++) {
                struct gw_djob *dj = gw_jobmap_get(&d->jobs.map, starts[i].job_id);
                if (!dj || !account_still_there(d, dj))
                        continue;
                /* Again: a task started earlier in this pass counts towards its array's %N. */
                if (dj->job->array_spec || dj->job->array_job > 0) {
                        if (gw_array_may_start(d, dj))
                                (void) (dj->job->array_spec ? gw_array_start_task(d, dj, starts[i].gpu_mask)
                                                            : gw_job_start(d, dj, starts[i].gpu_mask));
                        continue;
                }
                (void) gw_job_start(d, dj, starts[i].gpu_mask); /* refused: it stays queued */
        }
        for (size_t i = 0; i < n_mig; i++) {
                struct gw_djob *dj = gw_jobmap_get(&d->jobs.map, mig_starts[i].job_id);
                if (dj && account_still_there(d, dj))
                        (void) gw_mig_start(d, dj, &mig_starts[i]); /* refused: it stays queued */
                free(mig_starts[i].uuids);
        }
        for (size_t i = 0; i < n_blocked; i++)
                gw_array_end_if_done(d, arrays_blocked[i]);
        for (size_t i = 0; i < n_never; i++) {
                char why[128];
                if (never[i]->booking_closed) {
                        snprintf(why, sizeof why, "its booking %lld ended or was released before it could start",
                                 (long long) never[i]->job->booking_id);
                        gw_job_end(d, never[i], GW_JOB_CANCELLED, why, "booking");
                        continue;
                }
                snprintf(why, sizeof why, "dependency never satisfied: job %lld did not %s",
                         (long long) never[i]->job->after_job,
                         never[i]->job->after_kind == GW_DEP_KIND_OK ? "complete" : "end");
                gw_job_end(d, never[i], GW_JOB_CANCELLED, why, "dependency");
        }
        return true;
}

/* A pass plans the whole queue, every job's reasons with it: O(queue).  While a long queue
 * drains, each end frees a GPU that the first jobs of the queue take, and planning the
 * thousands behind them again changes nothing but costs most of the pass.  So between whole
 * passes, at most GW_SCHED_WHOLE_EVERY apart, a pass plans the first GW_SCHED_WINDOW jobs
 * only, and is kept only when they take every GPU left (no job further back could have
 * started: the plan is in queue order, and a job's outcome depends only on the jobs before
 * it); the jobs further back keep the reasons of the last whole pass until the next. */
gw_usec_t gw_schedule_tick(struct gw_daemon *d) {
        if (!d->jobs.tail_stale)
                return GW_USEC_INFINITY;
        gw_usec_t due = d->jobs.whole_pass_at + GW_SCHED_WHOLE_EVERY;
        if (d->now < due)
                return due;
        d->jobs.sched_dirty = true;
        return GW_USEC_INFINITY;
}

void gw_schedule(struct gw_daemon *d) {
        d->jobs.sched_dirty = false;
        if (d->jobs.n_queue == 0) {
                d->jobs.tail_stale = false;
                return;
        }
        if (gw_backend_placement(d) == GW_EXEC_PLACE_NODES) {
                schedule_slurm(d);
                return;
        }
        struct gw_sched_gpu gpus[GW_SCHED_MAX_GPUS];
        fill_gpus(d, gpus);
        struct gw_sched_fair fair;
        bool full = !any_gpu_free(gpus, d->host.n_gpus) && !d->jobs.deps_changed && !d->sharing->n_bookings &&
                    !d->jobs.tail_stale && !gw_mig_any_free(d);
        gw_fair_pass(d, full, &fair); /* while full too: the factors the queued jobs show, their order */
        if (full)
                return;
        d->jobs.deps_changed = false;
        bool window = d->jobs.n_queue > GW_SCHED_WINDOW && d->jobs.whole_pass_at &&
                      d->now - d->jobs.whole_pass_at < GW_SCHED_WHOLE_EVERY && !gw_mig_any_free(d);
        if (window && plan_and_start(d, gpus, &fair, GW_SCHED_WINDOW, true)) {
                d->jobs.tail_stale = true;
                return;
        }
        d->jobs.whole_pass_at = d->now;
        d->jobs.tail_stale = false;
        (void) plan_and_start(d, gpus, &fair, d->jobs.n_queue, false);
}
