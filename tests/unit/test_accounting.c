/* Per-user accounting over a window (core/accounting.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "core/accounting.h"

#define H (3600 * GW_USEC_PER_SEC)

/* Only the part inside the window counts; a running job counts up to its end. */
static void window_and_weights(void **state) {
        (void) state;
        struct gw_acct a = { .since = 100 * H, .until = 110 * H };
        gw_acct_add(&a, &(struct gw_acct_job){ 1, "alice", GW_JOB_COMPLETED, 2, 98 * H, 102 * H, 90, 0 });
        gw_acct_add(&a, &(struct gw_acct_job){ 1, "alice", GW_JOB_RUNNING, 1, 108 * H, 0, 10, 0 });
        gw_acct_add(&a, &(struct gw_acct_job){ 2, "bob", GW_JOB_RECLAIMED, 4, 101 * H, 103 * H, 0, 0 });
        gw_acct_add(&a, &(struct gw_acct_job){ 2, "bob", GW_JOB_FAILED, 1, 104 * H, 105 * H, -1, 0 });
        gw_acct_add(&a, &(struct gw_acct_job){ 3, "carol", GW_JOB_COMPLETED, 1, 90 * H, 95 * H, 50, 0 });
        gw_acct_add(&a, &(struct gw_acct_job){ 3, "carol", GW_JOB_PENDING, 1, 0, 0, -1, 0 });
        gw_acct_sort(&a);
        assert_int_equal(a.n, 2);
        assert_string_equal(a.users[0].user, "bob");
        assert_int_equal(a.users[0].jobs, 2);
        assert_true(a.users[0].gpu_hours > 8.99 && a.users[0].gpu_hours < 9.01);
        assert_true(a.users[0].reclaimed_gpu_hours > 7.99 && a.users[0].reclaimed_gpu_hours < 8.01);
        assert_true(gw_acct_util(&a.users[0]) < 0.01); /* 8 h at 0%; the unmeasured hour counts for none */
        assert_int_equal(a.users[0].by_state[GW_JOB_FAILED], 1);
        assert_string_equal(a.users[1].user, "alice");
        assert_true(a.users[1].gpu_hours > 5.99 && a.users[1].gpu_hours < 6.01); /* 2 GPUs x 2 h + 2 h */
        double util = gw_acct_util(&a.users[1]); /* (4 x 90 + 2 x 10) / 6 */
        assert_true(util > 63.3 && util < 63.4);
        gw_acct_free(&a);
        assert_int_equal(a.n, 0);
}

/* A job on MIG slices counts the GPUs they make up: 2 h on one 1g.10gb of 7 is 2/7 GPU-hours. */
static void slices_count_their_share(void **state) {
        (void) state;
        struct gw_acct a = { .since = 0, .until = 10 * H };
        gw_acct_add(&a, &(struct gw_acct_job){ .uid = 4,
                                               .user = "dan",
                                               .state = GW_JOB_COMPLETED,
                                               .ngpus = 1,
                                               .start = 1 * H,
                                               .end = 3 * H,
                                               .util_mean = -1,
                                               .share = 1.0 / 7 });
        gw_acct_add(&a, &(struct gw_acct_job){ .uid = 4,
                                               .user = "dan",
                                               .state = GW_JOB_RECLAIMED,
                                               .ngpus = 1,
                                               .start = 4 * H,
                                               .end = 5 * H,
                                               .util_mean = -1,
                                               .share = 3.0 / 7 });
        assert_int_equal(a.n, 1);
        assert_float_equal(a.users[0].gpu_hours, 5.0 / 7, 1e-9);
        assert_float_equal(a.users[0].reclaimed_gpu_hours, 3.0 / 7, 1e-9);
        gw_acct_free(&a);
}

static void unmeasured_user(void **state) {
        (void) state;
        struct gw_acct a = { .since = 0, .until = 10 * H };
        gw_acct_add(&a, &(struct gw_acct_job){ 7, NULL, GW_JOB_CANCELLED, 1, 1 * H, 2 * H, -1, 0 });
        assert_int_equal(a.n, 1);
        assert_string_equal(a.users[0].user, "?");
        assert_true(gw_acct_util(&a.users[0]) < 0);
        gw_acct_free(&a);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(window_and_weights),
                cmocka_unit_test(unmeasured_user),
                cmocka_unit_test(slices_count_their_share),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
