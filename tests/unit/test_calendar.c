#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/calendar.h"

#define SEC GW_USEC_PER_SEC
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define DAY (24 * HOUR)
#define INF GW_USEC_INFINITY
#define M(i) (UINT64_C(1) << (i))
/* Day 19720 since the epoch is a Friday (2023-12-29); now is 15:00 that day (UTC). */
#define FRI ((gw_usec_t) 19720 * DAY)
#define NOW (FRI + 15 * HOUR)
#define SAT (FRI + DAY)
#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* "Sat 10:00", or "12:00" after an instant of the same day: deterministic, UTC. */
static void test_fmt(gw_usec_t t, gw_usec_t ref, char *buf, size_t n, void *userdata) {
        static const char *const wd[] = { "Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed" };
        gw_usec_t day = t / DAY, m = (t % DAY) / MIN;

        (void) userdata;
        if (ref != INF && ref / DAY == day)
                (void) snprintf(buf, n, "%02d:%02d", (int) (m / 60), (int) (m % 60));
        else
                (void) snprintf(buf, n, "%s %02d:%02d", wd[day % 7], (int) (m / 60), (int) (m % 60));
}

struct world {
        struct gw_sched_gpu gpus[GW_SCHED_MAX_GPUS];
        struct gw_booking b[16];
        struct gw_cal_job run[8];
        struct gw_cal_pending pend[8];
        struct gw_calendar_input in;
};

static void world_init(struct world *w, int n_gpus, uint64_t drained) {
        memset(w, 0, sizeof(*w));
        for (int i = 0; i < n_gpus; i++)
                w->gpus[i] = (struct gw_sched_gpu){ .index = i, .usable = !(drained & M(i)) };
        w->in = (struct gw_calendar_input){ .gpus = w->gpus,
                                            .n_gpus = (size_t) n_gpus,
                                            .bookings = w->b,
                                            .running = w->run,
                                            .pending = w->pend };
}

static struct gw_booking *add_booking(struct world *w, int64_t id, uint64_t mask, gw_usec_t s, gw_usec_t e,
                                      enum gw_booking_state st) {
        struct gw_booking *b = &w->b[w->in.n_bookings++];
        *b = (struct gw_booking){ .id = id,
                                  .uid = 1000,
                                  .ngpus = __builtin_popcountll(mask),
                                  .start = s,
                                  .end = e,
                                  .gpu_mask = mask,
                                  .state = st };
        return b;
}

static struct gw_cal_job *add_running(struct world *w, int64_t id, uint64_t mask, gw_usec_t end, int64_t bid) {
        struct gw_cal_job *j = &w->run[w->in.n_running++];
        *j = (struct gw_cal_job){ .id = id, .booking_id = bid, .gpu_mask = mask, .end = end };
        return j;
}

static struct gw_cal_pending *add_pending(struct world *w, int64_t id, int ngpus, gw_usec_t limit, int64_t bid) {
        struct gw_cal_pending *p = &w->pend[w->in.n_pending++];
        *p = (struct gw_cal_pending){ .id = id, .ngpus = ngpus, .time_limit = limit, .booking_id = bid };
        return p;
}

static struct gw_calendar_placement place(const struct world *w, int ngpus, gw_usec_t start, gw_usec_t dur) {
        struct gw_calendar_request req = { .ngpus = ngpus, .start = start, .duration = dur };
        struct gw_calendar_placement p;

        assert_int_equal(gw_calendar_place(&w->in, &req, test_fmt, NULL, &p), 0);
        return p;
}

/* The issue's example: 2 GPUs booked tomorrow 09:00-13:00 on a 4-GPU server; 4 GPUs at
 * 10:00 for 2 h cannot fit, and 13:00-15:00 is the nearest window. */
static void issue_example(void **state) {
        struct world w;
        struct gw_calendar_placement p;

        (void) state;
        world_init(&w, 4, 0);
        p = place(&w, 2, SAT + 9 * HOUR, 4 * HOUR);
        assert_int_equal(p.verdict, GW_PLACE_FITS);
        assert_int_equal(p.gpu_mask, M(0) | M(1));
        assert_string_equal(p.message, "2 GPUs (0-1) Sat 09:00-13:00");
        add_booking(&w, 12, p.gpu_mask, p.start, p.end, GW_BOOKING_APPROVED);

        p = place(&w, 4, SAT + 10 * HOUR, 2 * HOUR);
        assert_int_equal(p.verdict, GW_PLACE_LATER);
        assert_int_equal(p.n_free, 2);
        assert_int_equal(p.start, SAT + 13 * HOUR);
        assert_int_equal(p.end, SAT + 15 * HOUR);
        assert_int_equal(p.gpu_mask, 0xf);
        assert_string_equal(p.message, "only 2 GPUs free Sat 10:00-12:00; nearest window for 4 GPUs: Sat 13:00-15:00");

        /* The 2 free GPUs are offered when 2 are asked; the fallback formatter is UTC. */
        struct gw_calendar_request req = { .ngpus = 2, .start = SAT + 10 * HOUR, .duration = 2 * HOUR };
        assert_int_equal(gw_calendar_place(&w.in, &req, NULL, NULL, &p), 0);
        assert_int_equal(p.verdict, GW_PLACE_FITS);
        assert_int_equal(p.gpu_mask, M(2) | M(3));
        assert_string_equal(p.message, "2 GPUs (2-3) 2023-12-30 10:00-12:00");

        /* Re-placing booking 12 itself ignores it. */
        req = (struct gw_calendar_request){ .ngpus = 4, .start = SAT + 9 * HOUR, .duration = HOUR, .ignore_id = 12 };
        assert_int_equal(gw_calendar_place(&w.in, &req, test_fmt, NULL, &p), 0);
        assert_int_equal(p.verdict, GW_PLACE_FITS);
}

static void overlapping_bookings(void **state) {
        struct world w;
        struct gw_calendar_placement p;

        (void) state;
        world_init(&w, 4, 0);
        add_booking(&w, 1, M(0) | M(1), SAT + 9 * HOUR, SAT + 13 * HOUR, GW_BOOKING_APPROVED);
        add_booking(&w, 2, M(2), SAT + 11 * HOUR, SAT + 14 * HOUR, GW_BOOKING_APPROVED);
        /* Ended, released and denied bookings hold nothing, nor those awaiting approval. */
        add_booking(&w, 3, 0xf, SAT + 8 * HOUR, SAT + 20 * HOUR, GW_BOOKING_DENIED);
        add_booking(&w, 4, 0xf, SAT + 8 * HOUR, SAT + 20 * HOUR, GW_BOOKING_RELEASED);
        add_booking(&w, 5, 0xf, FRI, FRI + HOUR, GW_BOOKING_ENDED);
        add_booking(&w, 6, M(3), SAT + 20 * HOUR, SAT + 21 * HOUR, GW_BOOKING_ACTIVE);
        add_booking(&w, 7, 0xf, SAT, SAT + 3650 * DAY, GW_BOOKING_PENDING_APPROVAL);

        /* Windows are half-open: 10:00-11:00 on GPU 2 does not touch booking 2 at 11:00. */
        p = place(&w, 2, SAT + 10 * HOUR, HOUR);
        assert_int_equal(p.verdict, GW_PLACE_FITS);
        assert_int_equal(p.gpu_mask, M(2) | M(3));
        /* 12:00-13:00: only GPU 3; sliding to 13:00 frees GPUs 0 and 1. */
        p = place(&w, 2, SAT + 12 * HOUR, HOUR);
        assert_int_equal(p.verdict, GW_PLACE_LATER);
        assert_int_equal(p.start, SAT + 13 * HOUR);
        assert_int_equal(p.gpu_mask, M(0) | M(1));
        assert_string_equal(p.message, "only 1 GPU free Sat 12:00-13:00; nearest window for 2 GPUs: Sat 13:00-14:00");
        /* All four: not before booking 2 ends at 14:00. */
        p = place(&w, 4, SAT + 9 * HOUR, 2 * HOUR);
        assert_int_equal(p.verdict, GW_PLACE_LATER);
        assert_int_equal(p.start, SAT + 14 * HOUR);
        /* Sliding past several ends (13:00, 14:00 still collide with booking 6); a window
         * past midnight prints the day at both ends. */
        p = place(&w, 4, SAT + 12 * HOUR, 11 * HOUR);
        assert_int_equal(p.n_free, 0);
        assert_string_equal(p.message, "no GPUs free Sat 12:00-23:00; nearest window for 4 GPUs: Sat 21:00-Sun 08:00");

        /* The user's booked GPUs at once: 2 (09-13) + 1 (11-14) overlap during 11-13. */
        assert_int_equal(gw_calendar_user_booked_gpus(w.b, w.in.n_bookings, 1000, SAT, SAT + DAY, 0), 3);
        assert_int_equal(gw_calendar_user_booked_gpus(w.b, w.in.n_bookings, 1000, SAT + 13 * HOUR, SAT + DAY, 0), 1);
        assert_int_equal(gw_calendar_user_booked_gpus(w.b, w.in.n_bookings, 1000, SAT, SAT + 10 * HOUR, 0), 2);
        assert_int_equal(gw_calendar_user_booked_gpus(w.b, w.in.n_bookings, 1000, SAT, SAT + DAY, 1), 1);
        assert_int_equal(gw_calendar_user_booked_gpus(w.b, w.in.n_bookings, 1001, SAT, SAT + DAY, 0), 0);
}

static void running_jobs_block(void **state) {
        struct world w;
        struct gw_calendar_placement p;

        (void) state;
        world_init(&w, 4, 0);
        add_running(&w, 17, M(0) | M(1), NOW + 3 * HOUR, 0);
        add_running(&w, 18, M(3), NOW + 5 * HOUR, 0);
        p = place(&w, 2, NOW + HOUR, HOUR);
        assert_int_equal(p.verdict, GW_PLACE_LATER);
        assert_int_equal(p.n_free, 1);
        assert_int_equal(p.start, NOW + 3 * HOUR);
        assert_int_equal(p.gpu_mask, M(0) | M(1));
        /* A job ending exactly at the start is no obstacle. */
        p = place(&w, 3, NOW + 3 * HOUR, HOUR);
        assert_int_equal(p.verdict, GW_PLACE_FITS);
        assert_int_equal(p.gpu_mask, 0x7);
        p = place(&w, 4, NOW, HOUR);
        assert_int_equal(p.verdict, GW_PLACE_LATER);
        assert_int_equal(p.start, NOW + 5 * HOUR);

        /* Nothing within the search: NEVER, and it says so. */
        struct gw_calendar_request req = { .ngpus = 4, .start = NOW, .duration = HOUR, .search = 2 * HOUR };
        assert_int_equal(gw_calendar_place(&w.in, &req, test_fmt, NULL, &p), 0);
        assert_int_equal(p.verdict, GW_PLACE_NEVER);
        assert_string_equal(
                p.message, "only 1 GPU free Fri 15:00-16:00; no window for 4 GPUs within 2h after the requested start");
}

static void drained_gpus(void **state) {
        struct world w;
        struct gw_calendar_placement p;

        (void) state;
        world_init(&w, 4, M(1));
        p = place(&w, 3, SAT, HOUR);
        assert_int_equal(p.verdict, GW_PLACE_FITS);
        assert_int_equal(p.gpu_mask, M(0) | M(2) | M(3));
        p = place(&w, 4, SAT, HOUR);
        assert_int_equal(p.verdict, GW_PLACE_NEVER);
        assert_string_equal(p.message, "only 3 of 4 GPUs are usable (the others are drained); 4 requested");
        p = place(&w, 5, SAT, HOUR);
        assert_string_equal(p.message, "this server has 4 GPUs; 5 requested");
}

static void bad_requests(void **state) {
        static const struct {
                struct gw_calendar_request req;
                const char *msg;
        } bad[] = {
                { { .ngpus = 0, .start = NOW, .duration = HOUR }, "a booking needs at least 1 GPU" },
                { { .ngpus = 65, .start = NOW, .duration = HOUR }, "a booking can hold at most 64 GPUs" },
                { { .ngpus = 1, .start = NOW, .duration = 0 }, "the duration must be positive" },
                { { .ngpus = 1, .start = NOW - HOUR, .duration = 2 * HOUR }, "the start is in the past" },
                { { .ngpus = 1, .start = INF - 1, .duration = HOUR }, "the window ends too far in the future" },
        };
        struct world w;
        struct gw_calendar_placement p;
        char msg[128];

        (void) state;
        world_init(&w, 2, 0);
        for (size_t i = 0; i < N_ELEMS(bad); i++) {
                assert_int_equal(gw_calendar_check_request(&bad[i].req, NOW, msg, sizeof(msg)), -EINVAL);
                assert_string_equal(msg, bad[i].msg);
        }
        struct gw_calendar_request ok = { .ngpus = 1, .start = NOW - 30 * SEC, .duration = HOUR };
        assert_int_equal(gw_calendar_check_request(&ok, NOW, msg, sizeof(msg)), 0);
        assert_int_equal(gw_calendar_place(&w.in, &bad[0].req, NULL, NULL, &p), -EINVAL);
        assert_int_equal(gw_calendar_place(&w.in, &bad[2].req, NULL, NULL, &p), -EINVAL);
        w.gpus[1].index = 64;
        assert_int_equal(gw_calendar_place(&w.in, &ok, NULL, NULL, &p), -EINVAL);
}

/* free_for answers from the sorted levels exactly as the plain rule over free_until does,
 * on random bookings across 64 GPUs. */
static void free_for_matches_the_rule(void **state) {
        struct world w;
        struct gw_calendar_gpus g;
        uint64_t seed = 88172645463325252ULL;

        (void) state;
        for (int round = 0; round < 200; round++) {
                world_init(&w, 64, 0);
                for (int k = 0; k < 16; k++) {
                        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
                        gw_usec_t s = NOW + (gw_usec_t) (seed % 48) * HOUR - 2 * HOUR;
                        add_booking(&w, k + 1, seed * 0x9e3779b97f4a7c15ULL, s, s + (gw_usec_t) (seed % 5 + 1) * HOUR,
                                    (enum gw_booking_state)(seed % 3));
                }
                assert_int_equal(gw_calendar_gpus_at(&w.in, NOW, &g), 0);
                for (int q = 0; q < 50; q++) {
                        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
                        uint64_t mask = seed * 0xbf58476d1ce4e5b9ULL;
                        gw_usec_t limit = q == 0 ? 0 : (gw_usec_t) (seed % (60 * 60)) * MIN / 60 + (q % 7) * HOUR;
                        gw_usec_t end = limit > 0 ? NOW + limit : INF;
                        uint64_t want = 0;
                        for (int i = 0; i < 64; i++)
                                if ((mask & M(i)) && !(g.owned & M(i)) && end <= g.free_until[i])
                                        want |= M(i);
                        assert_int_equal(gw_calendar_free_for(&g, mask, NOW, limit), want);
                }
        }
}

/* Backfill around bookings: a job may take a booked GPU only if it ends before the
 * booking starts; during the booking only its own jobs may. */
static void scheduler_view(void **state) {
        struct world w;
        struct gw_calendar_gpus g;
        struct gw_calendar_gate gate;

        (void) state;
        world_init(&w, 4, M(3));
        add_booking(&w, 12, M(0) | M(1), NOW + 2 * HOUR, NOW + 6 * HOUR, GW_BOOKING_APPROVED);
        add_booking(&w, 13, M(1), NOW + HOUR, NOW + 2 * HOUR, GW_BOOKING_PENDING_APPROVAL);
        add_booking(&w, 14, M(2) | M(3), NOW - HOUR, NOW + HOUR, GW_BOOKING_ACTIVE);
        add_booking(&w, 15, M(0), NOW - 2 * HOUR, NOW - HOUR, GW_BOOKING_ENDED);

        assert_int_equal(gw_calendar_gpus_at(&w.in, NOW, &g), 0);
        assert_int_equal(g.owned, M(2) | M(3));
        assert_int_equal(g.owner[2], 14);
        assert_int_equal(g.free_until[0], NOW + 2 * HOUR);
        assert_int_equal(g.next_id[0], 12);
        assert_int_equal(g.free_until[1], NOW + 2 * HOUR); /* the pending booking keeps no job off */
        assert_int_equal(g.next_id[1], 12);
        assert_true(g.free_until[5] == INF);

        assert_int_equal(gw_calendar_free_for(&g, 0xf, NOW, HOUR), M(0) | M(1));
        assert_int_equal(gw_calendar_free_for(&g, 0xf, NOW, 2 * HOUR), M(0) | M(1));
        assert_int_equal(gw_calendar_free_for(&g, 0xf, NOW, 2 * HOUR + 1), 0);
        assert_int_equal(gw_calendar_free_for(&g, 0xf0, NOW, 100 * DAY), 0xf0);
        assert_int_equal(gw_calendar_free_for(&g, 0xf0, NOW, 0), 0xf0); /* no limit: unbooked GPUs only */
        assert_int_equal(gw_calendar_free_for(&g, 0xf, NOW, 0), 0);

        /* Once its start has passed unapproved, a pending booking holds nothing now. */
        assert_int_equal(gw_calendar_gpus_at(&w.in, NOW + 90 * MIN, &g), 0);
        assert_int_equal(g.owner[1], 0);
        assert_int_equal(g.free_until[1], NOW + 2 * HOUR);
        assert_int_equal(g.owned, 0);

        assert_int_equal(gw_calendar_gate(&w.in, 0, NOW, &gate), 0);
        assert_int_equal(gate.gate, GW_GATE_NONE);
        assert_int_equal(gw_calendar_gate(&w.in, 12, NOW, &gate), 0);
        assert_int_equal(gate.gate, GW_GATE_WAIT);
        assert_int_equal(gw_calendar_gate(&w.in, 13, NOW + 90 * MIN, &gate), 0);
        assert_int_equal(gate.gate, GW_GATE_WAIT);
        assert_int_equal(gw_calendar_gate(&w.in, 12, NOW + 2 * HOUR, &gate), 0);
        assert_int_equal(gate.gate, GW_GATE_OPEN);
        assert_int_equal(gate.gpu_mask, M(0) | M(1));
        assert_int_equal(gate.until, NOW + 6 * HOUR);
        assert_int_equal(gw_calendar_gate(&w.in, 14, NOW, &gate), 0);
        assert_int_equal(gate.gate, GW_GATE_OPEN);
        assert_int_equal(gate.gpu_mask, M(2)); /* GPU 3 is drained */
        assert_int_equal(gw_calendar_gate(&w.in, 14, NOW + HOUR, &gate), 0);
        assert_int_equal(gate.gate, GW_GATE_CLOSED);
        assert_int_equal(gw_calendar_gate(&w.in, 15, NOW, &gate), 0);
        assert_int_equal(gate.gate, GW_GATE_CLOSED);
        assert_int_equal(gw_calendar_gate(&w.in, 99, NOW, &gate), 0);
        assert_int_equal(gate.gate, GW_GATE_CLOSED);

        size_t n = 0;
        struct gw_cal_window win[8];
        assert_int_equal(gw_calendar_windows(&w.in, NOW, NOW + DAY, win, N_ELEMS(win), &n), 0);
        assert_int_equal(n, 4); /* not booking 13's: awaiting approval, it holds nothing */
        assert_int_equal(win[0].gpu, 0);
        assert_int_equal(win[0].booking_id, 12);
        assert_int_equal(win[1].gpu, 1);
        assert_int_equal(win[1].booking_id, 12);
        assert_int_equal(win[2].gpu, 2);
        assert_int_equal(win[3].gpu, 3);
        assert_int_equal(gw_calendar_windows(&w.in, NOW, NOW + DAY, win, 3, &n), -ENOBUFS);
}

static size_t tick(const struct world *w, gw_usec_t now, struct gw_cal_action *a, size_t cap) {
        struct gw_calendar_params p = { .no_show = GW_CALENDAR_NO_SHOW_DEFAULT,
                                        .warn_before_end = GW_CALENDAR_WARN_DEFAULT };
        size_t n = 0;

        assert_true(gw_calendar_tick_max(&w->in) <= cap);
        assert_int_equal(gw_calendar_tick(&w->in, now, &p, a, cap, &n), 0);
        return n;
}

static void no_show(void **state) {
        struct world w;
        struct gw_cal_action a[16];
        struct gw_booking *b;

        (void) state;
        world_init(&w, 4, 0);
        b = add_booking(&w, 12, M(0) | M(1), NOW - 20 * MIN, NOW + 3 * HOUR, GW_BOOKING_ACTIVE);
        assert_int_equal(tick(&w, NOW, a, N_ELEMS(a)), 1);
        assert_int_equal(a[0].kind, GW_CAL_NO_SHOW);
        assert_int_equal(a[0].booking_id, 12);
        assert_int_equal(a[0].new_state, GW_BOOKING_RELEASED);
        /* Not yet 15 minutes. */
        assert_int_equal(tick(&w, NOW - 6 * MIN, a, N_ELEMS(a)), 0);
        /* A job of the booking pending or running: in use. */
        add_pending(&w, 30, 2, HOUR, 12);
        assert_int_equal(tick(&w, NOW, a, N_ELEMS(a)), 0);
        w.in.n_pending = 0;
        add_running(&w, 31, M(0), NOW + HOUR, 12);
        assert_int_equal(tick(&w, NOW, a, N_ELEMS(a)), 0);
        /* A job that ended 5 minutes ago restarts the clock; 15 minutes idle releases. */
        w.in.n_running = 0;
        b->last_used = NOW - 5 * MIN;
        assert_int_equal(tick(&w, NOW, a, N_ELEMS(a)), 0);
        assert_int_equal(tick(&w, NOW + 10 * MIN, a, N_ELEMS(a)), 1);
        assert_int_equal(a[0].kind, GW_CAL_NO_SHOW);
        /* Someone else's job on other GPUs does not count. */
        add_running(&w, 40, M(2), NOW + HOUR, 0);
        assert_int_equal(tick(&w, NOW + 10 * MIN, a, N_ELEMS(a)), 1);
}

static void lifecycle(void **state) {
        struct world w;
        struct gw_cal_action a[16];
        struct gw_cal_job *j;
        struct gw_booking *b;

        (void) state;
        world_init(&w, 4, 0);
        b = add_booking(&w, 12, M(0) | M(1), NOW, NOW + 2 * HOUR, GW_BOOKING_APPROVED);
        add_booking(&w, 13, M(2), NOW - 2 * HOUR, NOW - HOUR, GW_BOOKING_PENDING_APPROVAL);
        assert_int_equal(tick(&w, NOW - MIN, a, N_ELEMS(a)), 1);
        assert_int_equal(a[0].kind, GW_CAL_EXPIRE);
        assert_int_equal(a[0].booking_id, 13);
        assert_int_equal(a[0].new_state, GW_BOOKING_DENIED);
        w.in.n_bookings = 1;

        assert_int_equal(tick(&w, NOW, a, N_ELEMS(a)), 1);
        assert_int_equal(a[0].kind, GW_CAL_ACTIVATE);
        assert_int_equal(a[0].new_state, GW_BOOKING_ACTIVE);
        b->state = GW_BOOKING_ACTIVE;

        j = add_running(&w, 31, M(0) | M(1), NOW + 2 * HOUR, 12);
        add_running(&w, 32, M(2), NOW + 5 * HOUR, 0);
        assert_int_equal(tick(&w, NOW + HOUR, a, N_ELEMS(a)), 0);
        /* Five minutes before the end: warn once. */
        assert_int_equal(tick(&w, NOW + 2 * HOUR - 5 * MIN, a, N_ELEMS(a)), 1);
        assert_int_equal(a[0].kind, GW_CAL_WARN_JOB);
        assert_int_equal(a[0].job_id, 31);
        j->warned = true;
        assert_int_equal(tick(&w, NOW + 2 * HOUR - MIN, a, N_ELEMS(a)), 0);
        /* At the end: the booking ends and its job is stopped (not job 32). */
        assert_int_equal(tick(&w, NOW + 2 * HOUR, a, N_ELEMS(a)), 2);
        assert_int_equal(a[0].kind, GW_CAL_END);
        assert_int_equal(a[0].new_state, GW_BOOKING_ENDED);
        assert_int_equal(a[1].kind, GW_CAL_STOP_JOB);
        assert_int_equal(a[1].job_id, 31);
        /* Released early (unreserve) with the job still running: stop it. */
        b->state = GW_BOOKING_RELEASED;
        assert_int_equal(tick(&w, NOW + HOUR, a, N_ELEMS(a)), 1);
        assert_int_equal(a[0].kind, GW_CAL_STOP_JOB);
        /* Too little room for the actions. */
        struct gw_calendar_params p = { .no_show = 0, .warn_before_end = 0 };
        size_t n = 77;
        b->state = GW_BOOKING_ACTIVE;
        assert_int_equal(gw_calendar_tick(&w.in, NOW + 3 * HOUR, &p, a, 1, &n), -ENOBUFS);
        assert_int_equal(n, 77);
}

/* A GPU of a future booking is drained: the booking moves to a free GPU, keeping the
 * others; if none is free over its window, the daemon is told. */
static void drained_before_start(void **state) {
        struct world w;
        struct gw_cal_action a[16];

        (void) state;
        world_init(&w, 4, M(1));
        add_booking(&w, 12, M(0) | M(1), SAT, SAT + HOUR, GW_BOOKING_APPROVED);
        add_booking(&w, 13, M(1) | M(2), SAT, SAT + HOUR, GW_BOOKING_APPROVED);
        /* Awaiting approval: holds nothing, so nothing to repair (GPUs chosen at approval). */
        add_booking(&w, 14, M(1), SAT, SAT + HOUR, GW_BOOKING_PENDING_APPROVAL);
        /* GPU 3 is free over SAT..SAT+1h; only one of the two bookings can have it. */
        assert_int_equal(tick(&w, NOW, a, N_ELEMS(a)), 2);
        assert_int_equal(a[0].kind, GW_CAL_REASSIGN);
        assert_int_equal(a[0].booking_id, 12);
        assert_int_equal(a[0].gpu_mask, M(0) | M(3));
        assert_int_equal(a[1].kind, GW_CAL_CONFLICT);
        assert_int_equal(a[1].booking_id, 13);
        /* With another free GPU both move. */
        world_init(&w, 5, M(1));
        add_booking(&w, 12, M(0) | M(1), SAT, SAT + HOUR, GW_BOOKING_APPROVED);
        add_booking(&w, 13, M(1) | M(2), SAT, SAT + HOUR, GW_BOOKING_APPROVED);
        assert_int_equal(tick(&w, NOW, a, N_ELEMS(a)), 2);
        assert_int_equal(a[0].gpu_mask, M(0) | M(3));
        assert_int_equal(a[1].gpu_mask, M(2) | M(4));
}

/* 4 GPUs, GPU 3 drained; job 17 runs on GPU 0 for 2 more hours; booking 12 holds GPUs 1-2
 * from +3h to +5h.  Queue: job 20 (2 GPUs, 2h) fits now on GPUs 1-2, ending as booking 12
 * starts; job 21 (2 GPUs, 3h) cannot fit around the booking before +5h; job 22 runs in
 * booking 12; job 23 is held. */
static void build_layout_world(struct world *w) {
        world_init(w, 4, M(3));
        add_running(w, 17, M(0), NOW + 2 * HOUR, 0)->label = "alice train";
        w->run[0].start = NOW - HOUR;
        add_booking(w, 12, M(1) | M(2), NOW + 3 * HOUR, NOW + 5 * HOUR, GW_BOOKING_APPROVED)->label = "bob yolo";
        add_pending(w, 20, 2, 2 * HOUR, 0)->label = "carol sweep";
        add_pending(w, 21, 2, 3 * HOUR, 0)->label = "dave big";
        add_pending(w, 22, 1, HOUR, 12)->label = "bob eval";
        add_pending(w, 23, 1, HOUR, 0)->held = true;
}

static void layout(void **state) {
        struct world w;
        struct gw_schedule_segment seg[32];
        size_t n = 0;
        static const struct {
                int gpu;
                enum gw_segment_kind kind;
                int64_t id;
                gw_usec_t s, e;
        } want[] = {
                { 0, GW_SEG_RUNNING, 17, NOW - HOUR, NOW + 2 * HOUR },
                { 0, GW_SEG_PREDICTED, 21, NOW + 5 * HOUR, NOW + 8 * HOUR },
                { 1, GW_SEG_PREDICTED, 20, NOW, NOW + 2 * HOUR },
                { 1, GW_SEG_PREDICTED, 22, NOW + 3 * HOUR, NOW + 4 * HOUR },
                { 1, GW_SEG_BOOKING, 12, NOW + 3 * HOUR, NOW + 5 * HOUR },
                { 1, GW_SEG_PREDICTED, 21, NOW + 5 * HOUR, NOW + 8 * HOUR },
                { 2, GW_SEG_PREDICTED, 20, NOW, NOW + 2 * HOUR },
                { 2, GW_SEG_BOOKING, 12, NOW + 3 * HOUR, NOW + 5 * HOUR },
                { 3, GW_SEG_DRAINED, 0, NOW, NOW + 72 * HOUR },
        };

        (void) state;
        build_layout_world(&w);
        assert_true(gw_schedule_layout_max(&w.in) <= N_ELEMS(seg));
        assert_int_equal(gw_schedule_layout(&w.in, NOW, 72 * HOUR, seg, N_ELEMS(seg), &n), 0);
        for (size_t i = 0; i < n && i < N_ELEMS(want); i++)
                if (seg[i].gpu != want[i].gpu || seg[i].kind != want[i].kind || seg[i].id != want[i].id ||
                    seg[i].start != want[i].s || seg[i].end != want[i].e)
                        fail_msg("segment %zu: gpu %d %s %lld %+lldm..%+lldm", i, seg[i].gpu,
                                 gw_segment_kind_name(seg[i].kind), (long long) seg[i].id,
                                 (long long) ((seg[i].start - NOW) / MIN), (long long) ((seg[i].end - NOW) / MIN));
        assert_int_equal(n, N_ELEMS(want));
        assert_string_equal(seg[0].label, "alice train");
        assert_int_equal(seg[3].booking_id, 12);

        /* A short horizon drops predictions starting after it, and too small a buffer says so. */
        assert_int_equal(gw_schedule_layout(&w.in, NOW, 4 * HOUR, seg, N_ELEMS(seg), &n), 0);
        assert_int_equal(n, 7);
        assert_int_equal(gw_schedule_layout(&w.in, NOW, 72 * HOUR, seg, 3, &n), -ENOBUFS);
        assert_int_equal(gw_schedule_layout(&w.in, NOW, 0, seg, 3, &n), -EINVAL);
}

/* The prediction never puts a job across a booking, and a booking job never outside it. */
static void layout_respects_bookings(void **state) {
        struct world w;
        struct gw_schedule_segment seg[64];
        size_t n = 0;

        (void) state;
        world_init(&w, 2, 0);
        add_booking(&w, 1, M(0), NOW + HOUR, NOW + 2 * HOUR, GW_BOOKING_APPROVED);
        add_booking(&w, 2, M(1), NOW + 90 * MIN, NOW + 3 * HOUR, GW_BOOKING_APPROVED);
        add_booking(&w, 3, M(0), NOW + 2 * HOUR, NOW + 4 * HOUR, GW_BOOKING_ACTIVE); /* adjoins 1 */
        add_pending(&w, 10, 2, HOUR, 0);
        add_pending(&w, 11, 1, 3 * HOUR, 0);
        add_pending(&w, 12, 2, 2 * HOUR, 1); /* only 1 GPU in booking 1: never */
        add_pending(&w, 13, 1, 5 * HOUR, 3); /* clipped to the booking's end */
        assert_int_equal(gw_schedule_layout(&w.in, NOW, 24 * HOUR, seg, N_ELEMS(seg), &n), 0);
        for (size_t i = 0; i < n; i++) {
                if (seg[i].kind != GW_SEG_PREDICTED)
                        continue;
                if (seg[i].id == 10)
                        assert_true(seg[i].start == NOW && seg[i].end == NOW + HOUR);
                else if (seg[i].id == 11) /* GPU 1 after booking 2; GPU 0 is booked until +4h */
                        assert_true(seg[i].gpu == 1 && seg[i].start == NOW + 3 * HOUR);
                else if (seg[i].id == 13)
                        assert_true(seg[i].gpu == 0 && seg[i].start == NOW + 2 * HOUR && seg[i].end == NOW + 4 * HOUR);
                else
                        fail_msg("unexpected prediction for job %lld", (long long) seg[i].id);
        }
}

static void chart(void **state) {
        static const char want[] = "        Fri 15:00   Sat 03:00\n"
                                   "        |           |\n"
                                   "GPU 0   AA...BBB................\n"
                                   "GPU 1   CC.DEBBB................\n"
                                   "GPU 2   CC.EE...................\n"
                                   "GPU 3   xxxxxxxxxxxxxxxxxxxxxxxx\n"
                                   "Legend: . free  x drained\n"
                                   "  A  job 17  running until Fri 17:00  alice train\n"
                                   "  B  job 21  predicted Fri 20:00-23:00  dave big\n"
                                   "  C  job 20  predicted Fri 15:00-17:00  carol sweep\n"
                                   "  D  job 22  predicted Fri 18:00-19:00  bob eval\n"
                                   "  E  booking 12  Fri 18:00-20:00  bob yolo\n";
        struct world w;
        struct gw_schedule_segment seg[32];
        char buf[2048];
        size_t n = 0;
        int len;

        (void) state;
        build_layout_world(&w);
        assert_int_equal(gw_schedule_layout(&w.in, NOW, 72 * HOUR, seg, N_ELEMS(seg), &n), 0);
        len = gw_schedule_render_text(seg, n, 0xf, NOW, NOW + 24 * HOUR, HOUR, test_fmt, NULL, buf, sizeof(buf));
        assert_string_equal(buf, want);
        assert_int_equal(len, (int) strlen(want));
        /* Truncation is reported and the buffer stays a string. */
        assert_int_equal(gw_schedule_render_text(seg, n, 0xf, NOW, NOW + 24 * HOUR, HOUR, test_fmt, NULL, buf, 40),
                         -ENOBUFS);
        assert_int_equal(strlen(buf), 39);
        assert_int_equal(
                gw_schedule_render_text(seg, n, 0xf, NOW, NOW + 2000 * HOUR, HOUR, test_fmt, NULL, buf, sizeof(buf)),
                -EINVAL);
}

/* Every item of the legend is in the drawing: a short running job before a booking on its GPU
 * takes the cell the booking covered more of (the booking keeps its others), and items that
 * share their only column with a longer one go on lines under the row. */
static void chart_draws_short_items(void **state) {
        static const char want[] =
                "        Fri 15:00\n"
                "        |\n"
                "GPU 0   ABBB........\n"
                "GPU 1   E...........\n"
                "        C\n"
                "        D\n"
                "Legend: . free  x drained\n"
                "  A  job 5  running until Fri 15:10  short\n"
                "  B  booking 7  Fri 15:20-19:00  later\n"
                "  C  job 8  running until Fri 15:10\n"
                "  D  job 9  predicted Fri 15:10-15:20\n"
                "  E  booking 10  Fri 15:30-15:50\n"
                "  A line under a GPU's row shows what shares a column with a longer item on that GPU.\n";
        const struct gw_schedule_segment seg[] = {
                { .gpu = 0, .start = NOW, .end = NOW + 10 * MIN, .kind = GW_SEG_RUNNING, .id = 5, .label = "short" },
                { .gpu = 0,
                  .start = NOW + 20 * MIN,
                  .end = NOW + 4 * HOUR,
                  .kind = GW_SEG_BOOKING,
                  .id = 7,
                  .label = "later" },
                { .gpu = 1, .start = NOW, .end = NOW + 10 * MIN, .kind = GW_SEG_RUNNING, .id = 8 },
                { .gpu = 1, .start = NOW + 10 * MIN, .end = NOW + 20 * MIN, .kind = GW_SEG_PREDICTED, .id = 9 },
                { .gpu = 1, .start = NOW + 30 * MIN, .end = NOW + 50 * MIN, .kind = GW_SEG_BOOKING, .id = 10 },
        };
        char buf[2048];

        (void) state;
        int len = gw_schedule_render_text(seg, N_ELEMS(seg), 0x3, NOW, NOW + 12 * HOUR, HOUR, test_fmt, NULL, buf,
                                          sizeof(buf));
        assert_string_equal(buf, want);
        assert_int_equal(len, (int) strlen(want));
}

/* More items in one column than the lines under a row hold: the one left out says so. */
static void chart_marks_what_it_cannot_draw(void **state) {
        struct gw_schedule_segment seg[18];
        char buf[8192];

        (void) state;
        for (int i = 0; i < 18; i++)
                seg[i] = (struct gw_schedule_segment){ .gpu = 0,
                                                       .start = NOW + i * 3 * MIN,
                                                       .end = NOW + i * 3 * MIN + 2 * MIN,
                                                       .kind = GW_SEG_PREDICTED,
                                                       .id = 100 + i };
        assert_true(gw_schedule_render_text(seg, N_ELEMS(seg), 0x1, NOW, NOW + 12 * HOUR, HOUR, test_fmt, NULL, buf,
                                            sizeof(buf)) > 0);
        assert_non_null(strstr(buf, "GPU 0   A...........\n        B\n        C\n"));
        assert_non_null(strstr(buf, "\n        Q\nLegend:"));
        assert_non_null(strstr(buf, "  R  job 117  predicted Fri 15:51-15:53  (not drawn: too many in one column)\n"));
        assert_null(strstr(buf, "job 116  predicted Fri 15:48-15:50  (not drawn"));
}

/* A booking awaiting approval holds nothing: others are placed over it, it counts in no
 * user's booked GPUs, and it is denied once unanswered for pending_ttl (or at its end). */
static void pending_holds_nothing(void **state) {
        struct world w;
        struct gw_cal_action a[16];
        struct gw_calendar_params p = { .no_show = 0, .warn_before_end = 0, .pending_ttl = 7 * DAY };
        size_t n = 0;

        (void) state;
        world_init(&w, 4, 0);
        struct gw_booking *b =
                add_booking(&w, 1, M(0) | M(1) | M(2), NOW + 6 * HOUR, NOW + 3650 * DAY, GW_BOOKING_PENDING_APPROVAL);
        b->created = NOW;
        struct gw_calendar_placement pl = place(&w, 3, NOW + 7 * HOUR, HOUR);
        assert_int_equal(pl.verdict, GW_PLACE_FITS);
        assert_int_equal(pl.gpu_mask, M(0) | M(1) | M(2));
        assert_int_equal(gw_calendar_user_booked_gpus(w.b, w.in.n_bookings, 1000, NOW, NOW + DAY, 0), 0);
        /* Approving it: placed again, ignoring itself; another booking now in the way. */
        add_booking(&w, 2, M(1) | M(2), NOW + 7 * HOUR, NOW + 8 * HOUR, GW_BOOKING_APPROVED);
        struct gw_calendar_request req = { .ngpus = 3,
                                           .start = b->start,
                                           .duration = b->end - b->start,
                                           .ignore_id = 1 };
        assert_int_equal(gw_calendar_place(&w.in, &req, test_fmt, NULL, &pl), 0);
        assert_int_not_equal(pl.verdict, GW_PLACE_FITS);
        w.in.n_bookings = 1;
        /* Unanswered: denied at the TTL, not before; 0 turns it off. */
        assert_int_equal(gw_calendar_tick(&w.in, NOW + 7 * DAY - SEC, &p, a, N_ELEMS(a), &n), 0);
        assert_int_equal(n, 0);
        assert_int_equal(gw_calendar_tick(&w.in, NOW + 7 * DAY, &p, a, N_ELEMS(a), &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(a[0].kind, GW_CAL_EXPIRE_UNANSWERED);
        assert_int_equal(a[0].booking_id, 1);
        assert_int_equal(a[0].new_state, GW_BOOKING_DENIED);
        p.pending_ttl = 0;
        assert_int_equal(gw_calendar_tick(&w.in, NOW + 7 * DAY, &p, a, N_ELEMS(a), &n), 0);
        assert_int_equal(n, 0);
        /* Its creation unknown (older records): only its end denies it. */
        p.pending_ttl = 7 * DAY;
        b->created = 0;
        assert_int_equal(gw_calendar_tick(&w.in, NOW + 8 * DAY, &p, a, N_ELEMS(a), &n), 0);
        assert_int_equal(n, 0);
        assert_true(gw_booking_state_is_open(GW_BOOKING_PENDING_APPROVAL));
        assert_false(gw_booking_state_holds_capacity(GW_BOOKING_PENDING_APPROVAL));
}

static void names(void **state) {
        (void) state;
        assert_string_equal(gw_booking_state_name(GW_BOOKING_PENDING_APPROVAL), "PENDING_APPROVAL");
        assert_int_equal(gw_booking_state_from_name("active"), GW_BOOKING_ACTIVE);
        assert_int_equal(gw_booking_state_from_name("bogus"), _GW_BOOKING_STATE_INVALID);
        assert_null(gw_booking_state_name(_GW_BOOKING_STATE_MAX));
        assert_true(gw_booking_transition_ok(GW_BOOKING_PENDING_APPROVAL, GW_BOOKING_APPROVED));
        assert_true(gw_booking_transition_ok(GW_BOOKING_ACTIVE, GW_BOOKING_RELEASED));
        assert_false(gw_booking_transition_ok(GW_BOOKING_ENDED, GW_BOOKING_ACTIVE));
        assert_false(gw_booking_transition_ok(GW_BOOKING_PENDING_APPROVAL, GW_BOOKING_ACTIVE));
        assert_string_equal(gw_segment_kind_name(GW_SEG_BOOKING_PENDING), "booking-pending");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(issue_example),
                cmocka_unit_test(overlapping_bookings),
                cmocka_unit_test(running_jobs_block),
                cmocka_unit_test(drained_gpus),
                cmocka_unit_test(bad_requests),
                cmocka_unit_test(scheduler_view),
                cmocka_unit_test(no_show),
                cmocka_unit_test(lifecycle),
                cmocka_unit_test(drained_before_start),
                cmocka_unit_test(layout),
                cmocka_unit_test(layout_respects_bookings),
                cmocka_unit_test(chart),
                cmocka_unit_test(chart_draws_short_items),
                cmocka_unit_test(chart_marks_what_it_cannot_draw),
                cmocka_unit_test(names),
                cmocka_unit_test(free_for_matches_the_rule),
                cmocka_unit_test(pending_holds_nothing),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
