/* Predicted starts (core/predict.h): the optimized replay against a straightforward one.
 *
 * The reference below is the replay as first written (before the replay learned to skip
 * jobs that cannot start, to cache the bookings' view and to keep sorted event lists): at
 * every instant it builds every waiting job's scheduler input, asks the calendar for each
 * one and hands them all to gw_sched_plan.  Many small random hosts (GPUs with odd
 * indices and memory, unknown holders, overlapping running jobs, bookings in every state,
 * held jobs, backoffs, dependencies, bookings that are gone, instants that coincide) must
 * get the same predictions, field for field, from both. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/predict.h"
#include "fake_host.h"
#include "daemon/sharing/sharing.h"

/* ---- The reference replay ---- */

#define BIT(i) (UINT64_C(1) << (i))
#define NGPU GW_SCHED_MAX_GPUS

static gw_usec_t add_sat(gw_usec_t a, gw_usec_t b) {
        gw_usec_t r;
        return __builtin_add_overflow(a, b, &r) ? GW_USEC_INFINITY : r;
}

static gw_usec_t min_t(gw_usec_t a, gw_usec_t b) { return a < b ? a : b; }

/* A job on the virtual clock: one of in->running, or a pending job the replay started. */
struct ref_simjob {
        int64_t id;
        uint64_t mask;
        gw_usec_t limit_end; /* what the scheduler believes (the time limit) */
        gw_usec_t end; /* when the replay ends it */
};

struct ref_replay {
        const struct gw_calendar_input *in;
        struct gw_calendar_input cal; /* bookings and GPUs only, for the gates */
        struct ref_simjob *run;
        size_t n_run;
        int64_t occupant[NGPU]; /* job on the GPU, 0 none, -1 held by something unknown */
        uint64_t touched; /* GPUs a job left: all their memory is back */
        bool *done; /* per pending job: started, or never will */
        gw_usec_t *gate_until; /* per pending job: its booking's end once open */
        struct gw_sched_job *sj;
        struct gw_sched_start *starts;
        enum gw_job_reason *reasons;
        size_t *map; /* sched input index -> pending index */
};

static void replay_free(struct ref_replay *r) {
        free(r->run);
        free(r->done);
        free(r->gate_until);
        free(r->sj);
        free(r->starts);
        free(r->reasons);
        free(r->map);
}

static int replay_init(struct ref_replay *r, const struct gw_calendar_input *in, gw_usec_t now) {
        size_t np = in->n_pending, cap = in->n_running + np + 1;

        memset(r, 0, sizeof(*r));
        r->in = in;
        r->cal = (struct gw_calendar_input){ .gpus = in->gpus,
                                             .n_gpus = in->n_gpus,
                                             .bookings = in->bookings,
                                             .n_bookings = in->n_bookings };
        r->run = calloc(cap, sizeof(*r->run));
        r->done = calloc(np + 1, sizeof(*r->done));
        r->gate_until = calloc(np + 1, sizeof(*r->gate_until));
        r->sj = calloc(np + 1, sizeof(*r->sj));
        r->starts = calloc(np + 1, sizeof(*r->starts));
        r->reasons = calloc(np + 1, sizeof(*r->reasons));
        r->map = calloc(np + 1, sizeof(*r->map));
        if (!r->run || !r->done || !r->gate_until || !r->sj || !r->starts || !r->reasons || !r->map)
                return -ENOMEM;
        for (size_t i = 0; i < in->n_gpus; i++)
                r->occupant[in->gpus[i].index] = in->gpus[i].job_id ? -1 : 0;
        for (size_t i = 0; i < in->n_running; i++) {
                const struct gw_cal_job *j = &in->running[i];
                gw_usec_t end = j->eta > 0 && j->eta < j->end ? j->eta : j->end;
                r->run[r->n_run++] = (struct ref_simjob){ .id = j->id,
                                                          .mask = j->gpu_mask,
                                                          .limit_end = j->end,
                                                          .end = end > now ? end : now };
                for (uint64_t m = j->gpu_mask; m; m &= m - 1)
                        r->occupant[__builtin_ctzll(m)] = j->id;
        }
        return 0;
}

/* Ends the jobs due by t: their GPUs come back whole. */
static void end_due(struct ref_replay *r, gw_usec_t t) {
        size_t k = 0;

        for (size_t i = 0; i < r->n_run; i++) {
                if (r->run[i].end > t) {
                        r->run[k++] = r->run[i];
                        continue;
                }
                for (uint64_t m = r->run[i].mask; m; m &= m - 1) {
                        int g = __builtin_ctzll(m);
                        if (r->occupant[g] == r->run[i].id) {
                                r->occupant[g] = 0;
                                r->touched |= BIT(g);
                        }
                }
        }
        r->n_run = k;
}

static bool is_running(const struct ref_replay *r, int64_t id) {
        for (size_t i = 0; i < r->n_run; i++)
                if (r->run[i].id == id)
                        return true;
        return false;
}

/* Whether job id is still ahead in the replay: running, pending and not yet started, or held
 * (its dependants wait for its release, which no replay can time). */
static bool still_ahead(const struct ref_replay *r, int64_t id) {
        if (is_running(r, id))
                return true;
        for (size_t i = 0; i < r->in->n_pending; i++)
                if (r->in->pending[i].id == id)
                        return !r->done[i] || r->in->pending[i].held;
        return false;
}

/* The daemon's bookings rules (sharing.c's gw_sharing_sched) at instant t: blocked or
 * allowed GPUs; marks jobs whose booking is gone as done (the daemon ends them). */
static void apply_bookings(struct ref_replay *r, size_t i, const struct gw_calendar_gpus *g, uint64_t all, gw_usec_t t,
                           struct gw_sched_job *sj) {
        const struct gw_cal_pending *p = &r->in->pending[i];
        struct gw_calendar_gate gate;

        if (p->booking_id > 0) {
                if (gw_calendar_gate(&r->cal, p->booking_id, t, &gate) < 0 || gate.gate == GW_GATE_CLOSED) {
                        r->done[i] = true;
                        sj->blocked = GW_REASON_RESERVATION;
                } else if (gate.gate == GW_GATE_WAIT || (gate.gate == GW_GATE_OPEN && !gate.gpu_mask))
                        sj->blocked = GW_REASON_RESERVATION;
                else if (gate.gate == GW_GATE_OPEN) {
                        sj->allowed = gate.gpu_mask;
                        r->gate_until[i] = gate.until;
                }
        } else if (r->in->n_bookings)
                gw_calendar_limit_job(g, all, t, sj);
}

static size_t fill_pending(struct ref_replay *r, gw_usec_t t) {
        const struct gw_calendar_input *in = r->in;
        struct gw_calendar_gpus g;
        uint64_t all = 0;
        size_t n = 0;

        for (size_t i = 0; i < in->n_gpus; i++)
                all |= BIT(in->gpus[i].index);
        if (in->n_bookings && gw_calendar_gpus_at(&r->cal, t, &g) < 0)
                return 0;
        for (size_t i = 0; i < in->n_pending; i++) {
                const struct gw_cal_pending *p = &in->pending[i];
                struct gw_sched_job sj = {
                        .id = p->id,
                        .ngpus = p->ngpus,
                        .gpu_mem = p->gpu_mem,
                        .time_limit = p->time_limit,
                        .held = p->held,
                        .backoff = p->not_before > t,
                        .dep = p->after_job && still_ahead(r, p->after_job) ? GW_DEP_WAITING : GW_DEP_SATISFIED,
                };
                if (r->done[i])
                        continue;
                if (p->held) {
                        r->done[i] = true; /* no prediction; it holds nothing back */
                        continue;
                }
                if (p->booking_id > 0 || in->n_bookings)
                        apply_bookings(r, i, &g, all, t, &sj);
                if (r->done[i])
                        continue;
                r->map[n] = i;
                r->sj[n++] = sj;
        }
        return n;
}

static void fill_gpus(const struct ref_replay *r, struct gw_sched_gpu *gpus) {
        for (size_t i = 0; i < r->in->n_gpus; i++) {
                gpus[i] = r->in->gpus[i];
                int g = gpus[i].index;
                gpus[i].job_id = r->occupant[g];
                if (r->touched & BIT(g))
                        gpus[i].mem_free = gpus[i].mem_total;
        }
}

static void start_job(struct ref_replay *r, size_t pi, const struct gw_sched_start *s, gw_usec_t t,
                      struct gw_prediction *out) {
        const struct gw_cal_pending *p = &r->in->pending[pi];
        gw_usec_t len = p->runtime > 0 && p->runtime < p->time_limit ? p->runtime : p->time_limit;
        gw_usec_t end = add_sat(t, len);

        if (p->booking_id > 0 && r->gate_until[pi])
                end = min_t(end, r->gate_until[pi]);
        if (end <= t)
                end = t + 1;
        out[pi] = (struct gw_prediction){ .id = p->id, .start = t, .end = end, .gpu_mask = s->gpu_mask };
        r->done[pi] = true;
        r->run[r->n_run++] = (struct ref_simjob){ .id = p->id,
                                                  .mask = s->gpu_mask,
                                                  .limit_end = add_sat(t, p->time_limit),
                                                  .end = end };
        for (uint64_t m = s->gpu_mask; m; m &= m - 1) {
                int g = __builtin_ctzll(m);
                r->occupant[g] = p->id;
                r->touched |= BIT(g);
        }
}

/* The next instant after t at which a pass could decide differently. */
static gw_usec_t next_instant(const struct ref_replay *r, gw_usec_t t) {
        gw_usec_t next = GW_USEC_INFINITY;

        for (size_t i = 0; i < r->n_run; i++)
                if (r->run[i].end > t)
                        next = min_t(next, r->run[i].end);
        for (size_t i = 0; i < r->in->n_bookings; i++) {
                const struct gw_booking *b = &r->in->bookings[i];
                if (b->start > t)
                        next = min_t(next, b->start);
                if (b->end > t)
                        next = min_t(next, b->end);
        }
        for (size_t i = 0; i < r->in->n_pending; i++)
                if (!r->done[i] && r->in->pending[i].not_before > t)
                        next = min_t(next, r->in->pending[i].not_before);
        return next;
}

static int run_replay(struct ref_replay *r, gw_usec_t now, gw_usec_t hend, struct gw_prediction *out) {
        const struct gw_calendar_input *in = r->in;
        struct gw_sched_gpu gpus[NGPU];
        /* Every instant ends a job, starts or ends a booking or ends a backoff: bounded. */
        size_t max_steps = 2 * (in->n_running + in->n_pending + in->n_bookings) + 4;
        gw_usec_t t = now;

        for (size_t step = 0; step < max_steps && t < hend; step++) {
                end_due(r, t);
                size_t n = fill_pending(r, t);
                if (n == 0 && r->n_run == 0 && next_instant(r, t) == GW_USEC_INFINITY)
                        break;
                fill_gpus(r, gpus);
                struct gw_sched_running running[NGPU + 1];
                size_t nr = 0;
                /* The scheduler sees at most one entry per GPU it needs: the running jobs'. */
                for (size_t i = 0; i < r->n_run && nr < NGPU; i++)
                        running[nr++] = (struct gw_sched_running){ .id = r->run[i].id,
                                                                   .gpu_mask = r->run[i].mask,
                                                                   .end = r->run[i].limit_end };
                struct gw_sched_input si = { gpus, in->n_gpus, r->sj, n, running, nr };
                struct gw_sched_plan plan = { .starts = r->starts, .reasons = r->reasons };
                if (n) {
                        int rc = gw_sched_plan(&si, t, &plan);
                        if (rc < 0)
                                return rc;
                }
                for (size_t k = 0; k < plan.n_starts; k++)
                        for (size_t q = 0; q < n; q++)
                                if (r->sj[q].id == r->starts[k].job_id) {
                                        start_job(r, r->map[q], &r->starts[k], t, out);
                                        break;
                                }
                t = next_instant(r, t);
        }
        return 0;
}

static int ref_predict_starts(const struct gw_calendar_input *in, gw_usec_t now, gw_usec_t horizon,
                              struct gw_prediction *out) {
        struct ref_replay r;
        int rc;

        if (!in || horizon <= 0 || (in->n_pending && !out) || in->n_gpus > NGPU || (in->n_gpus && !in->gpus) ||
            (in->n_bookings && !in->bookings) || (in->n_running && !in->running) || (in->n_pending && !in->pending))
                return -EINVAL;
        for (size_t i = 0; i < in->n_pending; i++) {
                const struct gw_cal_pending *p = &in->pending[i];
                if (p->ngpus < 1 || p->ngpus > NGPU || p->time_limit <= 0 || p->runtime < 0)
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

/* ---- Random hosts (tests/fakes/fake_host.c) ---- */

#define SEC GW_USEC_PER_SEC
#define STEP ((gw_usec_t) 10 * 60 * SEC) /* on a grid, so that instants coincide */
#define NOW ((gw_usec_t) 1767222000 * SEC)

struct size {
        int gpus, running, bookings, pending;
        int64_t horizon_steps;
};

/* Up to so many of each, and every odd input: GPUs with odd indices (63 among them) and
 * memory, drained or held by unknown processes, running jobs sharing GPUs, bookings in every
 * state, held jobs, backoffs, dependencies, bookings that are gone, instants off the grid. */
static struct fake_host_shape shape_of(const struct size *sz) {
        return (struct fake_host_shape){
                .now = NOW,
                .step = STEP,
                .offgrid_pct = 10,
                .offgrid_limit_pct = 5,
                .gpus = { 1, sz->gpus },
                .scatter_pct = 40,
                .usable_pct = 85,
                .stray_pct = 8,
                .running = { 0, sz->running },
                .running_gpus = { 1, 3 },
                .running_end = { -1, 12 },
                .running_eta = { -1, 14 },
                .eta_pct = 40,
                .bookings = { 0, sz->bookings },
                .booking_gpus = { 1, 3 },
                .booking_start = { -3, 20 },
                .booking_len = { 1, 8 },
                .pending = { 0, sz->pending },
                .pending_gpus = { 1, sz->gpus < 4 ? sz->gpus + 1 : 4 },
                .limit = { 1, 8 },
                .booked_pct = 20,
                .held_pct = 10,
                .backoff_pct = 15,
                .backoff = { -2, 10 },
                .runtime_pct = 50,
                .after_pct = 15,
                .mem_pct = 15,
        };
}

/* Both replays of hosts of this size; fails naming the seed and the first difference. */
static void compare(const struct size *sz, int hosts, uint64_t seed) {
        size_t started = 0, total = 0;

        const struct fake_host_shape shape = shape_of(sz);

        for (int k = 0; k < hosts; k++) {
                struct fake_host h;
                struct fake_rng rng = { seed + (uint64_t) k * UINT64_C(0x9e3779b97f4a7c15) };
                assert_int_equal(fake_host_make(&h, &shape, &rng), 0);
                gw_usec_t horizon = fake_chance(&rng, 20) ? (gw_usec_t) 365 * 24 * 3600 * SEC
                                                          : fake_rnd_in(&rng, 1, sz->horizon_steps) * STEP;
                size_t n = h.in.n_pending;
                struct gw_prediction *got = calloc(n + 1, sizeof(*got)), *want = calloc(n + 1, sizeof(*want));
                assert_non_null(got);
                assert_non_null(want);
                int rg = gw_predict_starts(&h.in, NOW, horizon, got),
                    rw = ref_predict_starts(&h.in, NOW, horizon, want);
                if (rg != rw)
                        fail_msg("host %d (seed %llu): returned %d, reference %d", k, (unsigned long long) seed, rg,
                                 rw);
                for (size_t i = 0; rw == 0 && i < n; i++) {
                        const struct gw_prediction *a = &got[i], *b = &want[i];
                        if (a->id != b->id || a->start != b->start || a->end != b->end || a->gpu_mask != b->gpu_mask)
                                fail_msg("host %d (seed %llu), job %lld: got %lld..%lld on %#llx, reference %lld..%lld "
                                         "on %#llx",
                                         k, (unsigned long long) seed, (long long) a->id, (long long) a->start,
                                         (long long) a->end, (unsigned long long) a->gpu_mask, (long long) b->start,
                                         (long long) b->end, (unsigned long long) b->gpu_mask);
                        started += b->start != GW_USEC_INFINITY;
                }
                total += n;
                free(got);
                free(want);
                fake_host_free(&h);
        }
        /* The hosts are not degenerate: a fair share of the jobs start, not all of them. */
        assert_true(started > total / 10 && started < total);
}

static void small_hosts(void **state) {
        const struct size sz = { .gpus = 4, .running = 3, .bookings = 3, .pending = 8, .horizon_steps = 20 };
        (void) state;
        compare(&sz, 50000, 1);
}

static void medium_hosts(void **state) {
        const struct size sz = { .gpus = 8, .running = 6, .bookings = 6, .pending = 24, .horizon_steps = 40 };
        (void) state;
        compare(&sz, 5000, 2);
}

static void wide_hosts(void **state) {
        const struct size sz = { .gpus = 64, .running = 40, .bookings = 30, .pending = 200, .horizon_steps = 60 };
        (void) state;
        compare(&sz, 100, 3);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(small_hosts),
                cmocka_unit_test(medium_hosts),
                cmocka_unit_test(wide_hosts),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
