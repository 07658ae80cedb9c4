#include "base/when.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/parse.h"

/* "HH:MM" or "HH:MM:SS" exactly; 0 or -EINVAL. */
static int parse_clock(const char *s, int *h, int *m, int *sec) {
        int n = 0;
        /* Digits and colons only: sscanf would also take signs and blanks. */
        if (!*s || strspn(s, "0123456789:") != strlen(s))
                return -EINVAL;
        *sec = 0;
        if (sscanf(s, "%2d:%2d%n", h, m, &n) != 2)
                return -EINVAL;
        if (s[n] == ':' && sscanf(s + n, ":%2d%n", sec, &n) == 1) {
                int k;
                (void) sscanf(s, "%*2d:%*2d:%*2d%n", &k);
                n = k;
        }
        if (s[n] || *h < 0 || *h > 23 || *m < 0 || *m > 59 || *sec < 0 || *sec > 59)
                return -EINVAL;
        return 0;
}

/* Local midnight of the day of t, plus days, at h:m:s. */
static gw_usec_t local_at(gw_usec_t now, int days, int h, int m, int s) {
        time_t t = (time_t) (now / GW_USEC_PER_SEC);
        struct tm tm;
        localtime_r(&t, &tm);
        tm.tm_mday += days;
        tm.tm_hour = h;
        tm.tm_min = m;
        tm.tm_sec = s;
        tm.tm_isdst = -1;
        return (gw_usec_t) mktime(&tm) * GW_USEC_PER_SEC;
}

static int parse_relative(const char *s, gw_usec_t now, gw_usec_t *ret) {
        if (*s == '\0') {
                *ret = now;
                return 0;
        }
        if (*s != '+')
                return -EINVAL;
        gw_usec_t d, t;
        /* Through t: __builtin_add_overflow stores the wrapped sum even when it overflows,
         * and a refused time must leave *ret alone (tests/fuzz/corpus/parse/crash-when-*). */
        if (gw_parse_duration(s + 1, &d) < 0 || __builtin_add_overflow(now, d, &t))
                return -EINVAL;
        *ret = t;
        return 0;
}

/* "YYYY-MM-DD[ T]HH:MM[:SS][Z|+hh:mm|-hh:mm]" */
static int parse_date_time(const char *s, gw_usec_t *ret) {
        struct tm tm = { 0 };
        int n = 0;
        if (sscanf(s, "%4d-%2d-%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &n) != 3 || n != 10)
                return -EINVAL;
        if (s[n] != ' ' && s[n] != 'T')
                return -EINVAL;
        const char *t = s + n + 1;
        char clock[16];
        size_t cl = strspn(t, "0123456789:");
        if (cl == 0 || cl >= sizeof clock)
                return -EINVAL;
        memcpy(clock, t, cl);
        clock[cl] = '\0';
        if (parse_clock(clock, &tm.tm_hour, &tm.tm_min, &tm.tm_sec) < 0)
                return -EINVAL;
        const char *zone = t + cl;
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31)
                return -EINVAL;
        if (*zone == '\0') {
                tm.tm_isdst = -1;
                *ret = (gw_usec_t) mktime(&tm) * GW_USEC_PER_SEC;
                return 0;
        }
        long offset = 0;
        if (strcmp(zone, "Z")) {
                int zh, zm, k = 0;
                if ((zone[0] != '+' && zone[0] != '-') || sscanf(zone + 1, "%2d:%2d%n", &zh, &zm, &k) != 2 ||
                    zone[1 + k] || zh > 14 || zm > 59)
                        return -EINVAL;
                offset = (zh * 3600L + zm * 60L) * (zone[0] == '-' ? -1 : 1);
        }
        *ret = ((gw_usec_t) timegm(&tm) - offset) * GW_USEC_PER_SEC;
        return 0;
}

int gw_parse_when(const char *s, gw_usec_t now, gw_usec_t *ret) {
        if (!s)
                return -EINVAL;
        while (isspace((unsigned char) *s))
                s++;
        int h, m, sec;
        if (!strncmp(s, "now", 3))
                return parse_relative(s + 3, now, ret);
        if (*s == '+')
                return parse_relative(s, now, ret);
        if (*s == '@') {
                long long v;
                if (gw_parse_int(s + 1, 0, 253402300799LL, &v) < 0)
                        return -EINVAL;
                *ret = (gw_usec_t) v * GW_USEC_PER_SEC;
                return 0;
        }
        static const struct {
                const char *word;
                int days;
        } days[] = { { "today ", 0 }, { "tomorrow ", 1 } };
        for (size_t i = 0; i < sizeof days / sizeof days[0]; i++) {
                size_t l = strlen(days[i].word);
                if (!strncmp(s, days[i].word, l)) {
                        if (parse_clock(s + l, &h, &m, &sec) < 0)
                                return -EINVAL;
                        *ret = local_at(now, days[i].days, h, m, sec);
                        return 0;
                }
        }
        if (parse_clock(s, &h, &m, &sec) == 0) {
                gw_usec_t t = local_at(now, 0, h, m, sec);
                *ret = t < now ? local_at(now, 1, h, m, sec) : t;
                return 0;
        }
        return parse_date_time(s, ret);
}
