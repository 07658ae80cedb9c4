/* Predicted starts: the scheduler replayed forward (see predict.h). */
#include "core/predict.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIT(i) (UINT64_C(1) << (i))
#define NGPU GW_SCHED_MAX_GPUS
#define NONE SIZE_MAX

/* Why the replay is cheap enough to run every few seconds with thousands of pending jobs
 * (docs/PERFORMANCE.md): each instant walks the jobs not yet decided once, in queue order,
 * and hands the scheduler only those that could start now (enough free GPUs of the ones
 * they may use) and the first one that would become the head; the others could neither
 * start nor change the head's reservation, so the plan's starts are the same.  The
 * bookings' view is rebuilt only when a booking starts or ends, the bookings filter is
 * asked once per distinct time limit per instant, and the next instant comes from sorted
 * event lists.  Job ids are assumed unique, as the daemon's are. */

static gw_usec_t add_sat(gw_usec_t a, gw_usec_t b) {
        gw_usec_t r;
        return __builtin_add_overflow(a, b, &r) ? GW_USEC_INFINITY : r;
}

static gw_usec_t min_t(gw_usec_t a, gw_usec_t b) { return a < b ? a : b; }

/* The earliest start known of q: its backoff's end, or the end the caller gave for the job
 * it follows.  Both only delay it, and both are instants the replay must wake up at. */
static gw_usec_t earliest(const struct gw_cal_pending *q) {
        return q->after_end > q->not_before ? q->after_end : q->not_before;
}

/* Bits set in m.  __builtin_popcountll is a libgcc call without -mpopcnt, and the replay
 * counts GPUs for every waiting job at every instant. */
static int count_gpus(uint64_t m) {
        m = m - ((m >> 1) & UINT64_C(0x5555555555555555));
        m = (m & UINT64_C(0x3333333333333333)) + ((m >> 2) & UINT64_C(0x3333333333333333));
        m = (m + (m >> 4)) & UINT64_C(0x0f0f0f0f0f0f0f0f);
        return (int) ((m * UINT64_C(0x0101010101010101)) >> 56);
}

struct keyed {
        int64_t key;
        size_t i;
};

static int cmp_keyed(const void *a, const void *b) {
        const struct keyed *x = a, *y = b;
        if (x->key != y->key)
                return x->key < y->key ? -1 : 1;
        return (x->i > y->i) - (x->i < y->i);
}

/* The first entry of sorted v[0..n) with this key, or NONE. */
static size_t find_keyed(const struct keyed *v, size_t n, int64_t key) {
        size_t lo = 0, hi = n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (v[mid].key < key)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < n && v[lo].key == key ? v[lo].i : NONE;
}

/* A job on the virtual clock: one of in->running, or a pending job the replay started. */
struct simjob {
        int64_t id;
        uint64_t mask;
        gw_usec_t limit_end; /* what the scheduler believes (the time limit) */
        gw_usec_t end; /* when the replay ends it */
        size_t pending; /* its index in in->pending, or NONE */
        size_t running; /* its index in in->running, or NONE */
        uint32_t uid;
};

/* A pending job's replay state. */
struct pend {
        size_t next; /* the next job not yet done, in queue order; NONE: last */
        size_t next_booked; /* the same among jobs with a booking_id > 0 */
        size_t cls; /* its time limit's index in replay.cls */
        size_t dep_pending; /* after_job's index in in->pending (the first), or NONE */
        size_t dep_running; /* after_job's index in in->running, or NONE */
        const struct gw_booking *booking; /* booking_id > 0: the first with that id, or NULL */
        gw_usec_t gate_until; /* its booking's end once open */
        bool done; /* started, or never will */
        bool running; /* started and not yet ended */
        bool held; /* held: it never starts, nor does what waits for it */
};

/* The bookings filter for one distinct time limit, asked once per instant. */
struct limit_class {
        gw_usec_t limit;
        size_t step; /* the instant (step + 1) the fields below are for; 0 none */
        bool limited; /* some GPUs are booked before the limit would end */
        uint64_t allowed; /* limited: the GPUs that are not (0: none is free so long) */
        int count; /* GPUs it may use that are idle at that instant */
};

struct replay {
        const struct gw_calendar_input *in;
        struct gw_calendar_input cal; /* bookings and GPUs only, for the gates */
        uint64_t all, usable;
        struct simjob *run;
        size_t n_run;
        bool *run_alive; /* per in->running: not yet ended */
        int64_t occupant[NGPU]; /* job on the GPU, 0 none, -1 held by something unknown */
        uint64_t touched; /* GPUs a job left: all their memory is back */
        struct pend *p;
        size_t first; /* the first pending job not yet done */
        size_t first_booked; /* the same among jobs with a booking_id > 0 */
        struct limit_class *cls;
        struct gw_calendar_gpus g; /* the bookings' view, valid while t < g_until */
        gw_usec_t g_until;
        struct keyed *bounds; /* bookings' starts and ends, ascending */
        size_t n_bounds, bound_at; /* bound_at: the first after the last instant */
        struct keyed *waits; /* pending jobs' not_before after now, ascending */
        size_t n_waits, wait_at;
        size_t step;
        uint64_t avail; /* the scheduler's idle GPUs at this instant */
        int n_avail;
        bool head; /* a job that will be the head is in the plan */
        /* The plan so far, counted: while every job in it may use any GPU and needs no
         * memory, which start and which one is the head follow from GPU counts alone. */
        bool counted;
        bool counted_head; /* the head is set */
        int counted_avail; /* GPUs still idle */
        struct gw_sched_job *sj;
        struct gw_sched_start *starts;
        enum gw_job_reason *reasons;
        size_t *map; /* sched input index -> pending index */
        size_t n_planned; /* r->sj filled so far in this pass */
};

static void replay_free(struct replay *r) {
        free(r->run);
        free(r->run_alive);
        free(r->p);
        free(r->cls);
        free(r->bounds);
        free(r->waits);
        free(r->sj);
        free(r->starts);
        free(r->reasons);
        free(r->map);
}

/* Distinct time limits: one bookings filter per limit per instant. */
static int index_limits(struct replay *r) {
        const struct gw_calendar_input *in = r->in;
        struct keyed *v = calloc(in->n_pending + 1, sizeof(*v));
        size_t n = 0;

        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < in->n_pending; i++)
                v[i] = (struct keyed){ in->pending[i].time_limit, i };
        qsort(v, in->n_pending, sizeof(*v), cmp_keyed);
        for (size_t k = 0; k < in->n_pending; k++) {
                if (k == 0 || v[k].key != v[k - 1].key)
                        r->cls[n++] = (struct limit_class){ .limit = v[k].key };
                r->p[v[k].i].cls = n - 1;
        }
        free(v);
        return 0;
}

static struct keyed *sorted_ids(const struct gw_calendar_input *in, bool pending, size_t n) {
        struct keyed *v = calloc(n + 1, sizeof(*v));

        if (!v)
                return NULL;
        for (size_t i = 0; i < n; i++)
                v[i] = (struct keyed){ pending ? in->pending[i].id : in->running[i].id, i };
        qsort(v, n, sizeof(*v), cmp_keyed);
        return v;
}

/* Who each after_job is, and each booking_id. */
static int resolve_links(struct replay *r) {
        const struct gw_calendar_input *in = r->in;
        struct keyed *pend = sorted_ids(in, true, in->n_pending), *run = sorted_ids(in, false, in->n_running);
        struct keyed *book = calloc(in->n_bookings + 1, sizeof(*book));
        int rc = pend && run && book ? 0 : -ENOMEM;

        for (size_t i = 0; rc == 0 && i < in->n_bookings; i++)
                book[i] = (struct keyed){ in->bookings[i].id, i };
        if (rc == 0)
                qsort(book, in->n_bookings, sizeof(*book), cmp_keyed);
        for (size_t i = 0; rc == 0 && i < in->n_pending; i++) {
                const struct gw_cal_pending *q = &in->pending[i];
                struct pend *pj = &r->p[i];
                /* An end given by the caller stands for the replay's own view of after_job,
                 * which takes a slice job for held (the replay does not start those). */
                bool look_up = q->after_job && q->after_end <= 0;
                pj->dep_pending = look_up ? find_keyed(pend, in->n_pending, q->after_job) : NONE;
                pj->dep_running = look_up ? find_keyed(run, in->n_running, q->after_job) : NONE;
                if (q->booking_id > 0) {
                        size_t b = find_keyed(book, in->n_bookings, q->booking_id);
                        pj->booking = b == NONE ? NULL : &in->bookings[b];
                }
                pj->next = i + 1 < in->n_pending ? i + 1 : NONE;
                pj->next_booked = NONE;
        }
        for (size_t i = in->n_pending, next = NONE; rc == 0 && i-- > 0;)
                if (in->pending[i].booking_id > 0) {
                        r->p[i].next_booked = next;
                        next = i;
                }
        r->first_booked = NONE;
        for (size_t i = 0; rc == 0 && i < in->n_pending && r->first_booked == NONE; i++)
                if (in->pending[i].booking_id > 0)
                        r->first_booked = i;
        free(pend);
        free(run);
        free(book);
        return rc;
}

/* The instants at which bookings change and backoffs end, ascending. */
static int index_events(struct replay *r, gw_usec_t now) {
        const struct gw_calendar_input *in = r->in;

        r->bounds = calloc(2 * in->n_bookings + 1, sizeof(*r->bounds));
        r->waits = calloc(in->n_pending + 1, sizeof(*r->waits));
        if (!r->bounds || !r->waits)
                return -ENOMEM;
        for (size_t i = 0; i < in->n_bookings; i++) {
                r->bounds[r->n_bounds++] = (struct keyed){ in->bookings[i].start, i };
                r->bounds[r->n_bounds++] = (struct keyed){ in->bookings[i].end, i };
        }
        for (size_t i = 0; i < in->n_pending; i++)
                if (earliest(&in->pending[i]) > now)
                        r->waits[r->n_waits++] = (struct keyed){ earliest(&in->pending[i]), i };
        qsort(r->bounds, r->n_bounds, sizeof(*r->bounds), cmp_keyed);
        qsort(r->waits, r->n_waits, sizeof(*r->waits), cmp_keyed);
        return 0;
}

static int replay_init(struct replay *r, const struct gw_calendar_input *in, gw_usec_t now) {
        size_t np = in->n_pending, cap = in->n_running + np + 1;

        memset(r, 0, sizeof(*r));
        r->in = in;
        r->cal = (struct gw_calendar_input){ .gpus = in->gpus,
                                             .n_gpus = in->n_gpus,
                                             .bookings = in->bookings,
                                             .n_bookings = in->n_bookings };
        r->first = np ? 0 : NONE;
        r->run = calloc(cap, sizeof(*r->run));
        r->run_alive = calloc(in->n_running + 1, sizeof(*r->run_alive));
        r->p = calloc(np + 1, sizeof(*r->p));
        r->cls = calloc(np + 1, sizeof(*r->cls));
        r->sj = calloc(np + 1, sizeof(*r->sj));
        r->starts = calloc(np + 1, sizeof(*r->starts));
        r->reasons = calloc(np + 1, sizeof(*r->reasons));
        r->map = calloc(np + 1, sizeof(*r->map));
        if (!r->run || !r->run_alive || !r->p || !r->cls || !r->sj || !r->starts || !r->reasons || !r->map)
                return -ENOMEM;
        int rc = index_limits(r);
        if (rc == 0)
                rc = resolve_links(r);
        if (rc == 0)
                rc = index_events(r, now);
        if (rc < 0)
                return rc;
        for (size_t i = 0; i < in->n_gpus; i++) {
                r->all |= BIT(in->gpus[i].index);
                if (in->gpus[i].usable)
                        r->usable |= BIT(in->gpus[i].index);
                r->occupant[in->gpus[i].index] = in->gpus[i].job_id ? -1 : 0;
        }
        for (size_t i = 0; i < in->n_running; i++) {
                const struct gw_cal_job *j = &in->running[i];
                gw_usec_t end = j->eta > 0 && j->eta < j->end ? j->eta : j->end;
                r->run_alive[i] = true;
                r->run[r->n_run++] = (struct simjob){ .id = j->id,
                                                      .mask = j->gpu_mask,
                                                      .limit_end = j->end,
                                                      .end = end > now ? end : now,
                                                      .pending = NONE,
                                                      .running = i,
                                                      .uid = j->uid };
                for (uint64_t m = j->gpu_mask; m; m &= m - 1)
                        r->occupant[__builtin_ctzll(m)] = j->id;
        }
        r->g_until = GW_USEC_INFINITY;
        return 0;
}

/* Ends the jobs due by t: their GPUs come back whole. */
static void end_due(struct replay *r, gw_usec_t t) {
        size_t k = 0;

        for (size_t i = 0; i < r->n_run; i++) {
                const struct simjob *s = &r->run[i];
                if (s->end > t) {
                        r->run[k++] = *s;
                        continue;
                }
                if (s->pending != NONE)
                        r->p[s->pending].running = false;
                if (s->running != NONE)
                        r->run_alive[s->running] = false;
                for (uint64_t m = s->mask; m; m &= m - 1) {
                        int g = __builtin_ctzll(m);
                        if (r->occupant[g] == s->id) {
                                r->occupant[g] = 0;
                                r->touched |= BIT(g);
                        }
                }
        }
        r->n_run = k;
}

/* Whether job i's after_job is still ahead in the replay: running, pending and not yet
 * started, or held (done for the replay, but the daemon keeps its dependants waiting until
 * it is released and has run, so they never start in it either). */
static bool dep_ahead(const struct replay *r, const struct pend *pj) {
        if (pj->dep_running != NONE && r->run_alive[pj->dep_running])
                return true;
        if (pj->dep_pending == NONE)
                return false;
        const struct pend *dep = &r->p[pj->dep_pending];
        return !dep->done || dep->running || dep->held;
}

/* The first of bounds after t; moves bound_at there. */
static gw_usec_t next_bound(struct replay *r, gw_usec_t t) {
        while (r->bound_at < r->n_bounds && r->bounds[r->bound_at].key <= t)
                r->bound_at++;
        return r->bound_at < r->n_bounds ? r->bounds[r->bound_at].key : GW_USEC_INFINITY;
}

/* The bookings' view at t (gw_calendar_gpus_at): the same from one booking's start or end
 * to the next but for owned GPUs' free_until, which no filter reads. */
static int bookings_view(struct replay *r, gw_usec_t t) {
        if (!r->in->n_bookings || (r->step > 0 && t < r->g_until))
                return 0;
        int rc = gw_calendar_gpus_at(&r->cal, t, &r->g);
        r->g_until = next_bound(r, t);
        return rc;
}

/* What the bookings filter gives jobs outside bookings with this time limit at t. */
static void class_fill(struct replay *r, struct limit_class *lc, gw_usec_t t) {
        lc->step = r->step + 1;
        lc->allowed = r->all;
        if (r->in->n_bookings)
                lc->allowed = gw_calendar_free_for(&r->g, r->all, t, lc->limit);
        lc->limited = lc->allowed != r->all;
        lc->count = count_gpus(r->avail & lc->allowed);
}

static inline const struct limit_class *class_at(struct replay *r, size_t c, gw_usec_t t) {
        struct limit_class *lc = &r->cls[c];

        if (lc->step != r->step + 1)
                class_fill(r, lc, t);
        return lc;
}

/* Whether the usable GPUs with gpu_mem free, or that much in all once their jobs end,
 * number ngpus (the scheduler's can_ever_fit). */
static bool can_ever_fit(const struct replay *r, const struct gw_cal_pending *q) {
        uint64_t ok = 0;

        if (q->gpu_mem == 0)
                return count_gpus(r->usable) >= q->ngpus;
        for (size_t k = 0; k < r->in->n_gpus; k++) {
                const struct gw_sched_gpu *g = &r->in->gpus[k];
                uint64_t mem_free = r->touched & BIT(g->index) ? g->mem_total : g->mem_free;
                if (g->usable && (g->mem_total >= q->gpu_mem || mem_free >= q->gpu_mem))
                        ok |= BIT(g->index);
        }
        return count_gpus(ok) >= q->ngpus;
}

/* What a pass makes of a job not done at t. */
enum verdict {
        V_DONE, /* held (no prediction; it holds nothing back) or its booking is gone */
        V_WAIT, /* cannot start now and cannot be the head: the plan does not need it */
        V_PLAN, /* could start now, or would be the head: the plan needs it */
};

/* A job in a booking at t, by the daemon's rules (gw_calendar_gate): it waits for the
 * booking's start, then may run only on its GPUs, and is ended once the booking is gone. */
static enum verdict judge_booked(struct replay *r, size_t i, gw_usec_t t, uint64_t *ret_allowed) {
        struct pend *pj = &r->p[i];
        const struct gw_booking *b = pj->booking;

        if (!b || gw_booking_state_is_final(b->state) || t >= b->end)
                return V_DONE;
        if (b->state == GW_BOOKING_PENDING_APPROVAL || t < b->start)
                return V_WAIT;
        uint64_t mask = b->gpu_mask & r->usable;
        if (!mask)
                return V_WAIT; /* none of its GPUs usable: it waits for them (daemon/sharing/sharing.c) */
        *ret_allowed = mask;
        pj->gate_until = b->end;
        return count_gpus(r->avail & *ret_allowed) >= r->in->pending[i].ngpus ? V_PLAN : V_WAIT;
}

/* Whether q's user would pass max_gpus with q: the GPUs of the user's jobs running at this
 * instant (real or started by the replay) and of those handed to this pass before q (the
 * daemon counts them as taken too, daemon/sharing/sharing.c), plus q's.  Such a job waits for one of
 * them to end, which is an instant of the replay. */
static bool over_quota(const struct replay *r, const struct gw_cal_pending *q) {
        int64_t used = q->ngpus;

        if (q->max_gpus <= 0)
                return false;
        for (size_t i = 0; i < r->n_run; i++)
                if (r->run[i].uid == q->uid)
                        used += count_gpus(r->run[i].mask);
        for (size_t k = 0; k < r->n_planned; k++) {
                const struct gw_cal_pending *o = &r->in->pending[r->map[k]];
                if (o->uid == q->uid)
                        used += o->ngpus;
        }
        return used > q->max_gpus;
}

/* Job i at t.  The plan needs it when it could start (enough idle GPUs it may use), or
 * when it is the first that would become the head (it may use any GPU, could ever fit,
 * cannot fit now); no other job can start or change the head's reservation. */
static enum verdict judge(struct replay *r, size_t i, gw_usec_t t, uint64_t *ret_allowed) {
        const struct gw_cal_pending *q = &r->in->pending[i];
        enum verdict v = V_PLAN;

        *ret_allowed = 0;
        if (q->held) {
                r->p[i].held = true;
                return V_DONE;
        }
        if (q->booking_id > 0)
                v = judge_booked(r, i, t, ret_allowed);
        if (v == V_DONE || r->n_avail == 0 || earliest(q) > t || over_quota(r, q))
                return v == V_DONE ? V_DONE : V_WAIT;
        if (q->booking_id <= 0 && r->in->n_bookings) {
                /* A job that may use no GPU waits here: it is never handed to the scheduler,
                 * so allowed (0: any GPU) need not say none. */
                const struct limit_class *lc = class_at(r, r->p[i].cls, t);
                *ret_allowed = lc->limited ? lc->allowed : 0;
                v = !lc->limited || lc->count >= q->ngpus ? V_PLAN : V_WAIT;
        }
        if (v == V_WAIT || (q->after_job && dep_ahead(r, &r->p[i])))
                return V_WAIT;
        if (*ret_allowed || q->ngpus <= r->n_avail)
                return V_PLAN;
        if (r->head || !can_ever_fit(r, q))
                return V_WAIT;
        r->head = true;
        return V_PLAN;
}

/* Counts what the scheduler does with job q, handed to it with allowed: before the head
 * is set, a job that fits starts and the first that cannot fit (and could ever) is the
 * head.  Backfill and jobs limited to some GPUs or needing memory depend on more than
 * counts: counting stops there. */
static void count_plan(struct replay *r, const struct gw_cal_pending *q, uint64_t allowed) {
        if (!r->counted)
                return;
        if (allowed || q->gpu_mem || r->counted_head) {
                r->counted = false;
                return;
        }
        if (q->ngpus <= r->counted_avail)
                r->counted_avail -= q->ngpus;
        else if (count_gpus(r->usable) >= q->ngpus)
                r->counted_head = true;
}

/* The scheduler's idle GPUs: usable, held by no job and in no running job's mask. */
static void idle_gpus(struct replay *r) {
        uint64_t held = 0, present = 0;

        for (size_t k = 0; k < r->in->n_gpus; k++) {
                int g = r->in->gpus[k].index;
                present |= BIT(g);
                if (r->occupant[g])
                        held |= BIT(g);
        }
        for (size_t i = 0; i < r->n_run && i < NGPU; i++)
                held |= r->run[i].mask & present;
        r->avail = r->usable & ~held;
        r->n_avail = count_gpus(r->avail);
        r->head = false;
        r->counted = true;
        r->counted_head = false;
        r->counted_avail = r->n_avail;
}

/* Jobs in bookings from queue index from on whose booking is gone: what the walk would
 * have marked done past the point where nothing more could start. */
static void close_booked(struct replay *r, size_t from, gw_usec_t t) {
        size_t *link = &r->first_booked;

        for (size_t i = r->first_booked; i != NONE; i = *link) {
                struct pend *pj = &r->p[i];
                const struct gw_booking *b = pj->booking;
                if (i >= from && !pj->done && (!b || gw_booking_state_is_final(b->state) || t >= b->end))
                        pj->done = true;
                if (pj->done)
                        *link = pj->next_booked;
                else
                        link = &pj->next_booked;
        }
}

/* Walks the jobs not yet done in queue order (dropping those now done in that order: a
 * job after one in the queue sees it done at this instant, a job before it only at the
 * next, as in the daemon's pass) and writes those the plan needs to r->sj.  Once the
 * plan surely gives every idle GPU, only bookings that are gone are looked at (not at
 * the first instant, which drops every held job). */
static size_t fill_pending(struct replay *r, gw_usec_t t) {
        size_t n = 0, *link = &r->first, i;

        idle_gpus(r);
        r->n_planned = 0;
        for (i = r->first; i != NONE; i = *link) {
                struct pend *pj = &r->p[i];
                uint64_t allowed;
                if (r->step > 0 && r->counted && r->counted_avail == 0)
                        break; /* no GPU left to give */
                enum verdict v = pj->done ? V_DONE : judge(r, i, t, &allowed);
                if (v == V_DONE) {
                        pj->done = true;
                        *link = pj->next;
                        continue;
                }
                link = &pj->next;
                if (v == V_PLAN) {
                        const struct gw_cal_pending *q = &r->in->pending[i];
                        r->map[n] = i;
                        r->sj[n++] = (struct gw_sched_job){ .id = q->id,
                                                            .ngpus = q->ngpus,
                                                            .gpu_mem = q->gpu_mem,
                                                            .time_limit = q->time_limit,
                                                            .allowed = allowed,
                                                            .dep = GW_DEP_SATISFIED };
                        r->n_planned = n;
                        count_plan(r, q, allowed);
                }
        }
        if (i != NONE)
                close_booked(r, i, t);
        return n;
}

static void fill_gpus(const struct replay *r, struct gw_sched_gpu *gpus) {
        for (size_t i = 0; i < r->in->n_gpus; i++) {
                gpus[i] = r->in->gpus[i];
                int g = gpus[i].index;
                gpus[i].job_id = r->occupant[g];
                if (r->touched & BIT(g))
                        gpus[i].mem_free = gpus[i].mem_total;
        }
}

static void start_job(struct replay *r, size_t pi, const struct gw_sched_start *s, gw_usec_t t,
                      struct gw_prediction *out) {
        const struct gw_cal_pending *p = &r->in->pending[pi];
        gw_usec_t len = p->runtime > 0 && p->runtime < p->time_limit ? p->runtime : p->time_limit;
        gw_usec_t end = add_sat(t, len);

        if (p->booking_id > 0 && r->p[pi].gate_until)
                end = min_t(end, r->p[pi].gate_until);
        if (end <= t)
                end = t + 1;
        out[pi] = (struct gw_prediction){ .id = p->id, .start = t, .end = end, .gpu_mask = s->gpu_mask };
        r->p[pi].done = true;
        r->p[pi].running = true;
        r->run[r->n_run++] = (struct simjob){ .id = p->id,
                                              .mask = s->gpu_mask,
                                              .limit_end = add_sat(t, p->time_limit),
                                              .end = end,
                                              .pending = pi,
                                              .running = NONE,
                                              .uid = p->uid };
        for (uint64_t m = s->gpu_mask; m; m &= m - 1) {
                int g = __builtin_ctzll(m);
                r->occupant[g] = p->id;
                r->touched |= BIT(g);
        }
}

/* The next instant after t at which a pass could decide differently: a job's end, a
 * booking's start or end, a backoff's end, a given dependency's end. */
static gw_usec_t next_instant(struct replay *r, gw_usec_t t) {
        gw_usec_t next = next_bound(r, t);

        for (size_t i = 0; i < r->n_run; i++)
                if (r->run[i].end > t)
                        next = min_t(next, r->run[i].end);
        while (r->wait_at < r->n_waits && (r->waits[r->wait_at].key <= t || r->p[r->waits[r->wait_at].i].done))
                r->wait_at++;
        if (r->wait_at < r->n_waits)
                next = min_t(next, r->waits[r->wait_at].key);
        return next;
}

/* One pass of the scheduler at t over the jobs it needs; starts what it starts. */
static int pass(struct replay *r, gw_usec_t t, size_t n, struct gw_prediction *out) {
        struct gw_sched_gpu gpus[NGPU];
        struct gw_sched_running running[NGPU + 1];
        size_t nr = 0;

        fill_gpus(r, gpus);
        /* The scheduler sees at most one entry per GPU it needs: the running jobs'. */
        for (size_t i = 0; i < r->n_run && nr < NGPU; i++)
                running[nr++] = (struct gw_sched_running){ .id = r->run[i].id,
                                                           .gpu_mask = r->run[i].mask,
                                                           .end = r->run[i].limit_end };
        struct gw_sched_input si = { gpus, r->in->n_gpus, r->sj, n, running, nr };
        struct gw_sched_plan plan = { .starts = r->starts, .reasons = r->reasons };
        int rc = gw_sched_plan(&si, t, &plan);
        if (rc < 0)
                return rc;
        /* Starts come in the order of the input. */
        for (size_t k = 0, q = 0; k < plan.n_starts; k++, q++) {
                while (q < n && r->sj[q].id != r->starts[k].job_id)
                        q++;
                if (q == n)
                        break;
                start_job(r, r->map[q], &r->starts[k], t, out);
        }
        return 0;
}

static int run_replay(struct replay *r, gw_usec_t now, gw_usec_t hend, struct gw_prediction *out) {
        const struct gw_calendar_input *in = r->in;
        /* Every instant ends a job, starts or ends a booking or ends a backoff: bounded. */
        size_t max_steps = 2 * (in->n_running + in->n_pending + in->n_bookings) + 4;
        gw_usec_t t = now;

        for (r->step = 0; r->step < max_steps && t < hend; r->step++) {
                end_due(r, t);
                int rc = bookings_view(r, t);
                if (rc < 0)
                        return rc;
                size_t n = fill_pending(r, t);
                if (n)
                        rc = pass(r, t, n, out);
                if (rc < 0)
                        return rc;
                t = next_instant(r, t);
        }
        return 0;
}

/* GPU indices 0..63, each once (as gw_sched_plan and the calendar require). */
static bool gpus_ok(const struct gw_calendar_input *in) {
        uint64_t seen = 0;

        for (size_t i = 0; i < in->n_gpus; i++) {
                int idx = in->gpus[i].index;
                if (idx < 0 || idx >= NGPU || (seen & BIT(idx)))
                        return false;
                seen |= BIT(idx);
        }
        return true;
}

int gw_predict_starts(const struct gw_calendar_input *in, gw_usec_t now, gw_usec_t horizon, struct gw_prediction *out) {
        struct replay r;
        int rc;

        if (!in || horizon <= 0 || (in->n_pending && !out) || in->n_gpus > NGPU || (in->n_gpus && !in->gpus) ||
            (in->n_bookings && !in->bookings) || (in->n_running && !in->running) || (in->n_pending && !in->pending) ||
            !gpus_ok(in))
                return -EINVAL;
        for (size_t i = 0; i < in->n_pending; i++) {
                const struct gw_cal_pending *p = &in->pending[i];
                if (p->ngpus < 1 || p->ngpus > NGPU || p->time_limit <= 0 || p->runtime < 0 || p->after_end < 0)
                        return -EINVAL;
                out[i] = (struct gw_prediction){ .id = p->id, .start = GW_USEC_INFINITY, .end = GW_USEC_INFINITY };
        }
        rc = replay_init(&r, in, now);
        if (rc >= 0)
                rc = run_replay(&r, now, add_sat(now, horizon), out);
        replay_free(&r);
        if (rc < 0)
                return rc;
        /* A start at the horizon's edge is outside it. */
        for (size_t i = 0; i < in->n_pending; i++)
                if (out[i].start != GW_USEC_INFINITY && out[i].start >= add_sat(now, horizon))
                        out[i] = (struct gw_prediction){ .id = out[i].id,
                                                         .start = GW_USEC_INFINITY,
                                                         .end = GW_USEC_INFINITY };
        return 0;
}

int gw_predict_latest_starts(const struct gw_calendar_input *in, gw_usec_t now, gw_usec_t horizon,
                             struct gw_prediction *out) {
        if (!in || (in->n_running && !in->running) || (in->n_pending && !in->pending))
                return -EINVAL;
        struct gw_cal_job *run = calloc(in->n_running + 1, sizeof(*run));
        struct gw_cal_pending *pend = calloc(in->n_pending + 1, sizeof(*pend));
        int rc = -ENOMEM;

        if (run && pend) {
                struct gw_calendar_input lim = *in;
                for (size_t i = 0; i < in->n_running; i++) {
                        run[i] = in->running[i];
                        run[i].eta = 0; /* an estimate: the limit is what the scheduler reserves on */
                }
                for (size_t i = 0; i < in->n_pending; i++) {
                        pend[i] = in->pending[i];
                        pend[i].runtime = 0;
                }
                lim.running = run;
                lim.pending = pend;
                rc = gw_predict_starts(&lim, now, horizon, out);
        }
        free(run);
        free(pend);
        return rc;
}

bool gw_predict_limits_only(const struct gw_calendar_input *in) {
        for (size_t i = 0; i < in->n_running; i++)
                if (in->running[i].eta)
                        return false;
        for (size_t i = 0; i < in->n_pending; i++)
                if (in->pending[i].runtime)
                        return false;
        return true;
}

/* ---- Similar jobs ---- */

static const char *const key_params[] = { "epochs", "imgsz", "batch" };
#define N_KEY_PARAMS (sizeof(key_params) / sizeof(key_params[0]))

/* The index in key_params of a word "NAME=V" / "--NAME=V" / "--NAME", with the value's
 * start in *ret_val (NULL for "--NAME": the value is the next word); -1 if none. */
static int key_param(const char *w, const char **ret_val) {
        const char *s = w[0] == '-' && w[1] == '-' ? w + 2 : w;

        for (size_t k = 0; k < N_KEY_PARAMS; k++) {
                size_t l = strlen(key_params[k]);
                if (strncmp(s, key_params[k], l))
                        continue;
                if (s[l] == '=') {
                        *ret_val = s + l + 1;
                        return (int) k;
                }
                if (s[l] == '\0' && s != w) {
                        *ret_val = NULL;
                        return (int) k;
                }
        }
        return -1;
}

int gw_predict_job_key(const char *const *argv, char *buf, size_t size) {
        const char *vals[N_KEY_PARAMS] = { NULL };
        size_t len = 0;
        int w;

        if (!argv || !argv[0] || !buf || size == 0)
                return -EINVAL;
        const char *base = strrchr(argv[0], '/');
        w = snprintf(buf, size, "%s", base ? base + 1 : argv[0]);
        if (w < 0 || (size_t) w >= size)
                return -ENOBUFS;
        len = (size_t) w;
        for (size_t i = 1; argv[i]; i++) {
                const char *v;
                int k = key_param(argv[i], &v);
                if (k >= 0) {
                        if (!v && argv[i + 1])
                                v = argv[++i];
                        vals[k] = v;
                        continue;
                }
                if (argv[i][0] == '-' || strchr(argv[i], '='))
                        continue;
                w = snprintf(buf + len, size - len, " %s", argv[i]);
                if (w < 0 || (size_t) w >= size - len)
                        return -ENOBUFS;
                len += (size_t) w;
        }
        for (size_t k = 0; k < N_KEY_PARAMS; k++) {
                w = snprintf(buf + len, size - len, "|%s=%s", key_params[k], vals[k] ? vals[k] : "");
                if (w < 0 || (size_t) w >= size - len)
                        return -ENOBUFS;
                len += (size_t) w;
        }
        return 0;
}

static int cmp_usec(const void *a, const void *b) {
        gw_usec_t x = *(const gw_usec_t *) a, y = *(const gw_usec_t *) b;
        return (x > y) - (x < y);
}

gw_usec_t gw_predict_median(gw_usec_t *v, size_t n) {
        if (!v || n == 0)
                return 0;
        qsort(v, n, sizeof(*v), cmp_usec);
        return n % 2 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

const char *gw_predict_why_none(const struct gw_predict_none *in, char *buf, size_t n) {
        /* Whole seconds, rounded up and at least 1: "due within 0 s" would read as overdue. */
        gw_usec_t due = in->due_in > GW_USEC_PER_SEC ? in->due_in : GW_USEC_PER_SEC;
        long long due_s = (long long) ((due + GW_USEC_PER_SEC - 1) / GW_USEC_PER_SEC);
        long long days = (long long) (in->horizon / (24 * 3600 * GW_USEC_PER_SEC));

        if (in->slurm)
                snprintf(buf, n,
                         "not predicted: Slurm places the job, on GPUs this host does not see (once "
                         "submitted, `squeue --start` gives Slurm's own estimate)");
        else if (in->held)
                snprintf(buf, n, "the job is held");
        else if (in->position >= in->max_jobs)
                snprintf(buf, n, "not predicted: only the first %zu queued jobs are", in->max_jobs);
        else if (!in->seen)
                snprintf(buf, n, "not predicted yet: the next prediction is due within %lld s", due_s);
        else
                snprintf(buf, n,
                         "no start within %lld days (or never: its booking awaits approval, or is gone, or "
                         "it waits for a job further back in the queue)",
                         days);
        return buf;
}

const char *gw_predict_wait_words(const struct gw_predict_wait *w, char *buf, size_t n) {
        /* The dependency first: whatever else holds the job back, it cannot start before it. */
        if (w->after_job > 0 && w->after_held)
                snprintf(buf, n, "after job %lld is released", (long long) w->after_job);
        else if (w->after_job > 0 && w->after_queued)
                snprintf(buf, n, "after job %lld %s", (long long) w->after_job, w->after_ok ? "completes" : "ends");
        else
                switch (w->reason) {
                case GW_REASON_RESOURCES:
                case GW_REASON_PRIORITY:
                case GW_REASON_PREEMPTED:
                        snprintf(buf, n, "when GPUs free up");
                        break;
                case GW_REASON_QUOTA:
                        snprintf(buf, n, "when its user's quota allows");
                        break;
                case GW_REASON_RESERVATION:
                        snprintf(buf, n, "when its booking lets it");
                        break;
                case GW_REASON_BACKOFF:
                        snprintf(buf, n, "after its retry's backoff");
                        break;
                case GW_REASON_STAGING:
                        snprintf(buf, n, "once its dataset is in the cache");
                        break;
                case GW_REASON_ARRAY_LIMIT:
                        snprintf(buf, n, "when a task of its array ends");
                        break;
                case GW_REASON_HELD:
                        snprintf(buf, n, "after it is released");
                        break;
                case GW_REASON_DRAINED:
                        snprintf(buf, n, "when a GPU is back in service%s%s", w->drained ? ": " : "",
                                 w->drained ? w->drained : "");
                        break;
                case GW_REASON_DEPENDENCY:
                        if (w->after_job <= 0)
                                return NULL;
                        snprintf(buf, n, "after job %lld %s", (long long) w->after_job,
                                 w->after_ok ? "completes" : "ends");
                        break;
                default:
                        return NULL;
                }
        return buf;
}
