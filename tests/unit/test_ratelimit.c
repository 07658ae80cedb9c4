#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "core/ratelimit.h"

#define SEC GW_USEC_PER_SEC
#define T0 ((gw_usec_t) 1700000000 * SEC)

static void bucket_burst_then_refill(void **state) {
        struct gw_bucket b;

        (void) state;
        assert_int_equal(gw_bucket_init(&b, 20, 50), 0); /* one token per 3 s */
        assert_int_equal(gw_bucket_available(&b, T0), 50);
        for (int i = 0; i < 50; i++)
                assert_int_equal(gw_bucket_take(&b, T0), 0);
        assert_int_equal(gw_bucket_available(&b, T0), 0);
        /* Empty: the next token comes in 3 s. */
        assert_int_equal(gw_bucket_take(&b, T0), 3);
        assert_int_equal(gw_bucket_take(&b, T0 + 1 * SEC), 2);
        assert_int_equal(gw_bucket_take(&b, T0 + 2 * SEC + 1), 1);
        assert_int_equal(gw_bucket_take(&b, T0 + 3 * SEC), 0);
        assert_int_equal(gw_bucket_take(&b, T0 + 3 * SEC), 3);
        /* A refusal takes nothing: still 3 s away. */
        assert_int_equal(gw_bucket_take(&b, T0 + 3 * SEC), 3);
        /* After a long quiet spell the bucket is full again, never more. */
        assert_int_equal(gw_bucket_available(&b, T0 + 3600 * SEC), 50);
        for (int i = 0; i < 50; i++)
                assert_int_equal(gw_bucket_take(&b, T0 + 3600 * SEC), 0);
        assert_true(gw_bucket_take(&b, T0 + 3600 * SEC) > 0);
}

/* A batch takes as many tokens as it has jobs, all or none. */
static void bucket_takes_a_batch_whole(void **state) {
        struct gw_bucket b;

        (void) state;
        assert_int_equal(gw_bucket_init(&b, 20, 50), 0);
        assert_int_equal(gw_bucket_take_n(&b, 51, T0), -E2BIG); /* never fits */
        assert_int_equal(gw_bucket_take_n(&b, 0, T0), -E2BIG);
        assert_int_equal(gw_bucket_take_n(&b, 30, T0), 0);
        assert_int_equal(gw_bucket_available(&b, T0), 20);
        /* 30 more do not fit: 10 tokens short, 3 s each; nothing is taken. */
        assert_int_equal(gw_bucket_take_n(&b, 30, T0), 30);
        assert_int_equal(gw_bucket_available(&b, T0), 20);
        assert_int_equal(gw_bucket_take_n(&b, 20, T0), 0);
        assert_int_equal(gw_bucket_take(&b, T0), 3);
        assert_int_equal(gw_bucket_take_n(&b, 50, T0 + 3600 * SEC), 0); /* full again: the whole burst */
}

static void bucket_steady_rate(void **state) {
        struct gw_bucket b;
        int ok = 0;

        (void) state;
        assert_int_equal(gw_bucket_init(&b, 60, 1), 0);
        /* One request every 100 ms for a minute: 60 pass, plus none from a burst of 1. */
        for (int i = 0; i < 600; i++)
                ok += gw_bucket_take(&b, T0 + i * SEC / 10) == 0;
        assert_int_equal(ok, 60);
}

static void bucket_clock_back(void **state) {
        struct gw_bucket b;

        (void) state;
        assert_int_equal(gw_bucket_init(&b, 60, 2), 0);
        assert_int_equal(gw_bucket_take(&b, T0), 0);
        assert_int_equal(gw_bucket_take(&b, T0), 0);
        /* The clock stepping back makes no tokens. */
        assert_true(gw_bucket_take(&b, T0 - 3600 * SEC) > 0);
        assert_int_equal(gw_bucket_take(&b, T0 + 1 * SEC), 0);
}

static void bucket_bad_params(void **state) {
        struct gw_bucket b;

        (void) state;
        assert_int_equal(gw_bucket_init(&b, 0, 5), -EINVAL);
        assert_int_equal(gw_bucket_init(&b, 5, 0), -EINVAL);
        assert_int_equal(gw_bucket_init(&b, -1, 5), -EINVAL);
        assert_int_equal(gw_bucket_init(NULL, 5, 5), -EINVAL);
}

static void table_per_user(void **state) {
        struct gw_ratelimit_entry store[2];
        struct gw_ratelimit t;

        (void) state;
        assert_int_equal(gw_ratelimit_init(&t, store, 2, 6, 2), 0); /* one per 10 s, burst 2 */
        assert_int_equal(gw_ratelimit_take(&t, 1000, T0), 0);
        assert_int_equal(gw_ratelimit_take(&t, 1000, T0), 0);
        assert_int_equal(gw_ratelimit_take(&t, 1000, T0), 10);
        /* Another user has their own bucket. */
        assert_int_equal(gw_ratelimit_take(&t, 1001, T0), 0);
        /* Table full, both users still within their burst: no room for a third. */
        assert_int_equal(gw_ratelimit_take(&t, 1002, T0), -ENOSPC);
        /* Once user 1001's bucket has refilled, its entry is reused. */
        assert_int_equal(gw_ratelimit_take(&t, 1002, T0 + 10 * SEC), 0);
        assert_int_equal(gw_ratelimit_take(&t, 1000, T0 + 10 * SEC), 0);
        assert_int_equal(gw_ratelimit_take(&t, 1000, T0 + 10 * SEC), 10);
        assert_int_equal(gw_ratelimit_init(&t, store, 0, 6, 2), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(bucket_burst_then_refill), cmocka_unit_test(bucket_steady_rate),
                cmocka_unit_test(bucket_clock_back),        cmocka_unit_test(bucket_bad_params),
                cmocka_unit_test(table_per_user),           cmocka_unit_test(bucket_takes_a_batch_whole),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
