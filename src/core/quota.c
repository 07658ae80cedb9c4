#include "core/quota.h"

#include <stdio.h>
#include <string.h>

#include "base/text.h"

#include "base/parse.h"

#define USEC_PER_HOUR ((gw_usec_t) 3600 * GW_USEC_PER_SEC)
#define MAX_COUNT 1000000000LL
#define MAX_HOURS (INT64_MAX / USEC_PER_HOUR - 1)

enum value_kind { COUNT, DURATION, HOURS, GPU_HOURS, PRIORITY };

static const struct {
        const char *name;
        enum value_kind kind;
} keys[_GW_QUOTA_KEY_MAX] = {
        [GW_QUOTA_MAX_GPUS] = { "max_gpus", COUNT },
        [GW_QUOTA_MAX_PENDING_JOBS] = { "max_pending_jobs", COUNT },
        [GW_QUOTA_MAX_TIME_LIMIT] = { "max_time_limit", DURATION },
        [GW_QUOTA_MAX_GPU_HOURS_7D] = { "max_gpu_hours_7d", GPU_HOURS },
        [GW_QUOTA_MAX_BOOKING_HOURS] = { "max_booking_hours", HOURS },
        [GW_QUOTA_MAX_BOOKING_GPUS] = { "max_booking_gpus", COUNT },
        [GW_QUOTA_BOOKING_HORIZON_HOURS] = { "booking_horizon_hours", HOURS },
        [GW_QUOTA_MAX_PRIORITY] = { "max_priority", PRIORITY },
};

const char *gw_quota_key_name(enum gw_quota_key k) { return k >= 0 && k < _GW_QUOTA_KEY_MAX ? keys[k].name : NULL; }

enum gw_quota_key gw_quota_key_from_name(const char *name) {
        if (!name)
                return _GW_QUOTA_KEY_INVALID;
        for (int k = 0; k < _GW_QUOTA_KEY_MAX; k++)
                if (strcmp(name, keys[k].name) == 0)
                        return (enum gw_quota_key) k;
        return _GW_QUOTA_KEY_INVALID;
}

void gw_quota_init(struct gw_quota *q) {
        for (int k = 0; k < _GW_QUOTA_KEY_MAX; k++)
                q->v[k] = GW_QUOTA_UNSET;
}

static bool all_digits(const char *s) {
        if (!*s)
                return false;
        for (; *s; s++)
                if (*s < '0' || *s > '9')
                        return false;
        return true;
}

static int parse_hours(const char *value, long long max, gw_usec_t *ret) {
        long long h;

        if (all_digits(value)) {
                if (gw_parse_int(value, 0, max, &h) < 0)
                        return -EINVAL;
                *ret = (gw_usec_t) h * USEC_PER_HOUR;
                return 0;
        }
        return gw_parse_duration(value, ret) < 0 ? -EINVAL : 0;
}

int gw_quota_parse_value(enum gw_quota_key k, const char *value, int64_t *ret, char *msg, size_t msg_size) {
        long long n;
        gw_usec_t d;

        if (k < 0 || k >= _GW_QUOTA_KEY_MAX || !value || !ret) {
                gw_say(msg, msg_size, "invalid quota setting");
                return -EINVAL;
        }
        if (strcmp(value, "unlimited") == 0 || strcmp(value, "none") == 0) {
                *ret = GW_QUOTA_UNLIMITED;
                return 0;
        }
        if (strcmp(value, "unset") == 0 || strcmp(value, "inherit") == 0) {
                *ret = GW_QUOTA_UNSET;
                return 0;
        }
        switch (keys[k].kind) {
        case COUNT:
                if (gw_parse_int(value, 0, MAX_COUNT, &n) < 0)
                        break;
                *ret = n;
                return 0;
        case DURATION:
                if (gw_parse_duration(value, &d) < 0)
                        break;
                *ret = d;
                return 0;
        case HOURS:
                if (parse_hours(value, MAX_HOURS, &d) < 0)
                        break;
                *ret = d;
                return 0;
        case GPU_HOURS:
                if (gw_parse_int(value, 0, MAX_HOURS, &n) < 0)
                        break;
                *ret = (int64_t) n * USEC_PER_HOUR;
                return 0;
        case PRIORITY:
                if (gw_parse_int(value, 0, GW_PRIORITY_MAX, &n) < 0)
                        break;
                *ret = n;
                return 0;
        }
        static const char *const expect[] = {
                [COUNT] = "a whole number >= 0",
                [DURATION] = "a duration such as 90m, 12h, 2d or 1-12:00:00",
                [HOURS] = "a number of hours or a duration such as 90m or 2d",
                [GPU_HOURS] = "a whole number of GPU-hours",
                [PRIORITY] = "a priority from 0 to 1000",
        };
        gw_say(msg, msg_size, "%s: '%.32s' is not %s (or unlimited, unset)", keys[k].name, value, expect[keys[k].kind]);
        return -EINVAL;
}

int gw_quota_parse_setting(struct gw_quota *q, const char *setting, char *msg, size_t msg_size) {
        char key[48];
        const char *eq;
        size_t klen;
        int64_t v;
        int k;

        if (!q || !setting) {
                gw_say(msg, msg_size, "invalid quota setting");
                return -EINVAL;
        }
        eq = strchr(setting, '=');
        if (!eq) {
                gw_say(msg, msg_size, "'%.48s': expected KEY=VALUE, e.g. max_gpus=4", setting);
                return -EINVAL;
        }
        klen = (size_t) (eq - setting);
        if (klen == 0 || klen >= sizeof(key)) {
                gw_say(msg, msg_size, "'%.48s': expected KEY=VALUE, e.g. max_gpus=4", setting);
                return -EINVAL;
        }
        memcpy(key, setting, klen);
        key[klen] = '\0';
        k = gw_quota_key_from_name(key);
        if (k < 0) {
                gw_say(msg, msg_size,
                       "unknown quota key '%s' (known: max_gpus, max_pending_jobs, max_time_limit, "
                       "max_gpu_hours_7d, max_booking_hours, max_booking_gpus, booking_horizon_hours, "
                       "max_priority)",
                       key);
                return -EINVAL;
        }
        if (eq[1] == '\0') {
                gw_say(msg, msg_size, "%s: missing value (use unset to clear it)", key);
                return -EINVAL;
        }
        if (gw_quota_parse_value((enum gw_quota_key) k, eq + 1, &v, msg, msg_size) < 0)
                return -EINVAL;
        q->v[k] = v;
        return 0;
}

/* GPU-time as hours with one decimal: "12.5 GPU-h". */
static char *format_gpu_hours(gw_usec_t v, char *buf, size_t n) {
        long long tenths = (long long) (v / (USEC_PER_HOUR / 10));
        (void) snprintf(buf, n, "%lld.%lld GPU-h", tenths / 10, tenths % 10);
        return buf;
}

char *gw_quota_format_value(enum gw_quota_key k, int64_t v, char *buf, size_t n) {
        if (!buf || n == 0)
                return buf;
        if (k < 0 || k >= _GW_QUOTA_KEY_MAX) {
                (void) snprintf(buf, n, "?");
                return buf;
        }
        if (v == GW_QUOTA_UNLIMITED) {
                (void) snprintf(buf, n, "unlimited");
                return buf;
        }
        if (v < 0) {
                (void) snprintf(buf, n, "unset");
                return buf;
        }
        switch (keys[k].kind) {
        case COUNT:
        case PRIORITY:
                (void) snprintf(buf, n, "%lld", (long long) v);
                break;
        case DURATION:
        case HOURS:
                if (v == 0)
                        (void) snprintf(buf, n, "0h");
                else
                        (void) gw_format_duration(v, buf, n);
                break;
        case GPU_HOURS:
                if (v % USEC_PER_HOUR == 0)
                        (void) snprintf(buf, n, "%lld GPU-h", (long long) (v / USEC_PER_HOUR));
                else
                        (void) format_gpu_hours(v, buf, n);
                break;
        }
        return buf;
}

void gw_quota_resolve(const struct gw_quota *user, const struct gw_quota *const *groups, size_t n_groups,
                      const struct gw_quota *deflt, struct gw_quota *ret,
                      enum gw_quota_source ret_src[_GW_QUOTA_KEY_MAX]) {
        for (int k = 0; k < _GW_QUOTA_KEY_MAX; k++) {
                int64_t v = GW_QUOTA_UNSET;
                enum gw_quota_source src = GW_QUOTA_FROM_NONE;

                if (user && user->v[k] != GW_QUOTA_UNSET) {
                        v = user->v[k];
                        src = GW_QUOTA_FROM_USER;
                }
                for (size_t g = 0; src == GW_QUOTA_FROM_NONE && g < n_groups; g++)
                        if (groups && groups[g] && groups[g]->v[k] > v)
                                v = groups[g]->v[k];
                if (src == GW_QUOTA_FROM_NONE && v != GW_QUOTA_UNSET)
                        src = GW_QUOTA_FROM_GROUP;
                if (src == GW_QUOTA_FROM_NONE && deflt && deflt->v[k] != GW_QUOTA_UNSET) {
                        v = deflt->v[k];
                        src = GW_QUOTA_FROM_DEFAULT;
                }
                if (src == GW_QUOTA_FROM_NONE && k == GW_QUOTA_BOOKING_HORIZON_HOURS) {
                        v = GW_QUOTA_BOOKING_HORIZON_BUILTIN;
                        src = GW_QUOTA_FROM_BUILTIN;
                }
                ret->v[k] = src == GW_QUOTA_FROM_NONE ? GW_QUOTA_UNLIMITED : v;
                if (ret_src)
                        ret_src[k] = src;
        }
}

void gw_quota_role_fill(struct gw_quota *lim, enum gw_quota_source src[_GW_QUOTA_KEY_MAX],
                        const struct gw_quota *role) {
        for (int k = 0; role && k < _GW_QUOTA_KEY_MAX; k++)
                if (src[k] == GW_QUOTA_FROM_NONE && role->v[k] != GW_QUOTA_UNSET) {
                        lim->v[k] = role->v[k];
                        src[k] = GW_QUOTA_FROM_ROLE;
                }
}

static gw_usec_t sat_mul(gw_usec_t a, int64_t b) {
        gw_usec_t r;
        return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

gw_usec_t gw_quota_gpu_time(const struct gw_quota_interval *iv, size_t n, gw_usec_t now, gw_usec_t window) {
        gw_usec_t from = now - window, total = 0;

        for (size_t i = 0; i < n; i++) {
                gw_usec_t s = iv[i].start > from ? iv[i].start : from;
                gw_usec_t e = iv[i].end == 0 || iv[i].end > now ? now : iv[i].end;
                if (e <= s || iv[i].ngpus <= 0)
                        continue;
                if (__builtin_add_overflow(total, sat_mul(e - s, iv[i].ngpus), &total))
                        return INT64_MAX;
        }
        return total;
}

static int check_wait(const struct gw_quota *l, const struct gw_quota_usage *u, int64_t ngpus, char *msg, size_t n) {
        char a[32], b[32];
        int64_t max_gpus = l->v[GW_QUOTA_MAX_GPUS];
        int64_t max_gh = l->v[GW_QUOTA_MAX_GPU_HOURS_7D];

        if (max_gpus != GW_QUOTA_UNLIMITED && u->gpus_running + ngpus > max_gpus) {
                gw_say(msg, n, "Quota: max_gpus is %lld; %lld GPU%s in use and the job asks %lld", (long long) max_gpus,
                       (long long) u->gpus_running, u->gpus_running == 1 ? "" : "s", (long long) ngpus);
                return GW_QUOTA_WAIT;
        }
        if (max_gh != GW_QUOTA_UNLIMITED && u->gpu_time_7d >= max_gh) {
                gw_say(msg, n, "Quota: max_gpu_hours_7d is %s; %s used in the last 7 days",
                       gw_quota_format_value(GW_QUOTA_MAX_GPU_HOURS_7D, max_gh, a, sizeof(a)),
                       format_gpu_hours(u->gpu_time_7d, b, sizeof(b)));
                return GW_QUOTA_WAIT;
        }
        gw_say(msg, n, "%s", "");
        return GW_QUOTA_OK;
}

int gw_quota_check_start(const struct gw_quota *limits, const struct gw_quota_usage *u, int64_t ngpus, char *msg,
                         size_t msg_size) {
        if (!limits || !u || ngpus < 1)
                return -EINVAL;
        return check_wait(limits, u, ngpus, msg, msg_size);
}

int gw_quota_wait_reason(const struct gw_quota *limits, const struct gw_quota_usage *u, int64_t ngpus,
                         const int64_t *holders, size_t n_holders, char *buf, size_t n) {
        int64_t max_gpus;
        int r;

        if (!limits || !u || ngpus < 1 || !buf || n == 0 || (!holders && n_holders))
                return -EINVAL;
        r = check_wait(limits, u, ngpus, buf, n);
        max_gpus = limits->v[GW_QUOTA_MAX_GPUS];
        if (r != GW_QUOTA_WAIT || max_gpus == GW_QUOTA_UNLIMITED || u->gpus_running + ngpus <= max_gpus)
                return r;
        /* max_gpus: the names people type (admin quota set alice max_gpus=1) and who holds it. */
        char ids[96] = "";
        size_t used = 0;
        for (size_t i = 0; i < n_holders && i < GW_QUOTA_HOLDERS_SHOWN && used < sizeof(ids); i++) {
                int k = snprintf(ids + used, sizeof(ids) - used, "%s%lld", i ? ", " : "", (long long) holders[i]);
                if (k > 0)
                        used += (size_t) k;
        }
        if (n_holders > GW_QUOTA_HOLDERS_SHOWN && used < sizeof(ids))
                (void) snprintf(ids + used, sizeof(ids) - used, ", ...");
        gw_say(buf, n, "Quota: max_gpus=%lld, %lld in use%s%s", (long long) max_gpus, (long long) u->gpus_running,
               n_holders > 1 ? " by jobs "
               : n_holders   ? " by job "
                             : "",
               ids);
        if (ngpus > 1) {
                size_t l = strlen(buf);
                (void) snprintf(buf + l, n - l, "; the job asks %lld", (long long) ngpus);
        }
        return r;
}

/* Whether the submission's jobs (an array's tasks, all of them: it is refused whole, not cut
 * short) would pass max_pending_jobs, with why in msg. */
static bool pending_over(int64_t max, const struct gw_quota_usage *u, char *msg, size_t n) {
        int64_t adds = u->adds_jobs > 0 ? u->adds_jobs : 1, total;
        if (max == GW_QUOTA_UNLIMITED || (!__builtin_add_overflow(u->pending_jobs, adds, &total) && total <= max))
                return false;
        if (adds == 1)
                gw_say(msg, n, "max_pending_jobs is %lld; %lld job%s already pending", (long long) max,
                       (long long) u->pending_jobs, u->pending_jobs == 1 ? "" : "s");
        else
                gw_say(msg, n,
                       "max_pending_jobs is %lld; %lld job%s already pending and the submission adds %lld "
                       "(an array's tasks count one each)",
                       (long long) max, (long long) u->pending_jobs, u->pending_jobs == 1 ? "" : "s", (long long) adds);
        return true;
}

int gw_quota_check_submit(const struct gw_quota *limits, const struct gw_quota_usage *u, int64_t ngpus,
                          gw_usec_t time_limit, char *msg, size_t msg_size) {
        char a[32], b[32];
        const int64_t *v;

        if (!limits || !u || ngpus < 1 || time_limit <= 0)
                return -EINVAL;
        v = limits->v;
        if (v[GW_QUOTA_MAX_TIME_LIMIT] != GW_QUOTA_UNLIMITED && time_limit > v[GW_QUOTA_MAX_TIME_LIMIT]) {
                gw_say(msg, msg_size, "max_time_limit is %s; the job asks %s",
                       gw_quota_format_value(GW_QUOTA_MAX_TIME_LIMIT, v[GW_QUOTA_MAX_TIME_LIMIT], a, sizeof(a)),
                       gw_format_duration(time_limit, b, sizeof(b)));
                return GW_QUOTA_REFUSE;
        }
        if (pending_over(v[GW_QUOTA_MAX_PENDING_JOBS], u, msg, msg_size))
                return GW_QUOTA_REFUSE;
        if (v[GW_QUOTA_MAX_GPUS] != GW_QUOTA_UNLIMITED && ngpus > v[GW_QUOTA_MAX_GPUS]) {
                gw_say(msg, msg_size, "max_gpus is %lld; the job asks %lld GPU%s and could never start",
                       (long long) v[GW_QUOTA_MAX_GPUS], (long long) ngpus, ngpus == 1 ? "" : "s");
                return GW_QUOTA_REFUSE;
        }
        return check_wait(limits, u, ngpus, msg, msg_size);
}

int64_t gw_quota_max_priority(const struct gw_prio_grant *g, enum gw_prio_source *ret_from) {
        enum gw_prio_source from = GW_PRIO_FROM_QUOTA;
        int64_t max = g->quota < 0 ? 0 : g->quota > GW_PRIORITY_MAX ? GW_PRIORITY_MAX : g->quota;
        if (g->admin) {
                max = GW_PRIORITY_MAX;
                from = GW_PRIO_FROM_ADMIN;
        } else if (g->profile > max) {
                max = g->profile > GW_PRIORITY_MAX ? GW_PRIORITY_MAX : g->profile;
                from = GW_PRIO_FROM_PROFILE;
        }
        if (ret_from)
                *ret_from = from;
        return max;
}

int gw_quota_check_priority(const struct gw_prio_grant *g, int64_t priority, char *msg, size_t msg_size) {
        static const char *const whose[] = {
                [GW_QUOTA_FROM_NONE] = "no limit set",        [GW_QUOTA_FROM_USER] = "your quota",
                [GW_QUOTA_FROM_GROUP] = "your group's quota", [GW_QUOTA_FROM_DEFAULT] = "the default quota",
                [GW_QUOTA_FROM_ROLE] = "users' default",
        };
        enum gw_prio_source from;
        char src[64];

        if (!g || (unsigned) g->quota_from >= sizeof(whose) / sizeof(whose[0]))
                return -EINVAL;
        int64_t max = gw_quota_max_priority(g, &from);
        if (priority <= 0 || priority <= max) {
                gw_say(msg, msg_size, "%s", "");
                return GW_QUOTA_OK;
        }
        if (from == GW_PRIO_FROM_PROFILE)
                (void) snprintf(src, sizeof(src), "profile '%.32s'", g->profile_name ? g->profile_name : "?");
        else
                (void) snprintf(src, sizeof(src), "%s", whose[g->quota_from]);
        gw_say(msg, msg_size,
               "priority %lld is above your maximum %lld (%s; an admin grants more: gpuward admin quota set %.32s "
               "max_priority=N)",
               (long long) priority, (long long) max, src, g->user && *g->user ? g->user : "USER");
        return GW_QUOTA_REFUSE;
}

int gw_quota_check_booking(const struct gw_quota *limits, int64_t booked_gpus, int64_t ngpus, gw_usec_t start,
                           gw_usec_t end, gw_usec_t now, char *msg, size_t msg_size) {
        char a[32], b[32];
        const int64_t *v;

        if (!limits || ngpus < 1 || end <= start || booked_gpus < 0)
                return -EINVAL;
        v = limits->v;
        if (v[GW_QUOTA_BOOKING_HORIZON_HOURS] != GW_QUOTA_UNLIMITED &&
            start - now > v[GW_QUOTA_BOOKING_HORIZON_HOURS]) {
                gw_say(msg, msg_size, "booking_horizon_hours is %s; the booking starts in %s",
                       gw_quota_format_value(GW_QUOTA_BOOKING_HORIZON_HOURS, v[GW_QUOTA_BOOKING_HORIZON_HOURS], a,
                                             sizeof(a)),
                       /* "now+100h" reaches here a few ms short of it: not "4d3h" */
                       gw_format_duration(start - now + GW_USEC_PER_SEC, b, sizeof(b)));
                return GW_QUOTA_BOOKING_REFUSE;
        }
        if (v[GW_QUOTA_MAX_BOOKING_HOURS] != GW_QUOTA_UNLIMITED && end - start > v[GW_QUOTA_MAX_BOOKING_HOURS]) {
                gw_say(msg, msg_size, "needs an admin's approval: max_booking_hours is %s; the booking lasts %s",
                       gw_quota_format_value(GW_QUOTA_MAX_BOOKING_HOURS, v[GW_QUOTA_MAX_BOOKING_HOURS], a, sizeof(a)),
                       gw_format_duration(end - start, b, sizeof(b)));
                return GW_QUOTA_BOOKING_NEEDS_APPROVAL;
        }
        if (v[GW_QUOTA_MAX_BOOKING_GPUS] != GW_QUOTA_UNLIMITED && booked_gpus + ngpus > v[GW_QUOTA_MAX_BOOKING_GPUS]) {
                if (booked_gpus)
                        gw_say(msg, msg_size,
                               "needs an admin's approval: max_booking_gpus is %lld; %lld GPU%s already "
                               "booked at the same time and the booking asks %lld",
                               (long long) v[GW_QUOTA_MAX_BOOKING_GPUS], (long long) booked_gpus,
                               booked_gpus == 1 ? "" : "s", (long long) ngpus);
                else
                        gw_say(msg, msg_size,
                               "needs an admin's approval: max_booking_gpus is %lld; the booking asks %lld",
                               (long long) v[GW_QUOTA_MAX_BOOKING_GPUS], (long long) ngpus);
                return GW_QUOTA_BOOKING_NEEDS_APPROVAL;
        }
        gw_say(msg, msg_size, "%s", "");
        return GW_QUOTA_BOOKING_APPROVE;
}
