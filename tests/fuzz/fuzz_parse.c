/* libFuzzer target: the parsers for what users type: durations, sizes and integers
 * (src/base/parse.h) and booking times (src/base/when.h, when it is there).  The input is one
 * string; each parser gets it whole, and the formatters get what parsed. */
#include <errno.h>
#include <limits.h>
#include <time.h>

#include "base/parse.h"
#include "fuzz_common.h"
#if __has_include("base/when.h")
#include "base/when.h"
#define HAVE_WHEN 1
#endif

/* A fixed "now" (2026-11-22 00:00 UTC) and time zone: the same input gives the same run. */
#define NOW ((gw_usec_t) 1795305600 * GW_USEC_PER_SEC)

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        setenv("TZ", "UTC", 1);
        tzset();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 4096)
                return 0;
        char *s = fuzz_strndup(data, size);
        char buf[64];

        gw_usec_t d = -1;
        int r = gw_parse_duration(s, &d);
        FUZZ_CHECK(r == 0 || r == -EINVAL);
        if (r == 0) {
                /* Positive, whole seconds, and it formats without overflowing. */
                FUZZ_CHECK(d > 0 && d % GW_USEC_PER_SEC == 0);
                gw_format_duration(d, buf, sizeof buf);
                FUZZ_CHECK(memchr(buf, '\0', sizeof buf) && buf[0] != '-');
                gw_format_duration(d, buf, 3); /* truncation is safe */
                FUZZ_CHECK(strlen(buf) < 3);
        } else
                FUZZ_CHECK(d == -1); /* output written only on success */

        uint64_t b = 42;
        r = gw_parse_size(s, &b);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ERANGE);
        if (r == 0) {
                gw_format_size(b, buf, sizeof buf);
                FUZZ_CHECK(memchr(buf, '\0', sizeof buf));
        } else
                FUZZ_CHECK(b == 42);

        static const long long bounds[][2] = {
                { LLONG_MIN, LLONG_MAX }, { 0, INT64_MAX }, { 1, 1 << 20 }, { -1000, 1000 }, { 0, 0 },
        };
        for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++) {
                long long v = 7;
                r = gw_parse_int(s, bounds[i][0], bounds[i][1], &v);
                FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ERANGE);
                if (r == 0) {
                        FUZZ_CHECK(v >= bounds[i][0] && v <= bounds[i][1]);
                        /* Digits only, so the value prints back to the same number. */
                        char *end;
                        FUZZ_CHECK(strtoll(s, &end, 10) == v && *end == '\0');
                } else
                        FUZZ_CHECK(v == 7);
        }
#ifdef HAVE_WHEN
        gw_usec_t t = -12345;
        r = gw_parse_when(s, NOW, &t);
        FUZZ_CHECK(r == 0 || r == -EINVAL);
        if (r < 0)
                FUZZ_CHECK(t == -12345);
#endif
        free(s);
        return 0;
}
