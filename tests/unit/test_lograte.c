#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/lograte.h"

#define SEC GW_USEC_PER_SEC
#define T0 ((gw_usec_t) 1000 * SEC)
#define PERIOD (60 * SEC)

static void first_written_then_counted(void **state) {
        struct gw_lograte r = { 0 };
        uint64_t quiet = 99;

        (void) state;
        assert_true(gw_lograte_event(&r, PERIOD, T0, &quiet));
        assert_int_equal(quiet, 0);
        for (int i = 0; i < 19076; i++)
                assert_false(gw_lograte_event(&r, PERIOD, T0 + i, &quiet));
        assert_int_equal(gw_lograte_due(&r, PERIOD), T0 + PERIOD);
}

static void summary_once_a_period(void **state) {
        struct gw_lograte r = { 0 };
        uint64_t quiet = 0;
        gw_usec_t span = 0;

        (void) state;
        assert_true(gw_lograte_event(&r, PERIOD, T0, &quiet));
        for (int i = 0; i < 5; i++)
                assert_false(gw_lograte_event(&r, PERIOD, T0 + 10 * SEC, &quiet));
        assert_false(gw_lograte_flush(&r, PERIOD, T0 + PERIOD - 1, &quiet, &span)); /* not yet */
        assert_true(gw_lograte_flush(&r, PERIOD, T0 + PERIOD + 2 * SEC, &quiet, &span));
        assert_int_equal(quiet, 5);
        assert_int_equal(span, PERIOD + 2 * SEC);
        /* The summary starts the next period: what follows in it is counted, not written. */
        assert_false(gw_lograte_flush(&r, PERIOD, T0 + PERIOD + 3 * SEC, &quiet, &span));
        assert_false(gw_lograte_event(&r, PERIOD, T0 + PERIOD + 3 * SEC, &quiet));
        assert_int_equal(gw_lograte_due(&r, PERIOD), T0 + 2 * PERIOD + 2 * SEC);
        assert_true(gw_lograte_flush(&r, PERIOD, T0 + 2 * PERIOD + 2 * SEC, &quiet, &span));
        assert_int_equal(quiet, 1);
}

static void quiet_period_ends_the_flood(void **state) {
        struct gw_lograte r = { 0 };
        uint64_t quiet = 7;
        gw_usec_t span = 0;

        (void) state;
        assert_true(gw_lograte_event(&r, PERIOD, T0, &quiet));
        assert_int_equal(gw_lograte_due(&r, PERIOD), GW_USEC_INFINITY); /* nothing counted */
        assert_false(gw_lograte_flush(&r, PERIOD, T0 + 10 * PERIOD, &quiet, &span));
        /* Within the period of the first line: counted. */
        assert_false(gw_lograte_event(&r, PERIOD, T0 + PERIOD - 1, &quiet));
        assert_true(gw_lograte_flush(&r, PERIOD, T0 + PERIOD, &quiet, &span));
        /* A whole period without an event: the next is a first again. */
        assert_true(gw_lograte_event(&r, PERIOD, T0 + 2 * PERIOD, &quiet));
        assert_int_equal(quiet, 0);
}

static void late_event_carries_the_count(void **state) {
        struct gw_lograte r = { 0 };
        uint64_t quiet = 0;

        (void) state;
        /* Nobody flushed in time: the next line written says how many it follows. */
        assert_true(gw_lograte_event(&r, PERIOD, T0, &quiet));
        assert_false(gw_lograte_event(&r, PERIOD, T0 + SEC, &quiet));
        assert_false(gw_lograte_event(&r, PERIOD, T0 + 2 * SEC, &quiet));
        assert_true(gw_lograte_event(&r, PERIOD, T0 + 5 * PERIOD, &quiet));
        assert_int_equal(quiet, 2);
        assert_int_equal(gw_lograte_due(&r, PERIOD), GW_USEC_INFINITY);
}

static void take_at_stop_and_old_clock(void **state) {
        struct gw_lograte r = { 0 };
        uint64_t quiet = 0;
        gw_usec_t span = 0;

        (void) state;
        assert_false(gw_lograte_take(&r, T0, &quiet, &span)); /* never started */
        assert_true(gw_lograte_event(&r, PERIOD, T0, &quiet));
        assert_false(gw_lograte_take(&r, T0, &quiet, &span)); /* nothing counted */
        /* An instant before the last line counts as within its period. */
        assert_false(gw_lograte_event(&r, PERIOD, T0 - SEC, &quiet));
        assert_true(gw_lograte_take(&r, T0 + 3 * SEC, &quiet, &span)); /* before its period ends */
        assert_int_equal(quiet, 1);
        assert_int_equal(span, 3 * SEC);
        assert_false(gw_lograte_take(&r, T0 + 4 * SEC, &quiet, &span));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(first_written_then_counted),  cmocka_unit_test(summary_once_a_period),
                cmocka_unit_test(quiet_period_ends_the_flood), cmocka_unit_test(late_event_carries_the_count),
                cmocka_unit_test(take_at_stop_and_old_clock),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
