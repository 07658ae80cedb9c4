/* Preemption's choice of victims: who may be stopped, in which order, and only when enough. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/preempt.h"

#define S GW_USEC_PER_SEC
#define NOW (100000 * S)

static struct gw_preempt_running job(int64_t id, unsigned gpu, int prio, long started_ago, long ckpt_ago) {
        return (struct gw_preempt_running){
                .id = id,
                .gpu_mask = UINT64_C(1) << gpu,
                .priority = prio,
                .start_time = NOW - started_ago * S,
                .ckpt_time = ckpt_ago >= 0 ? NOW - ckpt_ago * S : 0,
                .preemptible = true,
                .resumable = true,
        };
}

static struct gw_preempt_need need_of(int ngpus, int prio) {
        return (struct gw_preempt_need){ .ngpus = ngpus, .priority = prio, .lossy_ok = true };
}

static void least_work_lost_first(void **state) {
        (void) state;
        struct gw_preempt_running r[] = { job(1, 0, 0, 1000, 300), job(2, 1, 0, 1000, 20), job(3, 2, 0, 50, -1) };
        struct gw_preempt_need need = need_of(1, 5);
        struct gw_preempt_plan p;
        assert_int_equal(gw_preempt_decide(&need, r, 3, NOW, &p), 0);
        assert_int_equal(p.n, 1);
        assert_int_equal(p.victims[0].id, 2);
        assert_int_equal(p.victims[0].lost_s, 20);
        assert_int_equal(p.mask, 2);
        /* No checkpoint: the whole attempt is lost. */
        assert_int_equal(gw_preempt_lost_seconds(&r[2], NOW), 50);
}

static void ties_go_to_lowest_priority_then_latest_start(void **state) {
        (void) state;
        struct gw_preempt_running r[] = { job(1, 0, 2, 1000, 10), job(2, 1, 1, 900, 10), job(3, 2, 1, 500, 10) };
        struct gw_preempt_need need = need_of(1, 5);
        struct gw_preempt_plan p;
        assert_int_equal(gw_preempt_decide(&need, r, 3, NOW, &p), 0);
        assert_int_equal(p.n, 1);
        assert_int_equal(p.victims[0].id, 3);
        r[2].priority = 2;
        assert_int_equal(gw_preempt_decide(&need, r, 3, NOW, &p), 0);
        assert_int_equal(p.victims[0].id, 2);
}

static void only_preemptible_lower_priority_resumable(void **state) {
        (void) state;
        struct gw_preempt_running r[] = { job(1, 0, 0, 100, 1), job(2, 1, 5, 100, 1), job(3, 2, 0, 100, 1) };
        r[0].preemptible = false;
        r[2].resumable = false;
        struct gw_preempt_need need = need_of(1, 5);
        struct gw_preempt_plan p;
        assert_int_equal(gw_preempt_decide(&need, r, 3, NOW, &p), 0);
        assert_int_equal(p.n, 0); /* 1 not preemptible, 2 same priority, 3 cannot resume */
        need.unresumable_ok = true;
        assert_int_equal(gw_preempt_decide(&need, r, 3, NOW, &p), 0);
        assert_int_equal(p.n, 1);
        assert_int_equal(p.victims[0].id, 3);
        r[2].stopping = true;
        assert_int_equal(gw_preempt_decide(&need, r, 3, NOW, &p), 0);
        assert_int_equal(p.n, 0);
}

static void nothing_when_it_would_not_be_enough(void **state) {
        (void) state;
        struct gw_preempt_running r[] = { job(1, 0, 0, 100, 1), job(2, 1, 9, 100, 1) };
        struct gw_preempt_need need = need_of(2, 5);
        struct gw_preempt_plan p;
        assert_int_equal(gw_preempt_decide(&need, r, 2, NOW, &p), 0);
        assert_int_equal(p.n, 0);
        /* With GPU 2 free, job 1's GPU makes two. */
        need.free_mask = 4;
        assert_int_equal(gw_preempt_decide(&need, r, 2, NOW, &p), 0);
        assert_int_equal(p.n, 1);
        assert_int_equal(p.victims[0].id, 1);
        /* Enough free already: nobody. */
        need.ngpus = 1;
        assert_int_equal(gw_preempt_decide(&need, r, 2, NOW, &p), 0);
        assert_int_equal(p.n, 0);
}

static void victims_the_others_make_unneeded_are_let_go(void **state) {
        (void) state;
        /* Two cheap 1-GPU jobs, then a 2-GPU one: two GPUs needed; the cheapest two suffice. */
        struct gw_preempt_running r[] = { job(1, 0, 0, 100, 5), job(2, 1, 0, 100, 6), job(3, 2, 0, 100, 7) };
        r[2].gpu_mask = 0xc;
        struct gw_preempt_need need = need_of(2, 5);
        struct gw_preempt_plan p;
        assert_int_equal(gw_preempt_decide(&need, r, 3, NOW, &p), 0);
        assert_int_equal(p.n, 2);
        /* Job 1 is on a GPU it may not use: job 2, then the 2-GPU job are taken, and that one
         * alone is enough: job 2 is let go. */
        need.allowed = 0xe;
        r[1].ckpt_time = NOW - 1 * S;
        assert_int_equal(gw_preempt_decide(&need, r, 3, NOW, &p), 0);
        assert_int_equal(p.n, 1);
        assert_int_equal(p.victims[0].id, 3);
        assert_int_equal(p.mask, 0xc);
}

static void a_booking_takes_any_priority_on_its_gpus(void **state) {
        (void) state;
        struct gw_preempt_running r[] = { job(1, 0, 9, 100, 1), job(2, 1, 9, 100, 1) };
        struct gw_preempt_need need = { .ngpus = 1, .allowed = 2, .booking = true, .lossy_ok = true };
        struct gw_preempt_plan p;
        assert_int_equal(gw_preempt_decide(&need, r, 2, NOW, &p), 0);
        assert_int_equal(p.n, 1);
        assert_int_equal(p.victims[0].id, 2);
}

/* With each victim's checkpoint spacing known: one whose next checkpoint is due within the
 * grace loses nothing and goes first, the soonest of them first; without lossy_ok nobody who
 * would lose work is taken, and nobody at all till a checkpoint comes due. */
static void a_checkpoint_due_within_the_grace_goes_first(void **state) {
        (void) state;
        struct gw_preempt_running r[] = { job(1, 0, 0, 5000, 10), job(2, 1, 0, 5000, 3300), job(3, 2, 0, 5000, 3400) };
        r[0].ckpt_every = r[1].ckpt_every = r[2].ckpt_every = 3600 * S; /* next: in 3590, 300, 200 s */
        struct gw_preempt_need need = need_of(1, 5);
        need.grace = 600 * S;
        struct gw_preempt_plan p;
        assert_int_equal(gw_preempt_decide(&need, r, 3, NOW, &p), 0);
        assert_int_equal(p.n, 1);
        assert_int_equal(p.victims[0].id, 3);
        assert_int_equal(p.victims[0].expect_lost_s, 0);
        assert_int_equal(p.victims[0].stop_in_s, 200);
        assert_int_equal(p.victims[0].lost_s, 3400);
        need.lossy_ok = false;
        need.ngpus = 3;
        assert_int_equal(gw_preempt_decide(&need, r, 3, NOW, &p), 0);
        assert_int_equal(p.n, 0); /* job 1 would lose 10 s + the grace: not yet */
        need.lossy_ok = true;
        assert_int_equal(gw_preempt_decide(&need, r, 3, NOW, &p), 0);
        assert_int_equal(p.n, 3);
        assert_int_equal(p.victims[2].id, 1);
        assert_int_equal(p.victims[2].expect_lost_s, 610);
        /* Overdue (a run past its usual epoch may hang): its checkpoint is not counted on. */
        r[2].ckpt_time = NOW - 4000 * S;
        assert_int_equal(gw_preempt_next_ckpt(&r[2], NOW), 0);
        assert_int_equal(gw_preempt_next_ckpt(&r[1], NOW), NOW + 300 * S);
}

/* A checkpoint predicted just within the grace is not counted on: an epoch a little longer
 * than usual would miss it.  It must come a tenth of its spacing (at most half the grace)
 * before the grace's end. */
static void a_checkpoint_at_the_edge_of_the_grace_is_not_due(void **state) {
        (void) state;
        struct gw_preempt_running r[] = { job(1, 0, 0, 5000, 3050) };
        r[0].ckpt_every = 3600 * S; /* next in 550 s: the slack is 300 s (half the grace) */
        struct gw_preempt_need need = need_of(1, 5);
        need.grace = 600 * S;
        need.lossy_ok = false;
        struct gw_preempt_plan p;
        assert_int_equal(gw_preempt_decide(&need, r, 1, NOW, &p), 0);
        assert_int_equal(p.n, 0);
        assert_int_equal(gw_preempt_decide(&need, r, 1, NOW + 250 * S, &p), 0);
        assert_int_equal(p.n, 1);
        assert_int_equal(p.victims[0].stop_in_s, 300);
        /* A spacing of 1000 s: a slack of 100 s. */
        r[0].ckpt_every = 1000 * S;
        r[0].ckpt_time = NOW - 450 * S; /* next in 550 s */
        assert_int_equal(gw_preempt_decide(&need, r, 1, NOW, &p), 0);
        assert_int_equal(p.n, 0);
        assert_int_equal(gw_preempt_decide(&need, r, 1, NOW + 50 * S, &p), 0);
        assert_int_equal(p.n, 1);
        assert_int_equal(p.victims[0].expect_lost_s, 0);
}

/* For a waiting job (no lossy_ok): a victim whose checkpoint is predicted beyond the grace is
 * left until it comes due (it goes on working meanwhile); one whose checkpoint cannot be
 * predicted loses work whenever it is taken, and is taken by its loss. */
static void a_checkpoint_predicted_later_is_waited_for(void **state) {
        (void) state;
        struct gw_preempt_running r[] = { job(1, 0, 0, 5000, 10), job(2, 1, 0, 5000, 100) };
        r[0].ckpt_every = 3600 * S; /* next in 3590 s; job 2's spacing is not known */
        struct gw_preempt_need need = need_of(1, 5);
        need.grace = 600 * S;
        need.lossy_ok = false;
        struct gw_preempt_plan p;
        assert_int_equal(gw_preempt_decide(&need, r, 2, NOW, &p), 0);
        assert_int_equal(p.n, 1);
        assert_int_equal(p.victims[0].id, 2); /* 700 s lost against job 1's 610 s, but job 1 can lose none */
        assert_int_equal(p.victims[0].expect_lost_s, 700);
        /* Both needed: job 1 is not due yet, so nobody now. */
        need.ngpus = 2;
        assert_int_equal(gw_preempt_decide(&need, r, 2, NOW, &p), 0);
        assert_int_equal(p.n, 0);
        /* 3300 s on, job 1's checkpoint is 290 s away: both go, job 1 losing nothing. */
        gw_usec_t later = NOW + 3300 * S;
        assert_int_equal(gw_preempt_decide(&need, r, 2, later, &p), 0);
        assert_int_equal(p.n, 2);
        assert_int_equal(p.victims[0].id, 1);
        assert_int_equal(p.victims[0].expect_lost_s, 0);
        assert_int_equal(p.victims[0].stop_in_s, 290);
        /* A booking's window cannot wait: lossy_ok takes job 1 at once. */
        need.lossy_ok = true;
        assert_int_equal(gw_preempt_decide(&need, r, 2, NOW, &p), 0);
        assert_int_equal(p.n, 2);
}

/* What is never waited for: no grace to wait in, and a checkpoint overdue (it may hang). */
static void no_grace_or_overdue_is_not_waited_for(void **state) {
        (void) state;
        struct gw_preempt_running r[] = { job(1, 0, 0, 5000, 10) };
        r[0].ckpt_every = 3600 * S;
        struct gw_preempt_need need = need_of(1, 5);
        need.lossy_ok = false;
        struct gw_preempt_plan p;
        assert_int_equal(gw_preempt_decide(&need, r, 1, NOW, &p), 0);
        assert_int_equal(p.n, 1); /* grace 0: it is stopped at once whenever it is taken */
        assert_int_equal(p.victims[0].expect_lost_s, 10);
        need.grace = 600 * S;
        assert_int_equal(gw_preempt_decide(&need, r, 1, NOW, &p), 0);
        assert_int_equal(p.n, 0);
        r[0].ckpt_time = NOW - 4000 * S;
        assert_int_equal(gw_preempt_decide(&need, r, 1, NOW, &p), 0);
        assert_int_equal(p.n, 1);
        assert_int_equal(p.victims[0].expect_lost_s, 4600);
}

static void bad_input(void **state) {
        (void) state;
        struct gw_preempt_need need = need_of(0, 1);
        struct gw_preempt_plan p;
        assert_int_equal(gw_preempt_decide(&need, NULL, 0, NOW, &p), -EINVAL);
        assert_int_equal(gw_preempt_decide(NULL, NULL, 0, NOW, &p), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(least_work_lost_first),
                cmocka_unit_test(ties_go_to_lowest_priority_then_latest_start),
                cmocka_unit_test(only_preemptible_lower_priority_resumable),
                cmocka_unit_test(nothing_when_it_would_not_be_enough),
                cmocka_unit_test(victims_the_others_make_unneeded_are_let_go),
                cmocka_unit_test(a_booking_takes_any_priority_on_its_gpus),
                cmocka_unit_test(a_checkpoint_due_within_the_grace_goes_first),
                cmocka_unit_test(a_checkpoint_at_the_edge_of_the_grace_is_not_due),
                cmocka_unit_test(a_checkpoint_predicted_later_is_waited_for),
                cmocka_unit_test(no_grace_or_overdue_is_not_waited_for),
                cmocka_unit_test(bad_input),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
