/* Predicted starts of slice jobs: a 1g.10gb job waits for a free 1g.10gb slice, not for a
 * whole GPU; slice jobs start in queue order without holding one another back. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/predict_mig.h"

#define MIN ((gw_usec_t) 60 * GW_USEC_PER_SEC)
#define NOW ((gw_usec_t) 1700000000 * GW_USEC_PER_SEC)
#define HORIZON ((gw_usec_t) 24 * 60 * MIN)
#define INF GW_USEC_INFINITY

static struct gw_mig_slot slot(int gpu, const char *profile, int64_t job) {
        return (struct gw_mig_slot){ .gpu = gpu,
                                     .profile = profile,
                                     .slices = 1,
                                     .max_slices = 7,
                                     .job_id = job,
                                     .usable = true };
}

static struct gw_mig_pending ask(int64_t id, const char *profile, int count, gw_usec_t limit) {
        struct gw_mig_pending p = { .id = id, .time_limit = limit };
        strcpy(p.ask.profile, profile);
        p.ask.count = count;
        return p;
}

/* GPU 0 cut into two 1g.10gb slices, both taken: by job 1 until +30m, job 2 until +60m.  The
 * first queued 1g.10gb job starts when job 1 ends, the next when job 2 ends, the third when
 * the first replayed one ends; no whole GPU is ever waited for. */
static void waits_for_a_free_slice(void **state) {
        (void) state;
        struct gw_mig_slot slots[] = { slot(0, "1g.10gb", 1), slot(0, "1g.10gb", 2) };
        struct gw_mig_run run[] = { { 1, NOW + 30 * MIN }, { 2, NOW + 60 * MIN } };
        struct gw_mig_pending q[] = { ask(10, "1g.10gb", 1, 120 * MIN), ask(11, "1g.10gb", 1, 120 * MIN),
                                      ask(12, "1g.10gb", 1, 120 * MIN) };
        q[0].runtime = 20 * MIN;
        struct gw_mig_predict_input in = { slots, 2, run, 2, q, 3 };
        struct gw_prediction out[3];
        assert_int_equal(gw_predict_mig_starts(&in, NOW, HORIZON, false, out), 0);
        assert_int_equal(out[0].start, NOW + 30 * MIN);
        assert_int_equal(out[0].end, NOW + 50 * MIN); /* its expected run time */
        assert_int_equal(out[0].gpu_mask, 1);
        assert_int_equal(out[1].start, NOW + 50 * MIN); /* job 10's slice frees first */
        assert_int_equal(out[2].start, NOW + 60 * MIN);
        /* The promise: every job runs its whole limit. */
        assert_int_equal(gw_predict_mig_starts(&in, NOW, HORIZON, true, out), 0);
        assert_int_equal(out[0].start, NOW + 30 * MIN);
        assert_int_equal(out[1].start, NOW + 60 * MIN);
        assert_int_equal(out[2].start, NOW + 150 * MIN);
}

/* A free slice now: the job starts now, whatever the whole GPUs do (there are none here).  A
 * two-slice ask does not hold back a one-slice job behind it, nor one in its backoff a later
 * one; a profile no GPU has, a held job and one beyond the horizon get no start. */
static void queue_order_without_reservation(void **state) {
        (void) state;
        struct gw_mig_slot slots[] = { slot(0, "1g.10gb", 0), slot(0, "1g.10gb", 1), slot(1, "2g.20gb", 0) };
        struct gw_mig_run run[] = { { 1, NOW + 10 * MIN } };
        struct gw_mig_pending q[] = { ask(20, "1g.10gb", 2, 60 * MIN), ask(21, "1g.10gb", 1, 60 * MIN),
                                      ask(22, "3g.40gb", 1, 60 * MIN), ask(23, "2g.20gb", 1, 60 * MIN),
                                      ask(24, "2g.20gb", 1, 60 * MIN), ask(25, "2g.20gb", 1, 60 * MIN) };
        q[3].held = true;
        q[4].not_before = NOW + 5 * MIN;
        struct gw_mig_predict_input in = { slots, 3, run, 1, q, 6 };
        struct gw_prediction out[6];
        assert_int_equal(gw_predict_mig_starts(&in, NOW, 90 * MIN, false, out), 0);
        assert_int_equal(out[1].start, NOW); /* the free slice, past the two-slice ask */
        assert_int_equal(out[0].start, NOW + 60 * MIN); /* both slices free once 21 ended */
        assert_int_equal(out[2].start, INF); /* no 3g.40gb anywhere */
        assert_int_equal(out[3].start, INF); /* held */
        /* 24 is in its backoff: 25 takes the 2g.20gb slice meanwhile, 24 gets it after. */
        assert_int_equal(out[5].start, NOW);
        assert_int_equal(out[5].gpu_mask, 2);
        assert_int_equal(out[4].start, NOW + 60 * MIN);
        assert_int_equal(gw_predict_mig_starts(&in, NOW, 59 * MIN, false, out), 0);
        assert_int_equal(out[4].start, INF); /* beyond the horizon */
        assert_int_equal(out[0].start, INF);
        assert_int_equal(out[4].id, 24);
}

/* A slice held by something not in running (a job the caller could not time) never frees;
 * a running job past its end frees its slice now. */
static void unknown_holders_and_overdue_ends(void **state) {
        (void) state;
        struct gw_mig_slot slots[] = { slot(0, "1g.10gb", 7), slot(0, "1g.10gb", 8) };
        struct gw_mig_run run[] = { { 8, NOW - 5 * MIN } };
        struct gw_mig_pending q[] = { ask(30, "1g.10gb", 1, 60 * MIN), ask(31, "1g.10gb", 1, 60 * MIN) };
        struct gw_mig_predict_input in = { slots, 2, run, 1, q, 2 };
        struct gw_prediction out[2];
        assert_int_equal(gw_predict_mig_starts(&in, NOW, HORIZON, false, out), 0);
        assert_int_equal(out[0].start, NOW);
        assert_int_equal(out[1].start, NOW + 60 * MIN);
        q[1].ask.count = 0;
        assert_int_equal(gw_predict_mig_starts(&in, NOW, HORIZON, false, out), -EINVAL);
        q[1].ask.count = 1;
        q[1].time_limit = 0;
        assert_int_equal(gw_predict_mig_starts(&in, NOW, HORIZON, false, out), -EINVAL);
        q[1].time_limit = MIN;
        assert_int_equal(gw_predict_mig_starts(&in, NOW, 0, false, out), -EINVAL);
}

/* A slice job after another job starts no earlier than the end the caller gives for it (a
 * whole-GPU job's predicted end): the free slice goes to the job behind it meanwhile, and it
 * takes the slice when that job's run ends.  The later of that end and a backoff counts. */
static void waits_for_the_end_of_the_job_it_follows(void **state) {
        (void) state;
        struct gw_mig_slot slots[] = { slot(0, "1g.10gb", 0) };
        struct gw_mig_pending q[] = { ask(40, "1g.10gb", 1, 60 * MIN), ask(41, "1g.10gb", 1, 30 * MIN) };
        q[0].after_end = NOW + 10 * MIN;
        struct gw_mig_predict_input in = { slots, 1, NULL, 0, q, 2 };
        struct gw_prediction out[2];
        assert_int_equal(gw_predict_mig_starts(&in, NOW, HORIZON, false, out), 0);
        assert_int_equal(out[1].start, NOW);
        assert_int_equal(out[0].start, NOW + 30 * MIN);
        assert_int_equal(out[0].end, NOW + 90 * MIN);
        q[0].after_end = NOW + 45 * MIN;
        assert_int_equal(gw_predict_mig_starts(&in, NOW, HORIZON, false, out), 0);
        assert_int_equal(out[0].start, NOW + 45 * MIN); /* the slice was free from +30m */
        q[0].not_before = NOW + 50 * MIN;
        assert_int_equal(gw_predict_mig_starts(&in, NOW, HORIZON, false, out), 0);
        assert_int_equal(out[0].start, NOW + 50 * MIN);
        q[0].after_end = -1;
        assert_int_equal(gw_predict_mig_starts(&in, NOW, HORIZON, false, out), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(waits_for_a_free_slice),
                cmocka_unit_test(queue_order_without_reservation),
                cmocka_unit_test(unknown_holders_and_overdue_ends),
                cmocka_unit_test(waits_for_the_end_of_the_job_it_follows),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
