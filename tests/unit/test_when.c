#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <time.h>

#include "base/when.h"

/* 2026-11-21 23:00:00 UTC, a Saturday; the tests run with TZ=UTC. */
#define NOW ((gw_usec_t) 1795302000 * GW_USEC_PER_SEC)
#define H ((gw_usec_t) 3600 * GW_USEC_PER_SEC)

static void good(void **state) {
        static const struct {
                const char *in;
                gw_usec_t want;
        } cases[] = {
                { "now", NOW },
                { "now+2h", NOW + 2 * H },
                { "+90m", NOW + 90 * 60 * GW_USEC_PER_SEC },
                { "tomorrow 09:00", NOW + 10 * H },
                { "today 23:30", NOW + H / 2 },
                { "23:30", NOW + H / 2 },
                { "22:00", NOW + 23 * H }, /* passed today: tomorrow */
                { "2026-11-22 09:00", NOW + 10 * H },
                { "2026-11-22T09:00:00Z", NOW + 10 * H },
                { "2026-11-22T10:00:00+01:00", NOW + 10 * H },
                { "2026-11-22T08:30-00:30", NOW + 10 * H },
                { "@1795302000", NOW },
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                gw_usec_t got = 0;
                if (gw_parse_when(cases[i].in, NOW, &got) != 0 || got != cases[i].want)
                        fail_msg("'%s': got %lld, want %lld", cases[i].in, (long long) got, (long long) cases[i].want);
        }
}

static void bad(void **state) {
        static const char *const cases[] = { "",
                                             "later",
                                             "now-2h",
                                             "now+",
                                             "+3fortnights",
                                             "25:00",
                                             "12:60",
                                             "tomorrow",
                                             "tomorrow 9",
                                             "2026-13-01 10:00",
                                             "2026-11-22",
                                             "@-5",
                                             "2026-11-22T09:00+25:00",
                                             "2026-11-22 09:00 extra",
                                             "12:00:61" };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                gw_usec_t got = 0;
                if (gw_parse_when(cases[i], NOW, &got) == 0)
                        fail_msg("'%s' accepted as %lld", cases[i], (long long) got);
        }
}

int main(void) {
        setenv("TZ", "UTC", 1);
        tzset();
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(good),
                cmocka_unit_test(bad),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
