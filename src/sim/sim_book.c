/* Bookings in the engine: the booking calendar of core/calendar.h, driven as gpuwardd's
 * sharing.c drives it.  A booked job's user books a window of the job's GPUs and time limit
 * starting at the job's submission, book_lead ahead (gw_calendar_place: the first node where
 * it fits, else the nearest later window it proposes); the job is submitted at the window's
 * start and may start only inside it, on its GPUs (gw_calendar_gate); every other job may use
 * a GPU only if its time limit ends before the next booking there (gw_calendar_free_for:
 * backfill around bookings).  gw_calendar_tick, at each booking's start, end and no-show
 * deadline, activates, ends and releases them.  Bookings live per node (a calendar covers one
 * scheduler plan's GPUs). */
#include <errno.h>

#include "base/cleanup.h"
#include "sim/sim_engine.h"

struct view {
        struct gw_sched_gpu gpus[GW_SIM_MAX_NODE_GPUS];
        struct gw_booking *bk;
        struct gw_cal_job *run;
        struct gw_cal_pending *pend;
        struct gw_calendar_input in;
};

static void view_free(struct view *v) {
        free(v->bk);
        free(v->run);
        free(v->pend);
}

/* The node's calendar as gw_calendar_view() builds the daemon's. */
static void view_node(const struct eng *e, int node, struct view *v) {
        const struct node *nd = &e->nodes[node];
        size_t nb = 0, nr = 0, np = 0;

        v->bk = gw_xcalloc(e->n_bk + 1, sizeof(*v->bk));
        v->pend = gw_xcalloc(e->n_bk + 1, sizeof(*v->pend));
        v->run = gw_xcalloc(e->n_running + 1, sizeof(*v->run));
        for (int i = 0; i < nd->n_gpus; i++)
                v->gpus[i] = (struct gw_sched_gpu){ .index = i,
                                                    .usable = nd->gpu_job[i] != GW_SIM_DRAINED,
                                                    .job_id = nd->gpu_job[i] > 0 ? nd->gpu_job[i] : 0 };
        for (size_t i = 0; i < e->n_bk; i++) {
                if (e->bk_node[i] != node || gw_booking_state_is_final(e->bk[i].state))
                        continue;
                v->bk[nb++] = e->bk[i];
                const struct jrun *r = &e->jr[e->bk_job[i]];
                const struct gw_sim_job *j = &e->w->jobs[e->bk_job[i]];
                if (r->st == J_PENDING)
                        v->pend[np++] = (struct gw_cal_pending){ .id = e->bk_job[i] + 1,
                                                                 .ngpus = j->ngpus,
                                                                 .time_limit = j->time_limit,
                                                                 .booking_id = e->bk[i].id };
        }
        for (size_t i = 0; i < e->n_running; i++) {
                const struct jrun *r = &e->jr[e->running[i]];
                if (r->node == node)
                        v->run[nr++] = (struct gw_cal_job){ .id = e->running[i] + 1,
                                                            .booking_id = r->booking ? r->booking : 0,
                                                            .gpu_mask = r->mask,
                                                            .start = r->a.start,
                                                            .end = r->limit_at };
        }
        v->in = (struct gw_calendar_input){ v->gpus, (size_t) nd->n_gpus, v->bk, nb, v->run, nr, v->pend, np };
}

static void push_cal(struct eng *e, gw_usec_t t, int node) { gw_sim_heap_push(&e->heap, t, GW_SIM_EV_CAL, node, 0); }

int gw_sim_book(struct eng *e, int64_t ji) {
        const struct gw_sim_job *j = &e->w->jobs[ji];
        gw_usec_t want = GW_SIM_EPOCH + j->submit;
        struct gw_calendar_request req = { .ngpus = j->ngpus,
                                           .start = want > e->now ? want : e->now,
                                           .duration = j->time_limit };
        struct gw_calendar_placement best = { .verdict = GW_PLACE_NEVER }, p;
        int best_node = -1;

        for (int nd = 0; nd < e->n_nodes && best.verdict != GW_PLACE_FITS; nd++) {
                if (e->nodes[nd].n_gpus < j->ngpus)
                        continue;
                struct view v;
                view_node(e, nd, &v);
                int k = gw_calendar_place(&v.in, &req, NULL, NULL, &p);
                view_free(&v);
                if (k < 0)
                        return k;
                if (p.verdict == GW_PLACE_FITS ||
                    (p.verdict == GW_PLACE_LATER && (best.verdict == GW_PLACE_NEVER || p.start < best.start))) {
                        best = p;
                        best_node = nd;
                }
        }
        if (best.verdict == GW_PLACE_NEVER) { /* no window within a week: submitted as it is */
                gw_sim_heap_push(&e->heap, req.start, GW_SIM_EV_SUBMIT, ji, 0);
                return 0;
        }
        if (e->n_bk == e->cap_bk) {
                e->cap_bk = e->cap_bk ? e->cap_bk * 2 : 64;
                e->bk = gw_xrealloc(e->bk, e->cap_bk * sizeof(*e->bk));
                e->bk_node = gw_xrealloc(e->bk_node, e->cap_bk * sizeof(*e->bk_node));
                e->bk_job = gw_xrealloc(e->bk_job, e->cap_bk * sizeof(*e->bk_job));
        }
        e->bk[e->n_bk] = (struct gw_booking){ .id = (int64_t) e->n_bk + 1,
                                              .uid = (uint32_t) j->user,
                                              .ngpus = j->ngpus,
                                              .start = best.start,
                                              .end = best.end,
                                              .gpu_mask = best.gpu_mask,
                                              .state = GW_BOOKING_APPROVED };
        e->bk_node[e->n_bk] = best_node;
        e->bk_job[e->n_bk] = ji;
        e->n_bk++;
        e->jr[ji].booking = (int64_t) e->n_bk;
        e->nodes[best_node].n_live_bk++;
        e->res->bookings++;
        e->res->bookings_later += best.verdict == GW_PLACE_LATER;
        gw_sim_heap_push(&e->heap, best.start, GW_SIM_EV_SUBMIT, ji, 0);
        push_cal(e, best.start, best_node);
        push_cal(e, best.start + GW_CALENDAR_NO_SHOW_DEFAULT, best_node);
        push_cal(e, best.end, best_node);
        e->dirty = true; /* a booking ahead changes what may backfill now */
        return 0;
}

static void apply(struct eng *e, const struct gw_cal_action *a) {
        struct gw_booking *b =
                a->booking_id > 0 && (size_t) a->booking_id <= e->n_bk ? &e->bk[a->booking_id - 1] : NULL;

        switch (a->kind) {
        case GW_CAL_ACTIVATE:
        case GW_CAL_END:
        case GW_CAL_EXPIRE:
                if (b)
                        b->state = a->new_state;
                break;
        case GW_CAL_NO_SHOW:
                if (b) {
                        b->state = GW_BOOKING_RELEASED;
                        /* Released 15 min after its job ended is the usual end, not a no-show. */
                        e->res->booking_no_shows += b->last_used == 0;
                }
                break;
        case GW_CAL_REASSIGN:
                if (b)
                        b->gpu_mask = a->gpu_mask;
                break;
        case GW_CAL_STOP_JOB: {
                /* plan_fate clips a booked attempt to the booking's end, so this is a safety net. */
                int64_t ji = a->job_id - 1;
                if (ji >= 0 && (size_t) ji < e->w->n && e->jr[ji].st == J_RUNNING)
                        (void) gw_sim_end_attempt(e, ji, GW_SIM_END_TIMEOUT);
                break;
        }
        case GW_CAL_CONFLICT:
        case GW_CAL_WARN_JOB:
        default:
                break;
        }
}

int gw_sim_cal_tick(struct eng *e, int node) {
        struct view v;
        struct gw_calendar_params p = { .no_show = GW_CALENDAR_NO_SHOW_DEFAULT,
                                        .warn_before_end = GW_CALENDAR_WARN_DEFAULT };
        size_t n = 0;

        view_node(e, node, &v);
        size_t cap = gw_calendar_tick_max(&v.in);
        _cleanup_free_ struct gw_cal_action *acts = gw_xcalloc(cap + 1, sizeof(*acts));
        int k = gw_calendar_tick(&v.in, e->now, &p, acts, cap, &n);
        view_free(&v);
        if (k < 0)
                return k;
        for (size_t i = 0; i < n; i++)
                apply(e, &acts[i]);
        size_t live = 0;
        for (size_t i = 0; i < e->n_bk; i++)
                live += e->bk_node[i] == node && !gw_booking_state_is_final(e->bk[i].state);
        e->nodes[node].n_live_bk = live;
        if (n)
                e->dirty = true;
        return 0;
}

void gw_sim_book_job_ended(struct eng *e, int64_t ji) {
        struct gw_booking *b = &e->bk[e->jr[ji].booking - 1];

        if (gw_booking_state_is_final(b->state))
                return;
        b->last_used = e->now; /* gw_sharing_job_ended */
        push_cal(e, e->now + GW_CALENDAR_NO_SHOW_DEFAULT, e->bk_node[e->jr[ji].booking - 1]);
}

/* The job's booking closed before it could start: cancelled after the pass (gw_schedule),
 * and offered to no other node's plan meanwhile. */
static void close_job(struct eng *e, size_t i) {
        e->closed[e->n_closed++] = (int64_t) e->sj_win[i];
        e->win_taken[e->sj_win[i]] = true;
}

int gw_sim_book_gate(struct eng *e, int node, size_t n) {
        const struct node *nd = &e->nodes[node];
        uint64_t all = gw_sched_mask_first((size_t) nd->n_gpus);
        struct view v = { 0 };
        struct gw_calendar_gpus g;
        int k = 0;

        view_node(e, node, &v);
        if (nd->n_live_bk > 0)
                k = gw_calendar_gpus_at(&v.in, e->now, &g);
        for (size_t i = 0; i < n && k == 0; i++) {
                struct gw_sched_job *sj = &e->sj[i];
                const struct jrun *r = &e->jr[sj->id - 1];
                if (r->booking) {
                        struct gw_calendar_gate gate;
                        const struct gw_booking *b = &e->bk[r->booking - 1];
                        if (e->bk_node[r->booking - 1] != node && !gw_booking_state_is_final(b->state) &&
                            e->now < b->end) {
                                sj->blocked = GW_REASON_RESERVATION; /* its booking is on another node */
                                continue;
                        }
                        k = gw_calendar_gate(&v.in, b->id, e->now, &gate);
                        if (k < 0 || gate.gate == GW_GATE_CLOSED)
                                close_job(e, i);
                        if (k < 0 || gate.gate != GW_GATE_OPEN || !gate.gpu_mask)
                                sj->blocked = GW_REASON_RESERVATION; /* daemon/sharing/sharing.c's rule */
                        else
                                sj->allowed = gate.gpu_mask;
                } else if (nd->n_live_bk > 0)
                        gw_calendar_limit_job(&g, all, e->now, sj);
        }
        view_free(&v);
        return k;
}

int gw_sim_book_allowed(struct eng *e, int node, int64_t ji, uint64_t *ret) {
        const struct node *nd = &e->nodes[node];
        struct gw_sched_job sj = { .id = ji + 1,
                                   .ngpus = e->w->jobs[ji].ngpus,
                                   .time_limit = e->w->jobs[ji].time_limit };
        struct view v = { 0 };
        struct gw_calendar_gpus g;
        *ret = 0;
        if (!e->cfg->bookings || nd->n_live_bk == 0)
                return 0;
        view_node(e, node, &v);
        int k = gw_calendar_gpus_at(&v.in, e->now, &g);
        if (k == 0)
                gw_calendar_limit_job(&g, gw_sched_mask_first((size_t) nd->n_gpus), e->now, &sj);
        view_free(&v);
        *ret = sj.none_allowed ? GW_SIM_NONE_ALLOWED : sj.allowed;
        return k;
}

void gw_sim_book_cancel_closed(struct eng *e) {
        for (size_t i = 0; i < e->n_closed; i++) {
                size_t wi = (size_t) e->closed[i];
                int64_t ji = e->win_job[wi];
                struct jrun *r = &e->jr[ji];
                if (r->st != J_PENDING)
                        continue;
                gw_sim_pq_remove_at(&e->pq, e->win_pos[wi]);
                r->st = J_DONE;
                e->n_done++;
                e->res->cancelled++;
                e->res->booking_missed++;
        }
        e->n_closed = 0;
}

void gw_sim_book_free(struct eng *e) {
        free(e->bk);
        free(e->bk_node);
        free(e->bk_job);
        free(e->closed);
}
