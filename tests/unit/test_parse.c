#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>

#include "base/parse.h"

#define SEC GW_USEC_PER_SEC
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define DAY (24 * HOUR)
#define KIB UINT64_C(1024)
#define MIB (KIB * 1024)
#define GIB (MIB * 1024)
#define TIB (GIB * 1024)
#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

static void duration_good(void **state) {
        static const struct {
                const char *in;
                gw_usec_t want;
        } cases[] = {
                { "90m", 90 * MIN },
                { "2h", 2 * HOUR },
                { "1d", DAY },
                { "45s", 45 * SEC },
                { "1h30m", HOUR + 30 * MIN },
                { "2d3h", 2 * DAY + 3 * HOUR },
                { "1d2h3m4s", DAY + 2 * HOUR + 3 * MIN + 4 * SEC },
                { "0h5m", 5 * MIN },
                { "30", 30 * MIN }, /* bare number = minutes, as sbatch */
                { "1", MIN },
                { "007", 7 * MIN },
                { "01:30:00", HOUR + 30 * MIN },
                { "1:00:05", HOUR + 5 * SEC },
                { "05:30", 5 * MIN + 30 * SEC },
                { "90:00", 90 * MIN },
                { "1-02:03:04", DAY + 2 * HOUR + 3 * MIN + 4 * SEC },
                { "2-00:00:00", 2 * DAY },
                { "1-12", DAY + 12 * HOUR },
                { "1-12:30", DAY + 12 * HOUR + 30 * MIN },
                { "0-00:00:01", SEC },
                { "100000d", 100000 * DAY },
                /* Forms people type: the short words and a fraction on a lone number. */
                { "30min", 30 * MIN },
                { "90sec", 90 * SEC },
                { "1h30min", HOUR + 30 * MIN },
                { "2h5min10sec", 2 * HOUR + 5 * MIN + 10 * SEC },
                { "1.5h", HOUR + 30 * MIN },
                { "0.5d", 12 * HOUR },
                { "0.25h", 15 * MIN },
                { "2.5m", 2 * MIN + 30 * SEC },
                { "2.5min", 2 * MIN + 30 * SEC },
                { "1.5", MIN + 30 * SEC }, /* bare number = minutes, fraction too */
                { "2.0s", 2 * SEC },
                { "0.01h", 36 * SEC },
                { "1.000000", MIN },
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                gw_usec_t got = -1;
                int r = gw_parse_duration(cases[i].in, &got);
                if (r != 0 || got != cases[i].want)
                        fail_msg("\"%s\": r=%d got=%lld want=%lld", cases[i].in, r, (long long) got,
                                 (long long) cases[i].want);
        }
}

static void duration_bad(void **state) {
        static const char *const cases[] = {
                "",
                "-5m",
                "-5",
                "0",
                "0m",
                "0s",
                "0h0m",
                "00:00",
                "0-00:00:00",
                "3fortnights",
                "1.5x",
                "x",
                "m",
                "h1",
                "5 m",
                " 5m",
                "5m ",
                "1h 30m",
                "5m\n",
                "1h30",
                "30m1h",
                "1h1h",
                "5M",
                "5H",
                "1w",
                "+5m",
                "5mm",
                "1:60",
                "1:2:3:4",
                "1:",
                ":30",
                "1::2",
                "1:123",
                "1-24:00:00",
                "1-",
                "-1-00:00",
                "1-2-3",
                "1h-30m",
                "1:30m",
                "9999999999999999999999m",
                "106751992d",
                "153722867280912931m",
                "99999999999999999999",
                "9223372036854775807s",
                "18446744073709551615",
                "2562047788015216h",
                /* Refused on purpose: plurals and long words, a fraction with another unit, of
                 * seconds or not whole seconds, stray dots, signs and blanks. */
                "30mins",
                "30 mins",
                "30 min",
                "2hours",
                "1hr",
                "1day",
                "5secs",
                "1ms",
                "5mn",
                "1hmin",
                "1min30",
                "1MIN",
                "1.5h30m",
                "1h0.5m",
                "30m1.5s",
                "1.5s",
                "0.5sec",
                "0.001h",
                "1.000001d",
                "1.5.h",
                "1..5h",
                "1.h",
                ".5h",
                "1.",
                ".",
                "1,5h",
                "1.5e3",
                "1.1234567h",
                "-1h",
                "1h-",
                "-1.5h",
                "+1.5h",
                "1.5 h",
                "0.0h",
                "0.00",
                "1.5hh",
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                gw_usec_t got = 12345;
                int r = gw_parse_duration(cases[i], &got);
                if (r != -EINVAL || got != 12345)
                        fail_msg("\"%s\": r=%d got=%lld, want -EINVAL and untouched", cases[i], r, (long long) got);
        }
        gw_usec_t got;
        assert_int_equal(gw_parse_duration(NULL, &got), -EINVAL);
}

static void duration_largest(void **state) {
        gw_usec_t got;
        /* The largest whole second that fits gw_usec_t parses; one more does not. */
        assert_int_equal(gw_parse_duration("9223372036854s", &got), 0);
        assert_int_equal(got, 9223372036854 * SEC);
        assert_int_equal(gw_parse_duration("9223372036855s", &got), -EINVAL);
}

static void size_good(void **state) {
        static const struct {
                const char *in;
                uint64_t want;
        } cases[] = {
                { "512", 512 * MIB }, /* bare number = MiB */
                { "0", 0 },
                { "512M", 512 * MIB },
                { "512m", 512 * MIB },
                { "16G", 16 * GIB },
                { "16g", 16 * GIB },
                { "16GiB", 16 * GIB },
                { "16gib", 16 * GIB },
                { "16GIB", 16 * GIB },
                { "80GB", 80 * GIB },
                { "80gb", 80 * GIB },
                { "1T", TIB },
                { "2TiB", 2 * TIB },
                { "4K", 4 * KIB },
                { "4kB", 4 * KIB },
                { "1.5G", GIB + GIB / 2 },
                { "0.5M", MIB / 2 },
                { "1.25", MIB + MIB / 4 },
                { "2.0T", 2 * TIB },
                { "0.1K", 102 }, /* rounded down to whole bytes */
                { "1.1234567G", GIB + (123456 * GIB) / 1000000 }, /* six fraction digits kept */
                { "16777215T", 16777215 * TIB },
                { "17592186044415M", 17592186044415 * MIB },
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                uint64_t got = 1;
                int r = gw_parse_size(cases[i].in, &got);
                if (r != 0 || got != cases[i].want)
                        fail_msg("\"%s\": r=%d got=%llu want=%llu", cases[i].in, r, (unsigned long long) got,
                                 (unsigned long long) cases[i].want);
        }
}

static void size_bad(void **state) {
        static const struct {
                const char *in;
                int want;
        } cases[] = {
                { "", -EINVAL },
                { "9Q", -EINVAL },
                { "-1", -EINVAL },
                { "-1G", -EINVAL },
                { "+1G", -EINVAL },
                { "G", -EINVAL },
                { "1.G", -EINVAL },
                { ".5G", -EINVAL },
                { "1..5G", -EINVAL },
                { "1.5.5G", -EINVAL },
                { "16 G", -EINVAL },
                { " 16G", -EINVAL },
                { "16G ", -EINVAL },
                { "16GiBs", -EINVAL },
                { "16iB", -EINVAL },
                { "16Gi", -EINVAL },
                { "16GG", -EINVAL },
                { "1e9", -EINVAL },
                { "0x10", -EINVAL },
                { "16P", -EINVAL },
                { "16B", -EINVAL },
                { "16777216T", -ERANGE },
                { "17592186044416", -ERANGE },
                { "99999999999999999999", -ERANGE },
                { "18446744073709551616K", -ERANGE },
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                uint64_t got = 77;
                int r = gw_parse_size(cases[i].in, &got);
                if (r != cases[i].want || got != 77)
                        fail_msg("\"%s\": r=%d want %d, got=%llu", cases[i].in, r, cases[i].want,
                                 (unsigned long long) got);
        }
        uint64_t got;
        assert_int_equal(gw_parse_size(NULL, &got), -EINVAL);
}

static void int_parse(void **state) {
        static const struct {
                const char *in;
                long long min, max;
                int want_r;
                long long want;
        } cases[] = {
                { "0", 0, 10, 0, 0 },
                { "10", 0, 10, 0, 10 },
                { "-3", -5, 5, 0, -3 },
                { "+3", -5, 5, 0, 3 },
                { "9223372036854775807", 0, INT64_MAX, 0, INT64_MAX },
                { "-9223372036854775808", INT64_MIN, 0, 0, INT64_MIN },
                { "11", 0, 10, -ERANGE, 0 },
                { "-1", 0, 10, -ERANGE, 0 },
                { "9223372036854775808", 0, INT64_MAX, -ERANGE, 0 },
                { "", 0, 10, -EINVAL, 0 },
                { "-", 0, 10, -EINVAL, 0 },
                { " 5", 0, 10, -EINVAL, 0 },
                { "5 ", 0, 10, -EINVAL, 0 },
                { "5x", 0, 10, -EINVAL, 0 },
                { "0x5", 0, 10, -EINVAL, 0 },
                { "1.0", 0, 10, -EINVAL, 0 },
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                long long got = 4242;
                int r = gw_parse_int(cases[i].in, cases[i].min, cases[i].max, &got);
                long long want = cases[i].want_r == 0 ? cases[i].want : 4242;
                if (r != cases[i].want_r || got != want)
                        fail_msg("\"%s\": r=%d got=%lld", cases[i].in, r, got);
        }
}

static void duration_format(void **state) {
        static const struct {
                gw_usec_t in;
                const char *want;
        } cases[] = {
                { 0, "0s" },
                { SEC / 2, "0s" },
                { 45 * SEC, "45s" },
                { 59 * SEC + SEC - 1, "59s" },
                { MIN, "1m" },
                { 12 * MIN + 30 * SEC, "12m30s" },
                { 12 * MIN, "12m" },
                { HOUR, "1h" },
                { HOUR + 30 * MIN, "1h30m" },
                { HOUR + 30 * MIN + 59 * SEC, "1h30m" },
                { HOUR + 59 * SEC, "1h" },
                { DAY, "1d" },
                { 2 * DAY + 3 * HOUR, "2d3h" },
                { 2 * DAY + 59 * MIN, "2d" },
                { 400 * DAY, "400d" },
                { -1, "-" },
                { GW_USEC_INFINITY, "-" },
        };
        char buf[32];
        for (size_t i = 0; i < N_ELEMS(cases); i++)
                assert_string_equal(gw_format_duration(cases[i].in, buf, sizeof(buf)), cases[i].want);

        /* Round trip through the parser for what it prints. */
        static const char *const trips[] = { "45s", "12m30s", "1h30m", "2d3h", "1d" };
        for (size_t i = 0; i < N_ELEMS(trips); i++) {
                gw_usec_t d;
                assert_int_equal(gw_parse_duration(trips[i], &d), 0);
                assert_string_equal(gw_format_duration(d, buf, sizeof(buf)), trips[i]);
        }

        /* Truncates, always terminated. */
        char small[4];
        memset(small, 'x', sizeof(small));
        assert_string_equal(gw_format_duration(12 * MIN + 30 * SEC, small, sizeof(small)), "12m");
        assert_ptr_equal(gw_format_duration(MIN, small, 0), small);
}

static void size_format(void **state) {
        static const struct {
                uint64_t in;
                const char *want;
        } cases[] = {
                { 0, "0 B" },
                { 1000, "1000 B" },
                { KIB, "1 KiB" },
                { 512 * MIB, "512 MiB" },
                { MIB, "1 MiB" },
                { 16 * GIB, "16.0 GiB" },
                { GIB + GIB / 2, "1.5 GiB" },
                { 80 * GIB, "80.0 GiB" },
                { TIB + TIB / 2, "1.5 TiB" },
                { 2048 * TIB, "2048.0 TiB" },
        };
        char buf[32];
        for (size_t i = 0; i < N_ELEMS(cases); i++)
                assert_string_equal(gw_format_size(cases[i].in, buf, sizeof(buf)), cases[i].want);
        assert_non_null(gw_format_size(UINT64_MAX, buf, sizeof(buf)));
}

/* --signal takes the signals a program can catch to save its work, by name only. */
static void signal_names(void **state) {
        (void) state;
        assert_int_equal(gw_signal_parse("USR1"), SIGUSR1);
        assert_int_equal(gw_signal_parse("SIGUSR2"), SIGUSR2);
        assert_int_equal(gw_signal_parse("term"), SIGTERM);
        assert_int_equal(gw_signal_parse("sigHup"), SIGHUP);
        assert_int_equal(gw_signal_parse("KILL"), -EINVAL);
        assert_int_equal(gw_signal_parse("STOP"), -EINVAL);
        assert_int_equal(gw_signal_parse("10"), -EINVAL);
        assert_int_equal(gw_signal_parse(""), -EINVAL);
        assert_int_equal(gw_signal_parse("SIG"), -EINVAL);
        assert_int_equal(gw_signal_parse(NULL), -EINVAL);
        assert_string_equal(gw_signal_name(SIGUSR1), "USR1");
        assert_string_equal(gw_signal_name(SIGWINCH), "WINCH");
        assert_null(gw_signal_name(SIGKILL));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(duration_good),   cmocka_unit_test(duration_bad), cmocka_unit_test(duration_largest),
                cmocka_unit_test(size_good),       cmocka_unit_test(size_bad),     cmocka_unit_test(int_parse),
                cmocka_unit_test(duration_format), cmocka_unit_test(size_format),  cmocka_unit_test(signal_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
