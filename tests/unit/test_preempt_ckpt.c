/* When a preempted training run may be stopped: right after a whole last.pt written after the
 * newest results.csv row, with its best.pt when one follows; never at its last epoch's. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/preempt_ckpt.h"

#define MS (GW_USEC_PER_SEC / 1000)
#define ROW (1000000 * GW_USEC_PER_SEC) /* the newest row's write */

/* Epoch 3 of 10 just ended: its row at ROW, last.pt 5 ms later (whole), best.pt of epoch 2. */
static struct gw_preempt_ckpt_look epoch3(void) {
        return (struct gw_preempt_ckpt_look){
                .row_mtime = ROW,
                .row_epoch = 3,
                .total = 10,
                .best = GW_PREEMPT_BEST_NO,
                .last = { .seen = true, .complete = true, .mtime = ROW + 5 * MS },
                .best_pt = { .seen = true, .complete = true, .mtime = ROW - 900 * MS },
        };
}

static struct gw_preempt_ckpt_verdict judge(const struct gw_preempt_ckpt_look *l, gw_usec_t after, gw_usec_t now) {
        struct gw_preempt_ckpt_verdict v;
        assert_int_equal(gw_preempt_ckpt_judge(l, after, now, &v), 0);
        return v;
}

static void a_whole_last_pt_after_the_row_counts(void **state) {
        (void) state;
        struct gw_preempt_ckpt_look l = epoch3();
        assert_int_equal(gw_preempt_ckpt_counted(&l), ROW + 5 * MS);
        struct gw_preempt_ckpt_verdict v = judge(&l, 0, ROW + 6 * MS);
        assert_int_equal(v.act, GW_PREEMPT_CKPT_STOP);
        assert_int_equal(v.epoch, 3);
        /* Written in the same clock tick as the row: the file times are coarse. */
        l.last.mtime = ROW;
        assert_int_equal(judge(&l, 0, ROW + MS).act, GW_PREEMPT_CKPT_STOP);
}

static void not_before_the_row_nor_torn_nor_missing(void **state) {
        (void) state;
        struct gw_preempt_ckpt_look l = epoch3();
        l.last.mtime = ROW - 1; /* epoch 2's: the newest row is not in it */
        assert_int_equal(gw_preempt_ckpt_counted(&l), 0);
        assert_int_equal(judge(&l, 0, ROW + MS).act, GW_PREEMPT_CKPT_WAIT);
        l = epoch3();
        l.last.complete = false; /* being written, or torn */
        assert_int_equal(judge(&l, 0, ROW + MS).act, GW_PREEMPT_CKPT_WAIT);
        l = epoch3();
        l.last.seen = false;
        assert_int_equal(judge(&l, 0, ROW + MS).act, GW_PREEMPT_CKPT_WAIT);
        l = epoch3();
        l.row_mtime = 0; /* no results.csv: nothing says which epochs last.pt holds */
        assert_int_equal(judge(&l, 0, ROW + MS).act, GW_PREEMPT_CKPT_WAIT);
}

static void only_a_checkpoint_newer_than_the_ask(void **state) {
        (void) state;
        struct gw_preempt_ckpt_look l = epoch3();
        gw_usec_t asked = gw_preempt_ckpt_counted(&l); /* it counted already when asked */
        assert_int_equal(judge(&l, asked, ROW + 500 * MS).act, GW_PREEMPT_CKPT_WAIT);
        l.row_mtime = ROW + 1000 * MS; /* epoch 4's row: last.pt is old until rewritten */
        l.row_epoch = 4;
        assert_int_equal(judge(&l, asked, ROW + 1001 * MS).act, GW_PREEMPT_CKPT_WAIT);
        l.last.mtime = ROW + 1004 * MS;
        struct gw_preempt_ckpt_verdict v = judge(&l, asked, ROW + 1005 * MS);
        assert_int_equal(v.act, GW_PREEMPT_CKPT_STOP);
        assert_int_equal(v.epoch, 4);
}

static void waits_for_the_best_pt_that_follows(void **state) {
        (void) state;
        struct gw_preempt_ckpt_look l = epoch3();
        l.best = GW_PREEMPT_BEST_YES;
        struct gw_preempt_ckpt_verdict v = judge(&l, 0, ROW + 6 * MS);
        assert_int_equal(v.act, GW_PREEMPT_CKPT_WAIT);
        assert_int_equal(v.recheck, ROW + 5 * MS + GW_PREEMPT_BEST_WAIT);
        l.best_pt.mtime = ROW + 7 * MS;
        l.best_pt.complete = false; /* being written */
        assert_int_equal(judge(&l, 0, ROW + 8 * MS).act, GW_PREEMPT_CKPT_WAIT);
        l.best_pt.complete = true;
        assert_int_equal(judge(&l, 0, ROW + 9 * MS).act, GW_PREEMPT_CKPT_STOP);
        /* One that never came (the prediction was wrong): not waited for forever. */
        l.best_pt.mtime = ROW - 900 * MS;
        assert_int_equal(judge(&l, 0, ROW + 5 * MS + GW_PREEMPT_BEST_WAIT).act, GW_PREEMPT_CKPT_STOP);
}

static void a_best_pt_that_may_follow_is_given_a_moment(void **state) {
        (void) state;
        struct gw_preempt_ckpt_look l = epoch3();
        l.best = GW_PREEMPT_BEST_MAYBE;
        struct gw_preempt_ckpt_verdict v = judge(&l, 0, ROW + 6 * MS);
        assert_int_equal(v.act, GW_PREEMPT_CKPT_WAIT);
        assert_int_equal(v.recheck, ROW + 5 * MS + GW_PREEMPT_BEST_QUIET);
        assert_int_equal(judge(&l, 0, v.recheck).act, GW_PREEMPT_CKPT_STOP);
        /* Even with no best.pt expected, one being written is not torn. */
        l.best = GW_PREEMPT_BEST_NO;
        l.best_pt = (struct gw_preempt_ckpt_file){ .seen = true, .complete = false, .mtime = ROW + 6 * MS };
        assert_int_equal(judge(&l, 0, ROW + 7 * MS).act, GW_PREEMPT_CKPT_WAIT);
}

static void the_last_epochs_checkpoint_lets_it_finish(void **state) {
        (void) state;
        struct gw_preempt_ckpt_look l = epoch3();
        l.row_epoch = l.total = 10;
        struct gw_preempt_ckpt_verdict v = judge(&l, 0, ROW + 6 * MS);
        assert_int_equal(v.act, GW_PREEMPT_CKPT_FINISHING);
        assert_int_equal(v.epoch, 10);
        l.total = -1; /* unknown: a checkpoint like any other */
        assert_int_equal(judge(&l, 0, ROW + 6 * MS).act, GW_PREEMPT_CKPT_STOP);
}

static void best_pt_expected_as_ultralytics_writes_it(void **state) {
        (void) state;
        assert_int_equal(gw_preempt_best_expected(0.4, NAN), GW_PREEMPT_BEST_YES); /* the first row */
        assert_int_equal(gw_preempt_best_expected(0.4, 0.3), GW_PREEMPT_BEST_YES);
        assert_int_equal(gw_preempt_best_expected(0.2, 0.3), GW_PREEMPT_BEST_NO);
        assert_int_equal(gw_preempt_best_expected(0.0, 0.0), GW_PREEMPT_BEST_YES); /* "not best_fitness" */
        assert_int_equal(gw_preempt_best_expected(0.3, 0.3), GW_PREEMPT_BEST_MAYBE);
        assert_int_equal(gw_preempt_best_expected(NAN, 0.3), GW_PREEMPT_BEST_MAYBE);
        assert_int_equal(gw_preempt_best_expected(NAN, NAN), GW_PREEMPT_BEST_MAYBE);
}

static void bad_input(void **state) {
        (void) state;
        struct gw_preempt_ckpt_look l = epoch3();
        struct gw_preempt_ckpt_verdict v;
        assert_int_equal(gw_preempt_ckpt_judge(NULL, 0, 0, &v), -EINVAL);
        assert_int_equal(gw_preempt_ckpt_judge(&l, 0, 0, NULL), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(a_whole_last_pt_after_the_row_counts),
                cmocka_unit_test(not_before_the_row_nor_torn_nor_missing),
                cmocka_unit_test(only_a_checkpoint_newer_than_the_ask),
                cmocka_unit_test(waits_for_the_best_pt_that_follows),
                cmocka_unit_test(a_best_pt_that_may_follow_is_given_a_moment),
                cmocka_unit_test(the_last_epochs_checkpoint_lets_it_finish),
                cmocka_unit_test(best_pt_expected_as_ultralytics_writes_it),
                cmocka_unit_test(bad_input),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
