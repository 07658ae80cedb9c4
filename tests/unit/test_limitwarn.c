#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/limitwarn.h"

#define SEC GW_USEC_PER_SEC
#define MIN (60 * SEC)
#define T0 ((gw_usec_t) 1000 * SEC) /* a monotonic start */
#define NEVER GW_USEC_INFINITY

struct row {
        const char *what;
        gw_usec_t span; /* end - start */
        bool by_booking, signal;
        gw_usec_t before, notice;
        gw_usec_t want; /* the warning's instant after the start, or NEVER */
};

static const struct row rows[] = {
        /* The plain notice: time_limit_warn before the end. */
        { "notice before a long limit", 60 * MIN, false, false, 0, 5 * MIN, 55 * MIN },
        { "no notice when time_limit_warn is 0", 60 * MIN, false, false, 0, 0, NEVER },
        { "notice skipped where it would be at the start", 5 * MIN, false, false, 0, 5 * MIN, NEVER },
        { "notice skipped before the start", 2 * SEC, false, false, 0, 5 * MIN, NEVER },
        { "notice just after the start", 5 * MIN + 1, false, false, 0, 5 * MIN, 1 },
        { "a booking warns its jobs itself", 60 * MIN, true, false, 0, 5 * MIN, NEVER },
        /* A signal asked for: its own time, else time_limit_warn, else the default. */
        { "signal at its own time", 60 * MIN, false, true, 10 * MIN, 5 * MIN, 50 * MIN },
        { "signal at time_limit_warn", 60 * MIN, false, true, 0, 2 * MIN, 58 * MIN },
        { "signal at the default", 60 * MIN, false, true, 0, 0, 55 * MIN },
        { "signal before a booking's end too", 60 * MIN, true, true, 3 * MIN, 5 * MIN, 57 * MIN },
        /* The end comes sooner than the time asked: halfway, never at the start. */
        { "short limit: halfway", 2 * SEC, false, true, 0, 5 * MIN, 1 * SEC },
        { "short limit, default time: halfway", 2 * SEC, false, true, 0, 0, 1 * SEC },
        { "its own time equal to the span: halfway", 10 * SEC, false, true, 10 * SEC, 0, 5 * SEC },
        { "booking ends early: halfway", 4 * MIN, true, true, 10 * MIN, 0, 2 * MIN },
        { "two microseconds: at one", 2, false, true, 0, 5 * MIN, 1 },
        { "one microsecond: no halfway, never at the start", 1, false, true, 0, 5 * MIN, NEVER },
        /* Nothing to run: never. */
        { "end at the start", 0, false, true, 0, 5 * MIN, NEVER },
        { "end before the start", -5 * SEC, false, true, 0, 5 * MIN, NEVER },
        { "end before the start, notice", -5 * SEC, false, false, 0, 5 * MIN, NEVER },
};

static void limit_warn_table(void **state) {
        (void) state;
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
                const struct row *r = &rows[i];
                struct gw_limit_warn w = { .start = T0,
                                           .end = T0 + r->span,
                                           .by_booking = r->by_booking,
                                           .signal = r->signal,
                                           .before = r->before,
                                           .notice = r->notice };
                gw_usec_t at = gw_limit_warn_at(&w), before = gw_limit_warn_before(&w);
                gw_usec_t want = r->want == NEVER ? NEVER : T0 + r->want;
                if (at != want)
                        fail_msg("%s: due at %+lld us after the start, want %+lld", r->what, (long long) (at - T0),
                                 (long long) r->want);
                assert_int_equal(before, r->want == NEVER ? 0 : r->span - r->want);
                if (at != NEVER) /* the rule above all: never at (or before) the start */
                        assert_true(at > w.start && at < w.end);
        }
}

/* Every span up to a few seconds and every time asked: a signal asked for always comes,
 * strictly between the start and the end, whatever the clock's origin. */
static void signal_always_between_start_and_end(void **state) {
        (void) state;
        const gw_usec_t starts[] = { 0, T0, -T0 };
        for (size_t s = 0; s < 3; s++)
                for (gw_usec_t span = 2; span < 4 * SEC; span = span * 3 / 2 + 1)
                        for (gw_usec_t before = 0; before < 8 * SEC; before += SEC / 4) {
                                struct gw_limit_warn w = { .start = starts[s],
                                                           .end = starts[s] + span,
                                                           .signal = true,
                                                           .before = before,
                                                           .notice = 2 * SEC };
                                gw_usec_t at = gw_limit_warn_at(&w);
                                assert_true(at > w.start);
                                assert_true(at < w.end);
                        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(limit_warn_table),
                cmocka_unit_test(signal_always_between_start_and_end),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
