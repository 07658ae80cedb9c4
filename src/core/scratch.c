/* submit --scratch's decisions (scratch.h). */
#include "core/scratch.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "core/ckpt.h"

enum gw_scratch_kind gw_scratch_kind_of(const char *name) {
        const char *base = strrchr(name, '/');
        base = base ? base + 1 : name;
        size_t l = strlen(base);
        if (!strcmp(base, "results.csv"))
                return GW_SCRATCH_CSV;
        /* ".pt" alone is a hidden file's name, not a checkpoint's. */
        if (l > 3 && !strcmp(base + l - 3, ".pt"))
                return GW_SCRATCH_PT;
        return GW_SCRATCH_OTHER;
}

bool gw_scratch_differs(const struct gw_scratch_stamp *src, const struct gw_scratch_stamp *dst) {
        if (!src->exists)
                return false;
        return !dst->exists || src->size != dst->size || src->mtime_ns != dst->mtime_ns;
}

bool gw_scratch_stable(const struct gw_scratch_stamp *before, const struct gw_scratch_stamp *after) {
        return before->exists && after->exists && before->size == after->size && before->mtime_ns == after->mtime_ns;
}

bool gw_scratch_pt_whole(const uint8_t *head, size_t head_len, const uint8_t *tail, size_t tail_len, uint64_t size,
                         char *why, size_t n) {
        char local[160];
        /* 1: the end records agree but the central directory was not all in the tail; the end
         * records are what torch.save writes last, so the file was written to its end. */
        int r = gw_ckpt_check_file(head, head_len, tail, tail_len, size, why ? why : local, why ? n : sizeof local);
        return r >= 0;
}

int gw_scratch_map(const char *path, const char *from, const char *to, char *buf, size_t n) {
        if (!path || !from || !to || !*from || !*to)
                return -EINVAL;
        size_t l = strlen(from);
        while (l > 1 && from[l - 1] == '/')
                l--;
        if (strncmp(path, from, l) || (path[l] != '/' && path[l] != '\0'))
                return 0;
        int w = snprintf(buf, n, "%s%s", to, path + l);
        if (w < 0 || (size_t) w >= n)
                return -ENAMETOOLONG;
        return 1;
}

int gw_scratch_name(int64_t job, int attempt, const uint8_t *rnd, char *buf, size_t n) {
        char hex[2 * GW_SCRATCH_NAME_RANDOM + 1] = "";
        for (size_t i = 0; rnd && i < GW_SCRATCH_NAME_RANDOM; i++) {
                hex[2 * i] = "0123456789abcdef"[rnd[i] >> 4];
                hex[2 * i + 1] = "0123456789abcdef"[rnd[i] & 0xf];
        }
        int w = snprintf(buf, n, "%" PRId64 "-%d%s%s", job, attempt, rnd ? "-" : "", hex);
        return w < 0 || (size_t) w >= n ? -ENAMETOOLONG : 0;
}

bool gw_scratch_name_valid(const char *name, int64_t job, int attempt) {
        char prefix[48];
        int w = snprintf(prefix, sizeof prefix, "%" PRId64 "-%d-", job, attempt);
        if (!name || w < 0 || (size_t) w >= sizeof prefix || strncmp(name, prefix, (size_t) w))
                return false;
        const char *hex = name + w;
        if (strlen(hex) != 2 * GW_SCRATCH_NAME_RANDOM)
                return false;
        return strspn(hex, "0123456789abcdef") == 2 * GW_SCRATCH_NAME_RANDOM;
}

/* The positive decimal at *p (no sign, no leading zero, at most max), *p moved past it: 0, or
 * -EINVAL. */
static int parse_positive(const char **p, int64_t max, int64_t *ret) {
        const char *s = *p;
        int64_t v = 0;
        if (*s < '1' || *s > '9')
                return -EINVAL;
        for (; *s >= '0' && *s <= '9'; s++) {
                int d = *s - '0';
                if (v > (max - d) / 10)
                        return -EINVAL;
                v = v * 10 + d;
        }
        *p = s;
        *ret = v;
        return 0;
}

int gw_scratch_name_parse(const char *name, int64_t *ret_job, int *ret_attempt) {
        if (!name)
                return -EINVAL;
        const char *p = name;
        int64_t job, attempt;
        if (parse_positive(&p, INT64_MAX, &job) < 0 || *p++ != '-' || parse_positive(&p, INT_MAX, &attempt) < 0)
                return -EINVAL;
        if (*p == '-') {
                p++;
                size_t l = strlen(p);
                if (l != 2 * GW_SCRATCH_NAME_RANDOM || strspn(p, "0123456789abcdef") != l)
                        return -EINVAL;
        } else if (*p)
                return -EINVAL;
        if (ret_job)
                *ret_job = job;
        if (ret_attempt)
                *ret_attempt = (int) attempt;
        return 0;
}

static bool has_dotdot(const char *rel) {
        for (const char *p = rel; *p;) {
                size_t l = strcspn(p, "/");
                if (l == 2 && p[0] == '.' && p[1] == '.')
                        return true;
                p += l + (p[l] == '/');
        }
        return false;
}

int gw_scratch_restore_sub(const char *cwd, const char *ckpt, char *buf, size_t n) {
        if (!cwd || !ckpt || !*cwd)
                return -EINVAL;
        size_t l = strlen(cwd);
        while (l > 1 && cwd[l - 1] == '/')
                l--;
        if (strncmp(ckpt, cwd, l) || ckpt[l] != '/')
                return -EINVAL;
        const char *rel = ckpt + l + 1;
        const char *w = strstr(rel, "/weights/"), *slash = strrchr(rel, '/');
        /* RUN of RUN/weights/X.pt: the run's results.csv and the rest come along. */
        size_t len = w ? (size_t) (w - rel) : slash ? (size_t) (slash - rel) : 0;
        if (len == 0)
                return -EINVAL;
        if (len >= n)
                return -ENAMETOOLONG;
        memcpy(buf, rel, len);
        buf[len] = '\0';
        return has_dotdot(buf) ? -EINVAL : 0;
}

static const int relays[GW_SCRATCH_RELAYS] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

int gw_scratch_relay_signal(int k) { return k >= 0 && k < GW_SCRATCH_RELAYS ? relays[k] : -EINVAL; }

int gw_scratch_relay_of(int sig) {
        for (int k = 0; k < GW_SCRATCH_RELAYS; k++)
                if (relays[k] == sig && SIGRTMIN + k <= SIGRTMAX)
                        return SIGRTMIN + k;
        return -EINVAL;
}

int gw_scratch_relayed(int relay) {
        if (relay < SIGRTMIN || relay > SIGRTMAX)
                return -EINVAL;
        return gw_scratch_relay_signal(relay - SIGRTMIN);
}
