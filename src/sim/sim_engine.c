/* The discrete-event engine: the shell of a pretend daemon on a virtual clock.
 *
 * One loop: pop every event of the next instant (ends, the observation sample, backoffs,
 * submissions, in that order), then, if GPUs were freed or jobs added, one scheduler pass.
 * Every decision is the core's; this file only keeps state, synthesises observations
 * (sim_observe.c) and counts. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/leak_respond.h"
#include "sim/sim_engine.h"

/* A job started on a broken GPU (a gpu_fault not drained) crashes this long in. */
#define FAULT_AFTER (5 * GW_SIM_MIN)

const struct gw_reclaim_policy gw_sim_princeton_policy = {
        "princeton", true, 1, 120 * GW_SIM_MIN, 0, 0, 0,
};

double gw_sim_gpu_h(double gpus, gw_usec_t d) { return gpus * (double) d / (double) GW_SIM_HOUR; }

/* ---- the time series ---- */

static void series_add(struct eng *e, double **arr, gw_usec_t from, gw_usec_t to, double gpus) {
        struct gw_sim_result *r = e->res;
        gw_usec_t b = r->bucket;

        if (b <= 0 || to <= from)
                return;
        from -= GW_SIM_EPOCH;
        to -= GW_SIM_EPOCH;
        size_t last = (size_t) ((to - 1) / b);
        if (last >= r->n_buckets) {
                size_t n = last + 1 > r->n_buckets * 2 ? last + 1 : r->n_buckets * 2;
                r->alloc = gw_xrealloc(r->alloc, n * sizeof(double));
                r->busy = gw_xrealloc(r->busy, n * sizeof(double));
                for (size_t i = r->n_buckets; i < n; i++)
                        r->alloc[i] = r->busy[i] = 0;
                r->n_buckets = n;
        }
        for (size_t i = (size_t) (from / b); i <= last; i++) {
                gw_usec_t lo = (gw_usec_t) i * b, hi = lo + b;
                gw_usec_t s = from > lo ? from : lo, t = to < hi ? to : hi;
                if (t > s)
                        (*arr)[i] += gpus * (double) (t - s) / (double) b;
        }
}

/* GPU-time of an attempt from its start to `to`: held, busy (progressing, not validating,
 * times the share of non-zero samples), stalled. */
static void account(struct eng *e, const struct gw_sim_job *j, const struct jrun *r, gw_usec_t to) {
        const struct gw_sim_attempt *a = &r->a;
        double g = j->ngpus, busy_rate = g * (1.0 - j->zero_frac);
        gw_usec_t act_end = to < a->stall_wall ? to : a->stall_wall;
        gw_usec_t act = act_end > a->start ? act_end - a->start : 0;
        gw_usec_t val_lo = 0, val_hi = 0;

        if (j->val_at != GW_SIM_NONE && j->val_len > 0) {
                gw_usec_t w_end = a->work_start + act;
                gw_usec_t lo = j->val_at > a->work_start ? j->val_at : a->work_start;
                gw_usec_t hi = j->val_at + j->val_len < w_end ? j->val_at + j->val_len : w_end;
                if (hi > lo) {
                        val_lo = a->start + (lo - a->work_start);
                        val_hi = a->start + (hi - a->work_start);
                }
        }
        e->res->held_gpu_h += gw_sim_gpu_h(g, to - a->start);
        e->res->user_gpu_h[j->user] += gw_sim_gpu_h(g, to - a->start);
        e->res->busy_gpu_h += gw_sim_gpu_h(busy_rate, act - (val_hi - val_lo));
        if (to > a->stall_wall)
                e->res->stalled_gpu_h += gw_sim_gpu_h(g, to - a->stall_wall);
        series_add(e, &e->res->alloc, a->start, to, g);
        series_add(e, &e->res->busy, a->start, a->start + act, busy_rate);
        series_add(e, &e->res->busy, val_lo, val_hi, -busy_rate);
}

/* ---- starting and ending attempts ---- */

static gw_usec_t at_work(const struct gw_sim_attempt *a, gw_usec_t w) { return a->start + (w - a->work_start); }

/* Whether a GPU of the attempt's mask is broken (a gpu_fault not repaired yet). */
static bool on_broken_gpu(const struct eng *e, const struct jrun *r) {
        const struct node *nd = &e->nodes[r->node];
        for (uint64_t m = r->mask; m; m &= m - 1)
                if (nd->broken_until[__builtin_ctzll(m)] > e->now)
                        return true;
        return false;
}

/* Decides how the attempt that starts now will end if nothing stops it first. */
static int plan_fate(struct eng *e, int64_t ji) {
        const struct gw_sim_job *j = &e->w->jobs[ji];
        struct jrun *r = &e->jr[ji];
        struct gw_sim_attempt *a = &r->a;
        gw_usec_t now = e->now, w0 = a->work_start, stop = j->runtime, end = GW_USEC_INFINITY;
        enum gw_sim_end cause = GW_SIM_END_FINISH;

        r->crash_class = (uint8_t) j->fail_class;
        if (j->fail_at != GW_SIM_NONE && j->fail_at >= w0 && (j->fail_repeat || !r->failed_once) && j->fail_at < stop) {
                stop = j->fail_at;
                cause = GW_SIM_END_CRASH;
        }
        a->stall_wall = GW_USEC_INFINITY;
        if (j->stall_at != GW_SIM_NONE && j->stall_at >= w0 && j->stall_at < stop)
                a->stall_wall = at_work(a, j->stall_at);
        else if (stop != GW_USEC_INFINITY)
                end = at_work(a, stop);
        /* A leak's oom or restart stop, if it comes before the job stops progressing. */
        gw_usec_t w_stop = a->stall_wall != GW_USEC_INFINITY ? j->stall_at : stop;
        int k = gw_sim_leak_fate(e, ji, w_stop, &end, &cause);
        if (k < 0)
                return k;
        if (a->stall_wall != GW_USEC_INFINITY && end <= a->stall_wall)
                a->stall_wall = GW_USEC_INFINITY;
        if (on_broken_gpu(e, r) && now + FAULT_AFTER < end && now + FAULT_AFTER < a->stall_wall) {
                end = now + FAULT_AFTER;
                cause = GW_SIM_END_CRASH;
                r->crash_class = GW_FAILURE_GPU_FAULT;
        }
        gw_usec_t limit = now + j->time_limit;
        if (r->booking && e->bk[r->booking - 1].end < limit)
                limit = e->bk[r->booking - 1].end; /* gw_sharing_limit: the booking's end */
        r->limit_at = limit;
        if (limit < end) {
                end = limit;
                cause = GW_SIM_END_TIMEOUT;
        }
        if (j->cancel_at != GW_SIM_NONE) {
                gw_usec_t c = r->first_start + j->cancel_at;
                if (c < now)
                        c = now;
                if (c < end) {
                        end = c;
                        cause = GW_SIM_END_CANCEL;
                }
        }
        r->end_at = end;
        r->end_cause = (uint8_t) cause;
        return 0;
}

static const struct gw_reclaim_policy *policy_for(const struct eng *e, const struct gw_sim_job *j) {
        if (e->cfg->reclaim == GW_SIM_RECLAIM_UTIL_ONLY)
                return &e->cfg->policy;
        if (j->profile[0]) {
                const struct gw_reclaim_policy *p = gw_reclaim_policy_find(NULL, 0, j->profile);
                if (p)
                        return p;
        }
        return &e->cfg->policy;
}

static int start_job(struct eng *e, int64_t ji, int node, uint64_t mask) {
        const struct gw_sim_job *j = &e->w->jobs[ji];
        struct jrun *r = &e->jr[ji];
        struct node *nd = &e->nodes[node];

        r->st = J_RUNNING;
        r->attempts++;
        r->node = node;
        r->mask = mask;
        r->a.start = e->now;
        r->a.attempt = r->attempts;
        r->a.job_id = ji + 1;
        r->a.first_gpu = nd->base + __builtin_ctzll(mask);
        r->rs = (struct gw_reclaim_state){ 0 };
        r->policy = policy_for(e, j);
        r->leak_flag_wall = GW_USEC_INFINITY;
        r->leak_oom = false;
        r->preempting = false;
        if (!r->started) {
                r->started = true;
                r->first_start = e->now;
                e->waits[ji] = (double) (e->now - (GW_SIM_EPOCH + j->submit)) / (double) GW_SIM_SEC;
                e->res->started++;
        }
        int k = plan_fate(e, ji);
        if (k < 0)
                return k;
        if (r->booking && e->now < e->bk[r->booking - 1].end)
                e->res->booked_started += r->attempts == 1;
        for (uint64_t m = mask; m; m &= m - 1)
                nd->gpu_job[__builtin_ctzll(m)] = ji + 1;
        nd->n_free -= j->ngpus;
        e->n_free -= j->ngpus;
        e->user_gpus[j->user] += j->ngpus;
        r->running_pos = e->n_running;
        e->running[e->n_running++] = ji;
        gw_sim_heap_push(&e->heap, r->end_at, GW_SIM_EV_END, ji, r->attempts);
        return 0;
}

void gw_sim_release(struct eng *e, int64_t ji) {
        const struct gw_sim_job *j = &e->w->jobs[ji];
        struct jrun *r = &e->jr[ji];
        struct node *nd = &e->nodes[r->node];

        for (uint64_t m = r->mask; m; m &= m - 1)
                nd->gpu_job[__builtin_ctzll(m)] = 0;
        nd->n_free += j->ngpus;
        e->n_free += j->ngpus;
        e->user_gpus[j->user] -= j->ngpus;
        int64_t moved = e->running[--e->n_running];
        e->running[r->running_pos] = moved;
        e->jr[moved].running_pos = r->running_pos;
        r->mask = 0;
        e->dirty = true;
}

static void mark(struct gw_attempt_mark *m, bool valid, int64_t epoch, int64_t ckpt) {
        *m = (struct gw_attempt_mark){ .valid = valid, .epoch = epoch };
        if (ckpt > 0)
                (void) snprintf(m->ckpt, sizeof(m->ckpt), "ckpt-%lld", (long long) ckpt);
}

/* Asks the retry policy; on a retry the job goes back to the queue, resuming from its
 * checkpoint after the backoff.  Returns whether it was retried. */
static int maybe_retry(struct eng *e, int64_t ji, const struct gw_failure_verdict *v, gw_usec_t w, gw_usec_t ck,
                       bool oom_explained, bool *ret_retried) {
        const struct gw_sim_job *j = &e->w->jobs[ji];
        struct jrun *r = &e->jr[ji];
        struct gw_retry_state s = { .attempts = r->attempts, .oom_explained = oom_explained };
        struct gw_retry_decision d;
        int64_t epoch = j->ckpt_interval > 0 ? w / j->ckpt_interval : -1;
        int64_t ck_n = j->ckpt_interval > 0 ? ck / j->ckpt_interval : 0;

        *ret_retried = false;
        mark(&s.prev, r->prev_valid, r->prev_epoch, r->prev_ckpt);
        mark(&s.last, true, epoch, ck_n);
        int k = gw_retry_decide(&e->cfg->retry_policy, &s, v, e->now, &d);
        if (k < 0)
                return k;
        if (d.why == GW_RETRY_WHY_CRASH_LOOP)
                e->res->crash_loops++;
        if (!d.retry)
                return 0;
        e->res->retries++;
        r->prev_valid = true;
        r->prev_epoch = epoch;
        r->prev_ckpt = ck_n;
        if (j->ckpt_interval > 0 && ck > r->a.work_start)
                r->a.prev_ckpt_wall = at_work(&r->a, ck);
        r->a.work_start = ck;
        r->st = J_PENDING;
        r->backoff = true;
        gw_sim_pq_insert(&e->pq, ji);
        gw_sim_heap_push(&e->heap, d.not_before, GW_SIM_EV_BACKOFF, ji, r->attempts);
        *ret_retried = true;
        return 0;
}

/* A gpu_fault: a broken GPU stays faulty until repaired; under drain (recovery) every GPU
 * the classifier names in drain_mask is drained until then (an admin looks at it).  Returns
 * the GPUs (of the node) to drain once the job has released them. */
static uint64_t gpu_fault(struct eng *e, int64_t ji, enum gw_sim_end cause, const struct gw_failure_verdict *v) {
        const struct gw_sim_job *j = &e->w->jobs[ji];
        const struct jrun *r = &e->jr[ji];
        struct node *nd = &e->nodes[r->node];
        int gpu = __builtin_ctzll(r->mask);

        e->res->gpu_faults++;
        if (nd->broken_until[gpu] > e->now)
                e->res->faults_on_broken++;
        else if (cause == GW_SIM_END_CRASH && j->gpu_broken && r->crash_class == j->fail_class)
                nd->broken_until[gpu] = e->now + e->cfg->repair;
        return e->cfg->drain ? v->drain_mask & r->mask : 0;
}

static void drain(struct eng *e, int node, uint64_t mask) {
        struct node *nd = &e->nodes[node];
        gw_usec_t until = e->now + e->cfg->repair;

        for (uint64_t m = mask; m; m &= m - 1) {
                int i = __builtin_ctzll(m);
                nd->gpu_job[i] = GW_SIM_DRAINED;
                nd->n_free--;
                e->n_free--;
                e->res->drained_gpu_h += gw_sim_gpu_h(1, (until < e->horizon_abs ? until : e->horizon_abs) - e->now);
                gw_sim_heap_push(&e->heap, until, GW_SIM_EV_REPAIR, (int64_t) node * 64 + i, 0);
        }
}

static void undrain(struct eng *e, int64_t where) {
        struct node *nd = &e->nodes[where / 64];
        int i = (int) (where % 64);

        if (nd->gpu_job[i] != GW_SIM_DRAINED)
                return;
        nd->gpu_job[i] = 0;
        nd->n_free++;
        e->n_free++;
        e->dirty = true;
}

static void count_end(struct eng *e, const struct jrun *r, enum gw_failure_class cls) {
        switch (cls) {
        case GW_FAILURE_OK:
                e->res->completed++;
                e->passed_samples += r->n_samples;
                e->zero_samples += r->n_zero;
                break;
        case GW_FAILURE_CANCELLED:
                e->res->cancelled++;
                break;
        case GW_FAILURE_TIMEOUT:
                e->res->timed_out++;
                break;
        case GW_FAILURE_RECLAIMED:
                e->res->reclaimed++;
                break;
        default:
                e->res->failed++;
                break;
        }
}

int gw_sim_end_attempt(struct eng *e, int64_t ji, enum gw_sim_end cause) {
        const struct gw_sim_job *j = &e->w->jobs[ji];
        struct jrun *r = &e->jr[ji];
        struct gw_gpu_event ev;
        struct gw_failure_input in;
        struct gw_failure_verdict v;
        gw_usec_t w = gw_sim_work_at(j, &r->a, e->now);
        gw_usec_t ck = gw_sim_ckpt_at(j, r->a.work_start, w);
        double g = j->ngpus;
        bool flagged = r->leak_flag_wall <= e->now;
        int k;

        account(e, j, r, e->now);
        if (r->preempting && gw_sim_preempt_ended(e, ji, cause, w, ck))
                return 0;
        gw_sim_failure_input((enum gw_failure_class) r->crash_class, cause, __builtin_ctzll(r->mask), &ev, &in);
        k = gw_failure_classify(&in, &v);
        if (k < 0)
                return k;
        e->res->leaks_detected += flagged;
        if (cause == GW_SIM_END_LEAK_STOP) {
                v.cls = GW_FAILURE_OOM; /* as recovery.c does after gw_training_take_restart */
                e->res->leak_restarts++;
                e->res->lost_gpu_h += gw_sim_gpu_h(g, w - ck);
                e->res->lost_leak_gpu_h += gw_sim_gpu_h(g, w - ck);
        }
        if (cause == GW_SIM_END_CRASH) {
                r->failed_once = r->failed_once || r->crash_class == j->fail_class;
                e->res->lost_gpu_h += gw_sim_gpu_h(g, w - ck);
                if (v.cls != (enum gw_failure_class) r->crash_class)
                        e->res->misclassified++;
                if (v.cls == GW_FAILURE_OOM)
                        e->res->oom_crashes++;
                if (r->leak_oom)
                        e->res->lost_leak_gpu_h += gw_sim_gpu_h(g, w - ck);
        }
        if (cause == GW_SIM_END_RECLAIM && gw_sim_progressing(&r->a, e->now)) {
                e->res->wrongful++;
                e->res->lost_reclaim_gpu_h += gw_sim_gpu_h(g, w - ck);
        }
        uint64_t to_drain = v.cls == GW_FAILURE_GPU_FAULT ? gpu_fault(e, ji, cause, &v) : 0;
        int node = r->node;
        gw_sim_release(e, ji);
        drain(e, node, to_drain);
        if (r->booking)
                gw_sim_book_job_ended(e, ji);
        if (e->cfg->retry && v.cls != GW_FAILURE_OK) {
                bool retried, explained = e->cfg->leak_detect && (flagged || cause == GW_SIM_END_LEAK_STOP);
                k = maybe_retry(e, ji, &v, w, ck, explained, &retried);
                if (k < 0 || retried)
                        return k;
        }
        r->st = J_DONE;
        e->n_done++;
        count_end(e, r, v.cls);
        return 0;
}

/* ---- the scheduler pass ---- */

static void scratch_grow(struct eng *e, size_t n) {
        if (n <= e->wcap)
                return;
        e->wcap = n;
        e->win_job = gw_xrealloc(e->win_job, n * sizeof(*e->win_job));
        e->win_pos = gw_xrealloc(e->win_pos, n * sizeof(*e->win_pos));
        e->win_taken = gw_xrealloc(e->win_taken, n * sizeof(*e->win_taken));
        e->sj = gw_xrealloc(e->sj, n * sizeof(*e->sj));
        e->sj_win = gw_xrealloc(e->sj_win, n * sizeof(*e->sj_win));
        e->starts = gw_xrealloc(e->starts, n * sizeof(*e->starts));
        e->reasons = gw_xrealloc(e->reasons, n * sizeof(*e->reasons));
        e->order = gw_xrealloc(e->order, 2 * n * sizeof(*e->order));
        e->closed = gw_xrealloc(e->closed, n * sizeof(*e->closed));
}

static void cost_add(struct eng *e, size_t n_pending, double ns) {
        unsigned b = 0;
        while (b + 1 < GW_SIM_COST_BUCKETS && (size_t) 1 << (b + 1) <= n_pending)
                b++;
        struct gw_sim_cost *c = &e->res->cost[b];
        c->n++;
        c->ns_sum += ns;
        if (ns > c->ns_max)
                c->ns_max = ns;
}

static enum gw_job_reason quota_block(struct eng *e, const struct gw_sim_job *j) {
        struct gw_quota_usage u = { .gpus_running = e->user_gpus[j->user] };
        char msg[GW_QUOTA_MSG_SIZE];

        if (e->cfg->quota_gpus <= 0)
                return GW_REASON_NONE;
        return gw_quota_check_start(&e->limits, &u, j->ngpus, msg, sizeof(msg)) == GW_QUOTA_WAIT ? GW_REASON_QUOTA
                                                                                                 : GW_REASON_NONE;
}

/* One plan over one node for the window's jobs not yet started in this pass. */
static int plan_node(struct eng *e, int node, size_t n_win, size_t *left) {
        struct node *nd = &e->nodes[node];
        struct gw_sched_gpu gpus[GW_SIM_MAX_NODE_GPUS];
        struct gw_sched_running run[GW_SIM_MAX_NODE_GPUS];
        size_t n_run = 0, n = 0;
        uint64_t seen = 0;

        for (int i = 0; i < nd->n_gpus; i++) {
                int64_t holder = nd->gpu_job[i] > 0 ? nd->gpu_job[i] : 0;
                gpus[i] = (struct gw_sched_gpu){ .index = i,
                                                 .usable = nd->gpu_job[i] != GW_SIM_DRAINED,
                                                 .mem_total = UINT64_C(80) << 30,
                                                 .mem_free = holder ? 0 : UINT64_C(80) << 30,
                                                 .job_id = holder };
                if (holder && !(seen & (UINT64_C(1) << i))) {
                        const struct jrun *r = &e->jr[holder - 1];
                        seen |= r->mask;
                        run[n_run++] =
                                (struct gw_sched_running){ .id = holder, .gpu_mask = r->mask, .end = r->limit_at };
                }
        }
        for (size_t i = 0; i < n_win; i++) {
                if (e->win_taken[i])
                        continue;
                int64_t ji = e->win_job[i];
                const struct gw_sim_job *j = &e->w->jobs[ji];
                e->sj[n] = (struct gw_sched_job){ .id = ji + 1,
                                                  .priority = j->priority,
                                                  .ngpus = j->ngpus,
                                                  .time_limit = j->time_limit,
                                                  .backoff = e->jr[ji].backoff,
                                                  .blocked = quota_block(e, j),
                                                  .fs_user = (uint32_t) j->user };
                e->sj_win[n++] = i;
        }
        if (e->cfg->bookings) {
                int k = gw_sim_book_gate(e, node, n);
                if (k < 0)
                        return k;
        }
        gw_sim_preempt_filter(e, node, n);
        struct gw_sched_input in = { gpus, (size_t) nd->n_gpus, e->sj, n, run, n_run };
        struct gw_sched_plan plan = { .starts = e->starts, .reasons = e->reasons, .order = e->order };
        struct gw_sched_fair fair_buf;
        gw_usec_t t0 = e->cfg->clock_ns ? e->cfg->clock_ns() : 0;
        int k = gw_sched_plan_fair(&in, gw_sim_fair_input(e, &fair_buf), e->now, &plan);
        if (e->cfg->clock_ns)
                cost_add(e, n, (double) (e->cfg->clock_ns() - t0));
        e->res->sched_plans++;
        if (k < 0)
                return k;
        for (size_t s = 0; s < plan.n_starts; s++) {
                int64_t ji = plan.starts[s].job_id - 1;
                /* quota.h: a start in this pass counts before the next one is checked.  The
                 * plan saw the usage from before the pass, so a later start of the same user
                 * may now be over quota: hold it back and plan again. */
                if (quota_block(e, &e->w->jobs[ji]) != GW_REASON_NONE) {
                        e->dirty = true;
                        continue;
                }
                /* The starts come in queue order, so a linear walk finds their window slots. */
                for (size_t i = 0; i < n; i++)
                        if (e->sj[i].id == plan.starts[s].job_id) {
                                size_t wi = e->sj_win[i];
                                e->win_taken[wi] = true;
                                gw_sim_pq_remove_at(&e->pq, e->win_pos[wi]);
                                break;
                        }
                k = start_job(e, ji, node, plan.starts[s].gpu_mask);
                if (k < 0)
                        return k;
                (*left)--;
        }
        return 0;
}

static int sched_pass(struct eng *e) {
        size_t n_win = 0, left;

        e->dirty = false;
        if (gw_sim_pq_live(&e->pq) == 0 || e->n_free == 0)
                return 0;
        e->res->sched_passes++;
        gw_usec_t t0 = e->cfg->clock_ns ? e->cfg->clock_ns() : 0;
        size_t want = e->cfg->window ? e->cfg->window : gw_sim_pq_live(&e->pq);
        scratch_grow(e, want);
        for (size_t i = e->pq.front; i < e->pq.n && n_win < want; i++)
                if (e->pq.v[i] >= 0) {
                        e->win_job[n_win] = e->pq.v[i];
                        e->win_pos[n_win] = i;
                        e->win_taken[n_win++] = false;
                }
        left = n_win;
        for (int nd = 0; nd < e->n_nodes && left > 0 && e->n_free > 0; nd++) {
                if (e->nodes[nd].n_free == 0)
                        continue;
                int k = plan_node(e, nd, n_win, &left);
                if (k < 0)
                        return k;
        }
        gw_sim_book_cancel_closed(e);
        gw_sim_pq_compact(&e->pq);
        if (e->cfg->clock_ns) {
                double ns = (double) (e->cfg->clock_ns() - t0);
                e->res->pass_ns_sum += ns;
                if (ns > e->res->pass_ns_max)
                        e->res->pass_ns_max = ns;
        }
        return 0;
}

/* ---- observation samples: telemetry and the reclaim decision ---- */

static int sample(struct eng *e) {
        struct gw_reclaim_gpu gpus[GW_SIM_MAX_NODE_GPUS];
        _cleanup_free_ int64_t *stop = NULL;
        size_t n_stop = 0;
        bool decide = e->cfg->reclaim != GW_SIM_RECLAIM_OFF;
        bool util_only = e->cfg->reclaim == GW_SIM_RECLAIM_UTIL_ONLY;

        for (size_t i = 0; i < e->n_running; i++) {
                int64_t ji = e->running[i];
                const struct gw_sim_job *j = &e->w->jobs[ji];
                struct jrun *r = &e->jr[ji];
                struct gw_job_obs obs;
                struct gw_reclaim_decision d;

                gw_sim_observe(j, &r->a, e->now, e->cfg->seed, util_only, gpus, &obs);
                for (size_t g = 0; g < obs.n_gpus; g++)
                        gw_usage_add(&e->held_usage, gpus[g].util, 0);
                r->n_samples++;
                r->n_zero += gpus[0].util == 0;
                if (!decide)
                        continue;
                obs.state = r->rs;
                int k = gw_reclaim_decide(&obs, r->policy, e->now, &d);
                if (k < 0)
                        return k;
                e->res->reclaim_decisions++;
                r->rs = d.next;
                if (d.action == GW_RECLAIM_WARN)
                        e->res->warnings++;
                /* The job exits on SIGTERM (see docs/SIMULATOR.md): KILL is never needed. */
                if (d.action == GW_RECLAIM_TERMINATE || d.action == GW_RECLAIM_KILL) {
                        if (!stop)
                                stop = gw_xmalloc(e->n_running * sizeof(*stop));
                        stop[n_stop++] = ji;
                }
        }
        for (size_t i = 0; i < n_stop; i++) {
                int k = gw_sim_end_attempt(e, stop[i], GW_SIM_END_RECLAIM);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* ---- the loop ---- */

/* Returns 1 when a job's state changed, 0 when not (a sample, a stale event), or < 0. */
static int handle(struct eng *e, const struct gw_sim_ev *ev) {
        struct jrun *r =
                ev->job >= 0 && ev->kind != GW_SIM_EV_REPAIR && ev->kind != GW_SIM_EV_CAL ? &e->jr[ev->job] : NULL;

        switch (ev->kind) {
        case GW_SIM_EV_SUBMIT:
                r->st = J_PENDING;
                e->n_submitted++;
                gw_sim_pq_insert(&e->pq, ev->job);
                e->dirty = true;
                return 1;
        case GW_SIM_EV_REPAIR:
                undrain(e, ev->job);
                return 0;
        case GW_SIM_EV_CAL: {
                int k = gw_sim_cal_tick(e, (int) ev->job);
                return k < 0 ? k : 0;
        }
        case GW_SIM_EV_BOOK: {
                int k = gw_sim_book(e, ev->job);
                return k < 0 ? k : 1;
        }
        case GW_SIM_EV_BACKOFF:
                if (r->st != J_PENDING || r->attempts != ev->attempt || !r->backoff)
                        return 0;
                r->backoff = false;
                e->dirty = true;
                return 1;
        case GW_SIM_EV_END: {
                /* An attempt reclaimed or ended earlier leaves its end event behind: stale. */
                if (r->st != J_RUNNING || r->attempts != ev->attempt || r->end_at != ev->t)
                        return 0;
                int k = gw_sim_end_attempt(e, ev->job, (enum gw_sim_end) r->end_cause);
                return k < 0 ? k : 1;
        }
        case GW_SIM_EV_SAMPLE: {
                int k = sample(e);
                if (k < 0)
                        return k;
                /* Nothing left that could change: stop sampling (jobs that can never start
                 * would otherwise keep the clock going for ever). */
                bool idle = e->n_running == 0 && e->heap.n == 0;
                if (!idle && e->n_done < e->w->n && e->now + e->cfg->sample <= e->horizon_abs)
                        gw_sim_heap_push(&e->heap, e->now + e->cfg->sample, GW_SIM_EV_SAMPLE, -1, 0);
                return 0;
        }
        default:
                return -EINVAL;
        }
}

static int run_loop(struct eng *e) {
        struct gw_sim_ev ev;

        while (gw_sim_heap_peek(&e->heap)) {
                gw_usec_t t = gw_sim_heap_peek(&e->heap)->t;
                if (t > e->horizon_abs)
                        break;
                gw_sim_fair_advance(e, t);
                e->now = t;
                while (gw_sim_heap_peek(&e->heap) && gw_sim_heap_peek(&e->heap)->t == t) {
                        (void) gw_sim_heap_pop(&e->heap, &ev);
                        e->res->events++;
                        int k = handle(e, &ev);
                        if (k < 0)
                                return k;
                        /* A run without a horizon is measured to its last job event. */
                        if (k > 0)
                                e->last_event = t;
                }
                /* A pass that had to hold back a start (quota) asks for another. */
                while (e->dirty) {
                        int k = sched_pass(e);
                        if (k < 0)
                                return k;
                }
                int k = e->cfg->preempt ? gw_sim_preempt_pass(e) : 0;
                if (k < 0)
                        return k;
        }
        return 0;
}

static int setup(struct eng *e) {
        const struct gw_sim_config *c = e->cfg;
        int ng = c->node_gpus > 0 ? c->node_gpus : c->n_gpus;

        if (c->n_gpus < 1 || ng < 1 || ng > GW_SIM_MAX_NODE_GPUS || c->reclaim >= _GW_SIM_RECLAIM_MODE_MAX ||
            c->leak_policy < 0 || c->leak_policy >= _GW_LEAK_POLICY_MAX || (c->drain && c->repair <= 0) ||
            (c->reclaim != GW_SIM_RECLAIM_OFF && gw_reclaim_policy_check(&c->policy) < 0))
                return -EINVAL;
        e->n_nodes = (c->n_gpus + ng - 1) / ng;
        e->nodes = gw_xcalloc((size_t) e->n_nodes, sizeof(*e->nodes));
        for (int i = 0; i < e->n_nodes; i++) {
                int n = c->n_gpus - i * ng < ng ? c->n_gpus - i * ng : ng;
                e->nodes[i] = (struct node){ .n_gpus = n, .n_free = n, .base = i * ng };
        }
        e->n_free = c->n_gpus;
        e->jr = gw_xcalloc(e->w->n ? e->w->n : 1, sizeof(*e->jr));
        e->waits = gw_xcalloc(e->w->n ? e->w->n : 1, sizeof(*e->waits));
        e->running = gw_xcalloc((size_t) c->n_gpus, sizeof(*e->running));
        e->prio = gw_xcalloc(e->w->n ? e->w->n : 1, sizeof(*e->prio));
        e->pq.priority = e->prio;
        for (size_t i = 0; i < e->w->n; i++) {
                const struct gw_sim_job *j = &e->w->jobs[i];
                if (j->ngpus < 1 || j->ngpus > GW_SIM_MAX_NODE_GPUS || j->time_limit <= 0 || j->submit < 0 ||
                    j->user < 0 || j->runtime <= 0)
                        return -EINVAL;
                e->prio[i] = j->priority;
                if (j->user + 1 > e->n_users)
                        e->n_users = j->user + 1;
        }
        e->user_gpus = gw_xcalloc((size_t) e->n_users + 1, sizeof(*e->user_gpus));
        gw_sim_fair_setup(e);
        if (c->quota_gpus > 0) {
                struct gw_quota deflt;
                gw_quota_init(&deflt);
                deflt.v[GW_QUOTA_MAX_GPUS] = c->quota_gpus;
                gw_quota_resolve(NULL, NULL, 0, &deflt, &e->limits, NULL);
        }
        e->horizon_abs = c->horizon > 0 ? GW_SIM_EPOCH + c->horizon : GW_USEC_INFINITY;
        for (size_t i = 0; i < e->w->n; i++) {
                const struct gw_sim_job *j = &e->w->jobs[i];
                gw_usec_t at = GW_SIM_EPOCH + j->submit;
                uint32_t kind = GW_SIM_EV_SUBMIT;
                /* A booked job: its user books the window book_lead ahead (not before time 0). */
                if (c->bookings && j->book_lead > 0) {
                        at = j->submit > j->book_lead ? at - j->book_lead : GW_SIM_EPOCH;
                        kind = GW_SIM_EV_BOOK;
                }
                if (at <= e->horizon_abs)
                        gw_sim_heap_push(&e->heap, at, kind, (int64_t) i, 0);
        }
        if (c->sample > 0)
                gw_sim_heap_push(&e->heap, GW_SIM_EPOCH + c->sample, GW_SIM_EV_SAMPLE, -1, 0);
        e->res->bucket = c->bucket;
        return 0;
}

static void finish(struct eng *e) {
        struct gw_sim_result *r = e->res;
        gw_usec_t end = e->horizon_abs != GW_USEC_INFINITY ? e->horizon_abs : e->last_event;
        _cleanup_free_ double *w = gw_xmalloc((e->w->n ? e->w->n : 1) * sizeof(double));
        size_t n = 0;

        for (size_t i = 0; i < e->n_running; i++)
                account(e, &e->w->jobs[e->running[i]], &e->jr[e->running[i]], end);
        r->measured = end - GW_SIM_EPOCH;
        r->capacity_gpu_h = gw_sim_gpu_h(e->cfg->n_gpus, r->measured);
        r->submitted = e->n_submitted;
        r->running_at_end = e->n_running;
        for (size_t i = 0; i < e->w->n; i++) {
                const struct jrun *j = &e->jr[i];
                if (j->st == J_FUTURE)
                        continue;
                if (j->st == J_PENDING)
                        r->queued_at_end++;
                w[n++] = j->started ? e->waits[i]
                                    : (double) (end - (GW_SIM_EPOCH + e->w->jobs[i].submit)) / (double) GW_SIM_SEC;
        }
        r->wait_p50_s = gw_sim_percentile(w, n, 50);
        r->wait_p90_s = gw_sim_percentile(w, n, 90);
        r->wait_p99_s = gw_sim_percentile(w, n, 99);
        r->passed_zero_frac = e->passed_samples ? (double) e->zero_samples / (double) e->passed_samples : 0;
        r->held_util_p50 = gw_usage_percentile(&e->held_usage, 50);
        gw_sim_fair_finish(e, end);
        gw_sim_preempt_finish(e, end);
        if (r->bucket > 0) {
                size_t want = (size_t) ((r->measured + r->bucket - 1) / r->bucket);
                if (want < r->n_buckets)
                        r->n_buckets = want;
        }
}

int gw_sim_run(const struct gw_sim_workload *w, const struct gw_sim_config *cfg, struct gw_sim_result *ret) {
        struct gw_sim_result res = { 0 };
        struct eng e = { .w = w, .cfg = cfg, .res = &res };
        int k;

        if (!w || !cfg || !ret)
                return -EINVAL;
        (void) snprintf(res.name, sizeof(res.name), "%s", cfg->name);
        k = setup(&e);
        if (k >= 0)
                k = run_loop(&e);
        if (k >= 0)
                finish(&e);
        free(e.nodes);
        free(e.jr);
        free(e.waits);
        free(e.running);
        free(e.prio);
        free(e.user_gpus);
        free(e.win_job);
        free(e.win_pos);
        free(e.win_taken);
        free(e.sj);
        free(e.sj_win);
        free(e.starts);
        free(e.reasons);
        free(e.order);
        gw_sim_fair_free(&e);
        gw_sim_book_free(&e);
        gw_sim_heap_free(&e.heap);
        gw_sim_pq_free(&e.pq);
        if (k < 0) {
                gw_sim_result_free(&res);
                return k;
        }
        *ret = res;
        return 0;
}

void gw_sim_result_free(struct gw_sim_result *r) {
        if (!r)
                return;
        free(r->alloc);
        free(r->busy);
        free(r->user_gpu_h);
        free(r->user_wait_s);
        r->alloc = r->busy = r->user_gpu_h = r->user_wait_s = NULL;
        r->n_buckets = r->n_users = 0;
}
