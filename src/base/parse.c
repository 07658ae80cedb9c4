#include "base/parse.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char) (c - 'A' + 'a') : c; }

/* Reads one run of decimal digits at *p.  Returns the number of digits read (≥ 1),
 * -EINVAL if there is none, -ERANGE if the value passes max. */
static int read_digits(const char **p, uint64_t max, uint64_t *ret) {
        const char *q = *p;
        uint64_t v = 0;

        if (!is_digit(*q))
                return -EINVAL;
        for (; is_digit(*q); q++) {
                uint64_t d = (uint64_t) (*q - '0');
                if (v > (max - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *ret = v;
        int n = (int) (q - *p);
        *p = q;
        return n;
}

/* Seconds are kept below this so that the final conversion to microseconds cannot
 * overflow gw_usec_t. */
#define MAX_SECONDS ((uint64_t) (INT64_MAX / GW_USEC_PER_SEC))

static int add_scaled(uint64_t *total, uint64_t v, uint64_t scale) {
        uint64_t part;
        if (__builtin_mul_overflow(v, scale, &part) || __builtin_add_overflow(*total, part, total) ||
            *total > MAX_SECONDS)
                return -EINVAL;
        return 0;
}

/* The unit names taken after a number: one letter, or the short word people write ("30min",
 * "90sec").  No plurals or long words ("mins", "hours"): one spelling per unit keeps typos
 * such as "1hr" or "5mns" errors instead of guesses.  Lower case only: "M" would read as
 * months to some users. */
static int read_unit(const char **p, uint64_t *ret_scale) {
        static const struct {
                const char *name;
                uint64_t sec;
        } units[] = {
                { "d", 86400 }, { "h", 3600 }, { "min", 60 }, { "m", 60 }, { "sec", 1 }, { "s", 1 },
        };
        const char *q = *p;
        size_t n = 0;

        while (q[n] >= 'a' && q[n] <= 'z')
                n++;
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
                if (strlen(units[i].name) == n && !strncmp(q, units[i].name, n)) {
                        *ret_scale = units[i].sec;
                        *p = q + n;
                        return 0;
                }
        return -EINVAL;
}

/* Fraction digits past this many are refused: "1.5h" and "0.25d" need two. */
#define DURATION_FRAC_DIGITS 6

/* The ".5" of "1.5h": its digits as an integer and 10^(their count), or 0 and 1 without one. */
static int read_fraction(const char **p, uint64_t *ret_frac, uint64_t *ret_div) {
        uint64_t frac = 0, div = 1;
        const char *q = *p;

        if (*q == '.') {
                q++;
                if (!is_digit(*q))
                        return -EINVAL;
                for (int i = 0; is_digit(*q); q++, i++) {
                        if (i == DURATION_FRAC_DIGITS)
                                return -EINVAL;
                        frac = frac * 10 + (uint64_t) (*q - '0');
                        div *= 10;
                }
        }
        *ret_frac = frac;
        *ret_div = div;
        *p = q;
        return 0;
}

/* "90", "1h30m", "2d3h", "30min", "1.5h".  Units must come largest first and at most once
 * each, so that "30m1h" or "1h1h" is reported as a typo rather than silently summed.  A
 * fraction only on a lone number ("1.5h", "0.5d", "2.5" minutes), and only where it makes
 * whole seconds: "1.5h30m" and "0.001m" are refused, not rounded. */
static int parse_units(const char *s, uint64_t *ret_sec) {
        const char *p = s;
        uint64_t total = 0, v, frac, div, last_scale = UINT64_MAX;

        if (read_digits(&p, MAX_SECONDS, &v) < 0 || read_fraction(&p, &frac, &div) < 0)
                return -EINVAL;
        if (div > 1) {
                uint64_t scale = 60; /* bare number: minutes, as sbatch */
                if (*p != '\0' && read_unit(&p, &scale) < 0)
                        return -EINVAL;
                if (*p != '\0' || (frac * scale) % div != 0 || add_scaled(&total, v, scale) < 0 ||
                    add_scaled(&total, frac * scale / div, 1) < 0)
                        return -EINVAL;
                *ret_sec = total;
                return 0;
        }
        if (*p == '\0')
                return add_scaled(&total, v, 60) < 0 ? -EINVAL : (*ret_sec = total, 0);

        for (;;) {
                uint64_t scale;
                if (read_unit(&p, &scale) < 0 || scale >= last_scale)
                        return -EINVAL;
                if (add_scaled(&total, v, scale) < 0)
                        return -EINVAL;
                last_scale = scale;
                if (*p == '\0')
                        break;
                if (read_digits(&p, MAX_SECONDS, &v) < 0)
                        return -EINVAL;
        }
        *ret_sec = total;
        return 0;
}

/* Up to three ':'-separated fields.  Fields after the first have one or two digits and
 * are below 60.  The first is unbounded ("90:00" is 90 minutes, as sbatch reads it) unless
 * first_below is set: hours after "D-" stay below 24. */
static int read_clock_fields(const char **p, uint64_t first_below, uint64_t f[3], int *ret_n) {
        int n = 0;
        for (;;) {
                uint64_t below = n == 0 ? first_below : 60;
                int nd = read_digits(p, MAX_SECONDS, &f[n]);
                if (nd < 0 || (below && (nd > 2 || f[n] >= below)))
                        return -EINVAL;
                n++;
                if (**p != ':')
                        break;
                if (n == 3)
                        return -EINVAL;
                (*p)++;
        }
        *ret_n = n;
        return 0;
}

/* sbatch's forms: "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS". */
static int parse_clock(const char *s, uint64_t *ret_sec) {
        static const uint64_t plain[2][3] = { { 60, 1, 0 }, { 3600, 60, 1 } };
        static const uint64_t dayed[3][3] = { { 3600, 0, 0 }, { 3600, 60, 0 }, { 3600, 60, 1 } };
        const char *p = s;
        uint64_t days = 0, f[3] = { 0 }, total = 0;
        const uint64_t *scale;
        bool with_days = false;
        int n;

        for (const char *q = s; *q; q++)
                if (*q == '-')
                        with_days = true;
        if (with_days) {
                if (read_digits(&p, MAX_SECONDS, &days) < 0 || *p != '-')
                        return -EINVAL;
                p++;
        }
        if (read_clock_fields(&p, with_days ? 24 : 0, f, &n) < 0 || *p != '\0')
                return -EINVAL;
        if (with_days)
                scale = dayed[n - 1];
        else if (n >= 2)
                scale = plain[n - 2];
        else
                return -EINVAL;

        if (add_scaled(&total, days, 86400) < 0)
                return -EINVAL;
        for (int i = 0; i < n; i++)
                if (add_scaled(&total, f[i], scale[i]) < 0)
                        return -EINVAL;
        *ret_sec = total;
        return 0;
}

int gw_parse_duration(const char *s, gw_usec_t *ret_usec) {
        uint64_t sec = 0;
        bool clock = false;
        int r;

        if (!s || !ret_usec || *s == '\0')
                return -EINVAL;
        for (const char *q = s; *q; q++)
                if (*q == ':' || *q == '-')
                        clock = true;
        r = clock ? parse_clock(s, &sec) : parse_units(s, &sec);
        if (r < 0 || sec == 0)
                return -EINVAL;
        *ret_usec = (gw_usec_t) sec * GW_USEC_PER_SEC;
        return 0;
}

static int size_unit_shift(const char *p, unsigned *ret_shift) {
        static const char units[] = "kmgt";
        unsigned shift = 20; /* bare number: MiB */

        if (*p != '\0') {
                unsigned i = 0;
                while (units[i] && units[i] != lower(*p))
                        i++;
                if (!units[i])
                        return -EINVAL;
                shift = 10 * (i + 1);
                p++;
                if (lower(*p) == 'i' && lower(p[1]) == 'b')
                        p += 2;
                else if (lower(*p) == 'b')
                        p++;
        }
        if (*p != '\0')
                return -EINVAL;
        *ret_shift = shift;
        return 0;
}

/* Fraction digits past this many are dropped: six keep 1 byte of precision below MiB and
 * keep frac << 40 inside 64 bits. */
#define SIZE_FRAC_DIGITS 6

int gw_parse_size(const char *s, uint64_t *ret_bytes) {
        const char *p = s;
        uint64_t whole, frac = 0, frac_div = 1, bytes;
        unsigned shift;
        int r;

        if (!s || !ret_bytes)
                return -EINVAL;
        r = read_digits(&p, UINT64_MAX, &whole);
        if (r < 0)
                return r;
        if (*p == '.') {
                p++;
                if (!is_digit(*p))
                        return -EINVAL;
                for (int i = 0; is_digit(*p); p++, i++)
                        if (i < SIZE_FRAC_DIGITS) {
                                frac = frac * 10 + (uint64_t) (*p - '0');
                                frac_div *= 10;
                        }
        }
        if (size_unit_shift(p, &shift) < 0)
                return -EINVAL;
        if (whole > (UINT64_MAX >> shift))
                return -ERANGE;
        bytes = whole << shift;
        if (__builtin_add_overflow(bytes, (frac << shift) / frac_div, &bytes))
                return -ERANGE;
        *ret_bytes = bytes;
        return 0;
}

int gw_parse_int(const char *s, long long min, long long max, long long *ret) {
        const char *p;
        char *end;
        long long v;

        if (!s || !ret)
                return -EINVAL;
        /* strtoll would skip leading blanks and accept "0x"; we want digits only. */
        p = (*s == '-' || *s == '+') ? s + 1 : s;
        if (!is_digit(*p))
                return -EINVAL;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (*end != '\0')
                return -EINVAL;
        if (errno == ERANGE || v < min || v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

void gw_format_local_time(gw_usec_t t, gw_usec_t ref, char *buf, size_t n, void *userdata) {
        time_t s = (time_t) (t / GW_USEC_PER_SEC), r = (time_t) (ref / GW_USEC_PER_SEC);
        struct tm tm, rm;
        localtime_r(&s, &tm);
        localtime_r(&r, &rm);
        bool same_day = ref && tm.tm_yday == rm.tm_yday && tm.tm_year == rm.tm_year;
        strftime(buf, n, same_day ? "%H:%M" : "%a %H:%M", &tm);
}

/* Two units at most, the smaller dropped when zero: "12m30s", "12m", "1h30m", "2d3h". */
char *gw_format_duration(gw_usec_t d, char *buf, size_t n) {
        static const struct {
                long long sec;
                char name;
        } units[] = {
                { 86400, 'd' },
                { 3600, 'h' },
                { 60, 'm' },
                { 1, 's' },
        };
        long long s;
        size_t i = 0;

        if (!buf || n == 0)
                return buf;
        if (d < 0 || d == GW_USEC_INFINITY) {
                (void) snprintf(buf, n, "-");
                return buf;
        }
        s = (long long) (d / GW_USEC_PER_SEC);
        while (i + 1 < sizeof(units) / sizeof(units[0]) && s < units[i].sec)
                i++;
        long long big = s / units[i].sec, rest = s % units[i].sec;
        if (i + 1 < sizeof(units) / sizeof(units[0]) && rest / units[i + 1].sec > 0)
                (void) snprintf(buf, n, "%lld%c%lld%c", big, units[i].name, rest / units[i + 1].sec, units[i + 1].name);
        else
                (void) snprintf(buf, n, "%lld%c", big, units[i].name);
        return buf;
}

char *gw_format_size(uint64_t bytes, char *buf, size_t n) {
        static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
        unsigned i = 0;

        if (!buf || n == 0)
                return buf;
        while (i + 1 < sizeof(units) / sizeof(units[0]) && bytes >= (UINT64_C(1) << (10 * (i + 1))))
                i++;
        double v = (double) bytes / (double) (UINT64_C(1) << (10 * i));
        /* GiB and up get a decimal: "1.5 TiB" matters, "512.3 MiB" is noise. */
        if (i >= 3)
                (void) snprintf(buf, n, "%.1f %s", v, units[i]);
        else
                (void) snprintf(buf, n, "%.0f %s", v, units[i]);
        return buf;
}

static const struct {
        int sig;
        const char *name;
} warn_signals[] = {
        { SIGUSR1, "USR1" }, { SIGUSR2, "USR2" }, { SIGHUP, "HUP" }, { SIGINT, "INT" },     { SIGQUIT, "QUIT" },
        { SIGTERM, "TERM" }, { SIGALRM, "ALRM" }, { SIGURG, "URG" }, { SIGWINCH, "WINCH" },
};

int gw_signal_parse(const char *s) {
        if (!s)
                return -EINVAL;
        if (!strncasecmp(s, "SIG", 3))
                s += 3;
        for (size_t i = 0; i < sizeof warn_signals / sizeof warn_signals[0]; i++)
                if (!strcasecmp(s, warn_signals[i].name))
                        return warn_signals[i].sig;
        return -EINVAL;
}

const char *gw_signal_name(int sig) {
        for (size_t i = 0; i < sizeof warn_signals / sizeof warn_signals[0]; i++)
                if (warn_signals[i].sig == sig)
                        return warn_signals[i].name;
        return NULL;
}
