/* Preemption in the engine: core/preempt.h chooses the victims, as in gpuwardd (preempt.c).
 *
 * The model (this file's assumption, docs/SIMULATOR.md): every job of priority <= 0 that
 * checkpoints (ckpt_interval > 0) and is not an interactive session was submitted
 * --preemptible, and resumes from its checkpoint; a victim stops a second after its next
 * checkpoint (the daemon watches its run folder while the stop waits), or when preempt_grace
 * is over if that comes first (a stalled job never checkpoints again).  Victims are chosen by
 * core/preempt.h from their checkpoint spacing (the daemon's: their own epoch times): one
 * whose checkpoint is not due within the grace is left until it is.  One preemption at a
 * time, for the first of the queue's highest jobs (not in a retry's backoff or a booking)
 * that gets victims, as the daemon does. */
#include <errno.h>
#include <stdlib.h>

#include "base/cleanup.h"
#include "core/preempt.h"
#include "sim/sim_engine.h"

/* The daemon watches a waiting victim's run folder (inotify): its stop follows the checkpoint
 * within about a second, not at the next sample. */
#define STOP_AFTER_CKPT GW_SIM_SEC

static bool preemptible(const struct gw_sim_job *j) {
        return j->priority <= 0 && j->ckpt_interval > 0 && !j->interactive;
}

/* What the decision is told of one running job. */
static struct gw_preempt_running running_of(const struct eng *e, int64_t ji) {
        const struct gw_sim_job *j = &e->w->jobs[ji];
        const struct jrun *r = &e->jr[ji];
        gw_usec_t w = gw_sim_work_at(j, &r->a, e->now), ck = gw_sim_ckpt_at(j, r->a.work_start, w);
        return (struct gw_preempt_running){
                .id = ji + 1,
                .gpu_mask = r->mask,
                .priority = j->priority,
                .start_time = r->a.start,
                .ckpt_time = ck > r->a.work_start ? r->a.start + (ck - r->a.work_start) : 0,
                /* As the daemon learns it from the job's own epoch times. */
                .ckpt_every = j->ckpt_interval,
                .preemptible = preemptible(j),
                .resumable = true,
                .stopping = r->preempting,
        };
}

/* The victim's stop: a sample after its next checkpoint, within the grace. */
static void schedule_stop(struct eng *e, int64_t ji) {
        const struct gw_sim_job *j = &e->w->jobs[ji];
        struct jrun *r = &e->jr[ji];
        gw_usec_t w = gw_sim_work_at(j, &r->a, e->now), ci = j->ckpt_interval;
        gw_usec_t next = r->a.start + ((w / ci + 1) * ci - r->a.work_start) + STOP_AFTER_CKPT;
        gw_usec_t limit = e->now + e->cfg->preempt_grace, stop = next < limit ? next : limit;
        if (r->a.stall_wall <= next)
                stop = limit;
        if (stop >= r->end_at)
                return; /* it ends before by itself */
        r->end_at = stop;
        r->end_cause = GW_SIM_END_PREEMPT;
        r->preempting = true;
        e->n_preempting++;
        gw_sim_heap_push(&e->heap, stop, GW_SIM_EV_END, ji, r->attempts);
}

/* The next job of the queue from *pos a preemption may serve, *pos moved past it; -1 none. */
static int64_t preemptor_from(const struct eng *e, size_t *pos) {
        for (; *pos < e->pq.n; ++*pos) {
                int64_t ji = e->pq.v[*pos];
                if (ji >= 0 && !e->jr[ji].backoff && !e->jr[ji].booking) {
                        ++*pos;
                        return ji;
                }
        }
        return -1;
}

/* The node's plan for the preemptor pi (plan->n == 0: none), and the GPUs free for it there. */
static int node_plan(struct eng *e, int node, int64_t pi, struct gw_preempt_running *run, struct gw_preempt_plan *plan,
                     uint64_t *ret_free) {
        const struct gw_sim_job *pj = &e->w->jobs[pi];
        const struct node *nd = &e->nodes[node];
        struct gw_preempt_need need = { .ngpus = pj->ngpus, .priority = pj->priority, .grace = e->cfg->preempt_grace };
        size_t n = 0;
        plan->n = 0;
        /* Only GPUs its bookings' calendar lets it take: stopping others would serve nobody. */
        int k = gw_sim_book_allowed(e, node, pi, &need.allowed);
        if (k < 0 || need.allowed == GW_SIM_NONE_ALLOWED)
                return k < 0 ? k : 0;
        for (int g = 0; g < nd->n_gpus; g++)
                if (nd->gpu_job[g] == 0)
                        need.free_mask |= UINT64_C(1) << g;
        for (size_t i = 0; i < e->n_running && n < GW_PREEMPT_MAX; i++)
                if (e->jr[e->running[i]].node == node)
                        run[n++] = running_of(e, e->running[i]);
        *ret_free = need.free_mask;
        return gw_preempt_decide(&need, run, n, e->now, plan);
}

/* A plan's cost: the GPU-seconds of work it is expected to lose, then how long the preemptor
 * waits for its last stop. */
static void plan_cost(const struct eng *e, const struct gw_preempt_plan *p, double *lost, long *wait) {
        *lost = 0;
        *wait = 0;
        for (size_t v = 0; v < p->n; v++) {
                *lost += (double) p->victims[v].expect_lost_s * e->w->jobs[p->victims[v].id - 1].ngpus;
                if (p->victims[v].stop_in_s > *wait)
                        *wait = p->victims[v].stop_in_s;
        }
}

static void carry_out(struct eng *e, int node, int64_t pi, const struct gw_preempt_plan *plan, uint64_t free_mask) {
        for (size_t v = 0; v < plan->n; v++)
                schedule_stop(e, plan->victims[v].id - 1);
        e->preempt_for = pi + 1;
        e->preempt_node = node;
        e->preempt_mask = plan->mask | free_mask;
        e->preempt_until = e->now + e->cfg->preempt_grace + e->cfg->sample;
}

/* Whether the preemptor still waits for the GPUs kept for it. */
static bool reserving(struct eng *e) {
        if (e->preempt_for && (e->jr[e->preempt_for - 1].st != J_PENDING || e->now >= e->preempt_until))
                e->preempt_for = 0;
        return e->preempt_for != 0;
}

void gw_sim_preempt_filter(struct eng *e, int node, size_t n) {
        if (!e->cfg->preempt || !reserving(e) || node != e->preempt_node)
                return;
        uint64_t all = e->nodes[node].n_gpus >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << e->nodes[node].n_gpus) - 1;
        for (size_t i = 0; i < n; i++) {
                if (e->sj[i].id == e->preempt_for)
                        continue;
                uint64_t left = (e->sj[i].allowed ? e->sj[i].allowed : all) & ~e->preempt_mask;
                if (left)
                        e->sj[i].allowed = left;
                else
                        e->sj[i].none_allowed = true;
        }
}

/* The plan for the preemptor pi on the node whose plan loses least, carried out; *ret_done:
 * whether there was one.  0 or -errno. */
static int preempt_for(struct eng *e, int64_t pi, bool *ret_done) {
        const struct gw_sim_job *pj = &e->w->jobs[pi];
        struct gw_preempt_running run[GW_PREEMPT_MAX];
        struct gw_preempt_plan best = { .n = 0 }, plan;
        int best_node = -1;
        uint64_t best_free = 0, free_mask = 0;
        double best_lost = 0, lost;
        long best_wait = 0, wait;
        /* The node whose plan loses least (then makes it wait least), as a cluster's daemons
         * would offer theirs: not the first node where some plan exists. */
        for (int node = 0; node < e->n_nodes; node++) {
                if (e->nodes[node].n_gpus < pj->ngpus)
                        continue;
                int k = node_plan(e, node, pi, run, &plan, &free_mask);
                if (k < 0)
                        return k;
                if (!plan.n)
                        continue;
                plan_cost(e, &plan, &lost, &wait);
                if (best_node < 0 || lost < best_lost || (lost == best_lost && wait < best_wait)) {
                        best = plan;
                        best_node = node;
                        best_free = free_mask;
                        best_lost = lost;
                        best_wait = wait;
                }
        }
        *ret_done = best_node >= 0;
        if (best_node >= 0)
                carry_out(e, best_node, pi, &best, best_free);
        return 0;
}

int gw_sim_preempt_pass(struct eng *e) {
        if (e->n_preempting || reserving(e) || e->n_running == 0)
                return 0;
        size_t pos = e->pq.front;
        bool done = false;
        for (int t = 0; t < GW_PREEMPT_PREEMPTORS && !done; t++) {
                int64_t pi = preemptor_from(e, &pos);
                if (pi < 0)
                        return 0;
                int k = preempt_for(e, pi, &done);
                if (k < 0)
                        return k;
        }
        return 0;
}

bool gw_sim_preempt_ended(struct eng *e, int64_t ji, enum gw_sim_end cause, gw_usec_t w, gw_usec_t ck) {
        const struct gw_sim_job *j = &e->w->jobs[ji];
        struct jrun *r = &e->jr[ji];
        double lost = gw_sim_gpu_h(j->ngpus, w - ck);
        e->n_preempting--;
        r->preempting = false;
        if (cause != GW_SIM_END_PREEMPT)
                return false;
        e->res->preemptions++;
        e->res->lost_gpu_h += lost;
        e->res->lost_preempt_gpu_h += lost;
        gw_sim_release(e, ji);
        if (r->booking)
                gw_sim_book_job_ended(e, ji);
        if (ck > r->a.work_start)
                r->a.prev_ckpt_wall = r->a.start + (ck - r->a.work_start);
        r->a.work_start = ck;
        r->st = J_PENDING;
        r->backoff = false;
        gw_sim_pq_insert(&e->pq, ji);
        return true;
}

void gw_sim_preempt_finish(struct eng *e, gw_usec_t end) {
        struct gw_sim_result *res = e->res;
        _cleanup_free_ double *w = malloc((e->w->n ? e->w->n : 1) * sizeof(double));
        size_t n = 0;
        if (!w)
                return;
        for (size_t i = 0; i < e->w->n; i++) {
                const struct jrun *r = &e->jr[i];
                if (r->st == J_FUTURE || e->w->jobs[i].priority <= 0)
                        continue;
                w[n++] = r->started ? e->waits[i]
                                    : (double) (end - (GW_SIM_EPOCH + e->w->jobs[i].submit)) / (double) GW_SIM_SEC;
        }
        res->high_jobs = n;
        res->high_wait_p50_s = gw_sim_percentile(w, n, 50);
        res->high_wait_p90_s = gw_sim_percentile(w, n, 90);
}

void gw_sim_print_preempt(FILE *f, const struct gw_sim_result *r, size_t n) {
        fprintf(f, "\nhigh class (priority > 0) and preemption\n%-24s %9s %12s %12s %11s %14s %12s\n", "config",
                "high jobs", "wait p50 h", "wait p90 h", "preempted", "lost to it GPUh", "lost GPUh");
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%-24s %9zu %12.2f %12.2f %11zu %14.1f %12.1f\n", r[i].name, r[i].high_jobs,
                        r[i].high_wait_p50_s / 3600.0, r[i].high_wait_p90_s / 3600.0, r[i].preemptions,
                        r[i].lost_preempt_gpu_h, r[i].lost_gpu_h);
}

void gw_sim_workload_high(struct gw_sim_workload *w, double frac, uint64_t seed) {
        for (size_t i = 0; i < w->n; i++)
                if ((double) (gw_sim_hash(seed, i, 0x9e3779b97f4a7c15u, 7) >> 11) / (double) (UINT64_C(1) << 53) < frac)
                        w->jobs[i].priority = 1;
}
