/* 64-GPU hosts: GPU 63 is a GPU like the others.  No bit of a GPU mask is spare to mean "no
 * GPU", and a mask of all n GPUs cannot be built with one shift when n is 64. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/calendar.h"
#include "core/predict.h"
#include "core/sched.h"

#define SEC GW_USEC_PER_SEC
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define NOW ((gw_usec_t) 1767222000 * SEC)
#define M(i) (UINT64_C(1) << (i))
#define NG 64
#define LOW63 (UINT64_MAX >> 1) /* GPUs 0..62 */

struct host {
        struct gw_sched_gpu gpus[NG];
        struct gw_booking b[4];
        struct gw_cal_job run[4];
        struct gw_cal_pending pend[4];
        struct gw_calendar_input in;
        struct gw_prediction out[4];
};

/* 64 idle, usable GPUs; nothing running, booked or queued. */
static void host_init(struct host *h) {
        memset(h, 0, sizeof(*h));
        for (int i = 0; i < NG; i++)
                h->gpus[i] = (struct gw_sched_gpu){ .index = i, .usable = true };
        h->in = (struct gw_calendar_input){ .gpus = h->gpus,
                                            .n_gpus = NG,
                                            .bookings = h->b,
                                            .running = h->run,
                                            .pending = h->pend };
}

static void book(struct host *h, uint64_t mask, gw_usec_t start, gw_usec_t end) {
        size_t i = h->in.n_bookings++;
        h->b[i] = (struct gw_booking){ .id = (int64_t) i + 1,
                                       .uid = 1000,
                                       .ngpus = __builtin_popcountll(mask),
                                       .start = start,
                                       .end = end,
                                       .gpu_mask = mask,
                                       .state = GW_BOOKING_APPROVED };
}

static void queue(struct host *h, int64_t id, int ngpus, gw_usec_t limit) {
        h->pend[h->in.n_pending++] = (struct gw_cal_pending){ .id = id, .ngpus = ngpus, .time_limit = limit };
}

static void run_on(struct host *h, int64_t id, uint64_t mask, gw_usec_t end) {
        h->run[h->in.n_running++] = (struct gw_cal_job){ .id = id, .gpu_mask = mask, .start = NOW - HOUR, .end = end };
        for (int g = 0; g < NG; g++)
                if (mask & M(g))
                        h->gpus[g].job_id = id;
}

/* ---- Predicted starts: the daemon's bookings rules replayed ---- */

/* Every GPU is booked before a 3-hour job would end: GPUs 0-62 from +30 min, GPU 63 from
 * +1 h, all until +2 h.  The job waits for the bookings to end, although all 64 GPUs are
 * idle now; it must not be put on GPU 63. */
static void predict_nothing_free_long_enough(void **state) {
        struct host h;
        (void) state;
        host_init(&h);
        book(&h, LOW63, NOW + 30 * MIN, NOW + 2 * HOUR);
        book(&h, M(63), NOW + HOUR, NOW + 2 * HOUR);
        queue(&h, 10, 1, 3 * HOUR);
        assert_int_equal(gw_predict_starts(&h.in, NOW, 24 * HOUR, h.out), 0);
        assert_int_equal(h.out[0].start, NOW + 2 * HOUR);
        assert_int_equal(h.out[0].gpu_mask, M(0));
}

/* GPU 63 is the only GPU free long enough for a 1-hour job (the others are booked from
 * +30 min): the job starts now, on it. */
static void predict_only_gpu63_free_long_enough(void **state) {
        struct host h;
        (void) state;
        host_init(&h);
        book(&h, LOW63, NOW + 30 * MIN, NOW + 2 * HOUR);
        queue(&h, 10, 1, HOUR);
        assert_int_equal(gw_predict_starts(&h.in, NOW, 24 * HOUR, h.out), 0);
        assert_int_equal(h.out[0].start, NOW);
        assert_int_equal(h.out[0].gpu_mask, M(63));
}

/* GPUs 0-62 run a job for 5 h, GPU 63 is idle, a booking far ahead keeps the bookings
 * filter on: a 1-GPU job starts now on GPU 63, a 64-GPU job once the running job ends. */
static void predict_only_gpu63_idle(void **state) {
        struct host h;
        (void) state;
        host_init(&h);
        run_on(&h, 1, LOW63, NOW + 5 * HOUR);
        book(&h, M(5), NOW + 20 * HOUR, NOW + 21 * HOUR);
        queue(&h, 10, 1, HOUR);
        queue(&h, 11, NG, 2 * HOUR);
        assert_int_equal(gw_predict_starts(&h.in, NOW, 24 * HOUR, h.out), 0);
        assert_int_equal(h.out[0].start, NOW);
        assert_int_equal(h.out[0].gpu_mask, M(63));
        assert_int_equal(h.out[1].start, NOW + 5 * HOUR);
        assert_int_equal(h.out[1].gpu_mask, UINT64_MAX);
}

/* ---- The scheduler ---- */

/* GPUs 0-62 held, GPU 63 idle: a 1-GPU job starts on GPU 63; a 64-GPU job behind it is the
 * head, reserved all 64 GPUs from the running job's end. */
static void sched_only_gpu63_idle(void **state) {
        struct gw_sched_gpu gpus[NG];
        struct gw_sched_job jobs[2] = {
                { .id = 10, .ngpus = 1, .time_limit = HOUR, .dep = GW_DEP_SATISFIED },
                { .id = 11, .ngpus = NG, .time_limit = HOUR, .dep = GW_DEP_SATISFIED },
        };
        struct gw_sched_running run = { .id = 1, .gpu_mask = LOW63, .end = NOW + 2 * HOUR };
        struct gw_sched_start starts[2];
        enum gw_job_reason reasons[2];
        struct gw_sched_plan plan = { .starts = starts, .reasons = reasons };
        (void) state;
        for (int i = 0; i < NG; i++)
                gpus[i] = (struct gw_sched_gpu){ .index = i, .usable = true, .job_id = i < 63 ? 1 : 0 };
        struct gw_sched_input in = { gpus, NG, jobs, 2, &run, 1 };
        assert_int_equal(gw_sched_plan(&in, NOW, &plan), 0);
        assert_int_equal(plan.n_starts, 1);
        assert_int_equal(starts[0].job_id, 10);
        assert_int_equal(starts[0].gpu_mask, M(63));
        assert_int_equal(plan.head_job_id, 11);
        assert_int_equal(plan.head_start, NOW + 2 * HOUR);
}

/* All 64 GPUs idle.  Job 10 may use no GPU now: it waits (Reservation), is not the head and
 * takes nothing, GPU 63 included; job 11 behind it starts on GPU 0.  A held job and one
 * waiting for another keep their own reasons. */
static void sched_none_allowed(void **state) {
        struct gw_sched_gpu gpus[NG];
        struct gw_sched_job jobs[4] = {
                { .id = 10, .ngpus = 1, .time_limit = HOUR, .dep = GW_DEP_SATISFIED, .none_allowed = true },
                { .id = 11, .ngpus = 1, .time_limit = HOUR, .dep = GW_DEP_SATISFIED },
                { .id = 12,
                  .ngpus = 1,
                  .time_limit = HOUR,
                  .dep = GW_DEP_SATISFIED,
                  .none_allowed = true,
                  .held = true },
                { .id = 13, .ngpus = 1, .time_limit = HOUR, .dep = GW_DEP_WAITING, .none_allowed = true },
        };
        struct gw_sched_start starts[4];
        enum gw_job_reason reasons[4];
        struct gw_sched_plan plan = { .starts = starts, .reasons = reasons };
        (void) state;
        for (int i = 0; i < NG; i++)
                gpus[i] = (struct gw_sched_gpu){ .index = i, .usable = true };
        struct gw_sched_input in = { gpus, NG, jobs, 4, NULL, 0 };
        assert_int_equal(gw_sched_plan(&in, NOW, &plan), 0);
        assert_int_equal(plan.n_starts, 1);
        assert_int_equal(starts[0].job_id, 11);
        assert_int_equal(starts[0].gpu_mask, M(0));
        assert_int_equal(reasons[0], GW_REASON_RESERVATION);
        assert_int_equal(reasons[2], GW_REASON_HELD);
        assert_int_equal(reasons[3], GW_REASON_DEPENDENCY);
        assert_int_equal(plan.head_job_id, 0);
}

/* ---- The bookings filter the daemon and the simulator apply ---- */

/* The filter for jobs outside bookings (gw_calendar_limit_job) with the bookings of
 * predict_nothing_free_long_enough: a 3-hour job may use no GPU, a 45-minute job only GPU 63,
 * a 20-minute job any. */
static void limit_job_64(void **state) {
        struct host h;
        struct gw_calendar_gpus g;
        uint64_t all = gw_sched_mask_first(NG);
        (void) state;
        host_init(&h);
        book(&h, LOW63, NOW + 30 * MIN, NOW + 2 * HOUR);
        book(&h, M(63), NOW + HOUR, NOW + 2 * HOUR);
        assert_int_equal(gw_calendar_gpus_at(&h.in, NOW, &g), 0);

        struct gw_sched_job j = { .id = 1, .ngpus = 1, .time_limit = 3 * HOUR };
        gw_calendar_limit_job(&g, all, NOW, &j);
        assert_true(j.none_allowed);
        assert_int_equal(j.allowed, 0);

        j = (struct gw_sched_job){ .id = 1, .ngpus = 1, .time_limit = 45 * MIN };
        gw_calendar_limit_job(&g, all, NOW, &j);
        assert_false(j.none_allowed);
        assert_int_equal(j.allowed, M(63));
        assert_true(j.booked_out);

        j = (struct gw_sched_job){ .id = 1, .ngpus = 1, .time_limit = 20 * MIN };
        gw_calendar_limit_job(&g, all, NOW, &j);
        assert_false(j.none_allowed);
        assert_int_equal(j.allowed, 0);
        assert_false(j.booked_out);
}

/* ---- Masks of n GPUs ---- */

static void mask_first_n(void **state) {
        (void) state;
        assert_int_equal(gw_sched_mask_first(0), 0);
        assert_int_equal(gw_sched_mask_first(1), M(0));
        assert_int_equal(gw_sched_mask_first(8), 0xff);
        assert_int_equal(gw_sched_mask_first(63), LOW63);
        assert_int_equal(gw_sched_mask_first(64), UINT64_MAX);
        assert_int_equal(gw_sched_mask_first(65), UINT64_MAX);
}

static void pick_all_64(void **state) {
        (void) state;
        assert_int_equal(gw_sched_pick(UINT64_MAX, NG), UINT64_MAX);
        assert_int_equal(gw_sched_pick(M(63), 1), M(63));
        assert_int_equal(gw_sched_pick(M(63) | M(0), 2), M(63) | M(0));
        assert_int_equal(gw_sched_pick(LOW63, NG), 0);
        assert_int_equal(gw_sched_pick(UINT64_MAX, NG + 1), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(predict_nothing_free_long_enough),
                cmocka_unit_test(predict_only_gpu63_free_long_enough),
                cmocka_unit_test(predict_only_gpu63_idle),
                cmocka_unit_test(sched_only_gpu63_idle),
                cmocka_unit_test(sched_none_allowed),
                cmocka_unit_test(limit_job_64),
                cmocka_unit_test(pick_all_64),
                cmocka_unit_test(mask_first_n),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
