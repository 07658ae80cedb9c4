#include "base/hoststat.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The next unsigned decimal after *p (skipping blanks); false at the end of the line. */
static bool next_u64(const char **p, uint64_t *ret) {
        const char *s = *p;
        while (*s == ' ' || *s == '\t')
                s++;
        if (*s < '0' || *s > '9')
                return false;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno)
                return false;
        *ret = v;
        *p = end;
        return true;
}

/* The start of the line of text that begins with key, or NULL. */
static const char *line_with(const char *text, const char *key) {
        size_t n = strlen(key);
        for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
                if (!strncmp(l, key, n))
                        return l;
        return NULL;
}

int gw_hoststat_parse_cpu(const char *text, struct gw_cpu_ticks *ret, unsigned *ret_ncpu) {
        const char *l = line_with(text, "cpu ");
        if (!l)
                return -EINVAL;
        l += 4;
        /* user nice system idle iowait irq softirq steal (guest time is inside user already) */
        uint64_t f[8] = { 0 };
        size_t n = 0;
        while (n < 8 && next_u64(&l, &f[n]))
                n++;
        if (n < 4)
                return -EINVAL;
        unsigned ncpu = 0;
        for (const char *c = text; c && *c; c = strchr(c, '\n'), c = c ? c + 1 : NULL)
                if (!strncmp(c, "cpu", 3) && c[3] >= '0' && c[3] <= '9')
                        ncpu++;
        uint64_t idle = f[3] + f[4];
        uint64_t busy = f[0] + f[1] + f[2] + f[5] + f[6] + f[7];
        *ret = (struct gw_cpu_ticks){ .busy = busy, .total = busy + idle };
        if (ret_ncpu)
                *ret_ncpu = ncpu;
        return 0;
}

double gw_hoststat_cpu_percent(const struct gw_cpu_ticks *prev, const struct gw_cpu_ticks *cur) {
        if (cur->total <= prev->total || cur->busy < prev->busy)
                return -1;
        double p = 100.0 * (double) (cur->busy - prev->busy) / (double) (cur->total - prev->total);
        return p > 100 ? 100 : p;
}

/* "Key:   123 kB" of meminfo in bytes; false when absent or not in kB. */
static bool meminfo_bytes(const char *text, const char *key, uint64_t *ret) {
        const char *l = line_with(text, key);
        uint64_t kib;
        if (!l)
                return false;
        l += strlen(key);
        if (!next_u64(&l, &kib) || strncmp(l, " kB", 3) || kib > UINT64_MAX / 1024)
                return false;
        *ret = kib * 1024;
        return true;
}

int gw_hoststat_parse_meminfo(const char *text, uint64_t *ret_total, uint64_t *ret_available) {
        uint64_t total, avail;
        if (!meminfo_bytes(text, "MemTotal:", &total) || !meminfo_bytes(text, "MemAvailable:", &avail))
                return -EINVAL;
        *ret_total = total;
        *ret_available = avail;
        return 0;
}

int gw_hoststat_parse_pid_ticks(const char *line, uint64_t *ret) {
        const char *p = strrchr(line, ')');
        if (!p)
                return -EINVAL;
        p++;
        /* After ")": state (field 3), then fields 4..13, utime (14), stime (15). */
        while (*p == ' ')
                p++;
        if (!*p || *p == ' ')
                return -EINVAL;
        p++;
        uint64_t v, utime = 0, stime = 0;
        for (int field = 4; field <= 15; field++) {
                /* Fields 4-8 may be -1 (tty_nr, tpgid): skip a sign there. */
                while (*p == ' ')
                        p++;
                if (*p == '-' && field < 14)
                        p++;
                if (!next_u64(&p, &v))
                        return -EINVAL;
                if (field == 14)
                        utime = v;
                else if (field == 15)
                        stime = v;
        }
        *ret = utime + stime;
        return 0;
}

double gw_hoststat_proc_percent(uint64_t prev_ticks, uint64_t cur_ticks, long ticks_per_sec, int64_t dt_usec) {
        if (dt_usec <= 0 || ticks_per_sec <= 0 || cur_ticks < prev_ticks)
                return -1;
        return 100.0 * (double) (cur_ticks - prev_ticks) / (double) ticks_per_sec / ((double) dt_usec / 1e6);
}
