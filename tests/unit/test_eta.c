#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <string.h>

#include "core/eta.h"

#define SEC GW_USEC_PER_SEC
#define NOW ((gw_usec_t) 1700000000 * SEC)

static struct gw_eta estimate(const struct gw_eta_epoch *e, size_t n, long done, long total, gw_usec_t since_last) {
        struct gw_eta_input in = { .epochs = e,
                                   .n_epochs = n,
                                   .done = done,
                                   .total = total,
                                   .last_end = NOW - since_last,
                                   .now = NOW };
        struct gw_eta out;
        memset(&out, 0x5a, sizeof out);
        assert_int_equal(gw_eta_estimate(&in, &out), 0);
        return out;
}

static void none_before_the_first_epoch(void **state) {
        struct gw_eta_input in = { .done = 0, .total = 100, .now = NOW };
        struct gw_eta out = { .sec_per_epoch = 42 };
        assert_int_equal(gw_eta_estimate(&in, &out), -ENODATA);
        assert_true(out.sec_per_epoch == 42); /* untouched */
        assert_int_equal(gw_eta_estimate(NULL, &out), -EINVAL);
        struct gw_eta_epoch bad = { .duration = -1 };
        in.epochs = &bad;
        in.n_epochs = 1;
        assert_int_equal(gw_eta_estimate(&in, &out), -EINVAL);
}

static void steady_epochs(void **state) {
        struct gw_eta_epoch e[10];
        for (size_t i = 0; i < 10; i++)
                e[i] = (struct gw_eta_epoch){ .duration = 120 * SEC, .startup = i == 0 };
        struct gw_eta r = estimate(e, 10, 37, 100, 0);
        assert_true(fabs(r.sec_per_epoch - 120) < 1e-9);
        assert_true(r.has_end);
        assert_int_equal(r.remaining_epochs, 63);
        assert_true(fabs(r.remaining_s - 63 * 120) < 1e-6);
        assert_int_equal(r.end, NOW + 63 * 120 * SEC);
        /* Jitter 0: the bar is the floor, 2% of what remains. */
        assert_true(r.has_error);
        assert_true(fabs(r.error_s - 0.02 * 63 * 120) < 1e-6);
        /* 30 s into the current epoch: 30 s less. */
        r = estimate(e, 10, 37, 100, 30 * SEC);
        assert_true(fabs(r.remaining_s - (63 * 120 - 30)) < 1e-6);
        /* An overdue epoch counts as done, never as negative time. */
        r = estimate(e, 10, 37, 100, 500 * SEC);
        assert_true(fabs(r.remaining_s - 62 * 120) < 1e-6);
}

static void first_epoch_weighted_down(void **state) {
        /* Warm-up: the first epoch took 10 minutes (dataset caching), the others 2. */
        struct gw_eta_epoch e[] = { { 600 * SEC, true }, { 120 * SEC, false }, { 120 * SEC, false } };
        struct gw_eta r = estimate(e, 3, 3, 10, 0);
        double plain = (600.0 + 120 + 120) / 3;
        assert_true(r.sec_per_epoch < plain);
        assert_true(r.sec_per_epoch < 200);
        assert_int_equal(r.n_startup, 1);
        /* Alone it is all there is. */
        r = estimate(e, 1, 1, 10, 0);
        assert_true(fabs(r.sec_per_epoch - 600) < 1e-9);
        assert_false(r.has_error); /* no error bars before 3 epochs */
        r = estimate(e, 2, 2, 10, 0);
        assert_false(r.has_error);
}

static void slowing_epochs_are_followed(void **state) {
        /* Each epoch 2 s longer than the one before: the estimate leans to the recent ones. */
        struct gw_eta_epoch e[20];
        for (size_t i = 0; i < 20; i++)
                e[i] = (struct gw_eta_epoch){ .duration = (gw_usec_t) (100 + 2 * i) * SEC, .startup = i == 0 };
        struct gw_eta r = estimate(e, 20, 20, 40, 0);
        double mean = 100 + 19; /* the plain mean */
        assert_true(r.sec_per_epoch > mean + 5);
        assert_true(r.sec_per_epoch <= 138);
        assert_true(r.has_error);
        assert_true(r.error_s > 0);
}

static void unknown_total_and_finished_runs(void **state) {
        struct gw_eta_epoch e[] = { { 60 * SEC, true }, { 50 * SEC, false }, { 50 * SEC, false } };
        struct gw_eta r = estimate(e, 3, 3, 0, 0);
        assert_false(r.has_end);
        assert_false(r.has_error);
        assert_true(r.sec_per_epoch > 50 && r.sec_per_epoch < 55);
        r = estimate(e, 3, 5, 5, 10 * SEC);
        assert_true(r.has_end);
        assert_int_equal(r.remaining_epochs, 0);
        assert_true(r.remaining_s == 0);
        assert_int_equal(r.end, NOW);
}

static void jitter_gives_honest_bars(void **state) {
        /* 100 s +- 10 s: the true remaining time of 50 epochs lies within the bar. */
        struct gw_eta_epoch e[12];
        for (size_t i = 0; i < 12; i++)
                e[i] = (struct gw_eta_epoch){ .duration = (gw_usec_t) (i % 2 ? 110 : 90) * SEC, .startup = false };
        struct gw_eta r = estimate(e, 12, 12, 62, 0);
        assert_true(r.sigma_s > 9 && r.sigma_s < 11);
        assert_true(fabs(r.remaining_s - 50 * 100) <= r.error_s);
        assert_true(r.error_s < 0.2 * r.remaining_s);
}

/* Steady 60 s epochs, 8 of 10 done.  70 s into epoch 9 (within the 25% slack): not overdue,
 * 60 s left.  10 min into it (hung): overdue by 9 min, and the end is the one that was due,
 * 2 min after the last epoch, not "now + 60 s" for ever. */
static void hung_run_is_overdue(void **state) {
        struct gw_eta_epoch e[8];
        (void) state;
        for (size_t i = 0; i < 8; i++)
                e[i] = (struct gw_eta_epoch){ .duration = 60 * SEC };
        struct gw_eta ok = estimate(e, 8, 8, 10, 70 * SEC);
        assert_true(ok.overdue_s == 0);
        assert_true(fabs(ok.remaining_s - 60) < 1e-6);
        assert_int_equal(ok.end, NOW + 60 * SEC);
        struct gw_eta late = estimate(e, 8, 8, 10, 600 * SEC);
        assert_true(fabs(late.overdue_s - 540) < 1e-6);
        assert_int_equal(late.end, NOW - 600 * SEC + 120 * SEC);
        /* A finished count (done == total) is never overdue: the job is past its epochs. */
        struct gw_eta done = estimate(e, 8, 10, 10, 600 * SEC);
        assert_true(done.overdue_s == 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(none_before_the_first_epoch),
                cmocka_unit_test(steady_epochs),
                cmocka_unit_test(first_epoch_weighted_down),
                cmocka_unit_test(slowing_epochs_are_followed),
                cmocka_unit_test(unknown_total_and_finished_runs),
                cmocka_unit_test(jitter_gives_honest_bars),
                cmocka_unit_test(hung_run_is_overdue),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
