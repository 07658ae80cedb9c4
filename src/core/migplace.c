#include "core/migplace.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/parse.h"

#define MAX_GPUS 64 /* a GPU index is a bit of a job's mask */

bool gw_mig_profile_valid(const char *s) {
        size_t len = s ? strlen(s) : 0;
        if (len == 0 || len >= GW_MIG_PROFILE_MAX || s[0] < '0' || s[0] > '9' || !strstr(s, "g."))
                return false;
        return strspn(s, "0123456789abcdefghijklmnopqrstuvwxyz.+") == len;
}

int gw_mig_ask_parse(const char *s, struct gw_mig_ask *ret, char *why, size_t n) {
        struct gw_mig_ask a = { .count = 1 };
        const char *colon = s ? strchr(s, ':') : NULL;
        size_t plen = s ? (colon ? (size_t) (colon - s) : strlen(s)) : 0;
        if (plen == 0 || plen >= sizeof a.profile) {
                snprintf(why, n, "is not PROFILE[:COUNT] (a MIG profile such as 1g.10gb)");
                return -EINVAL;
        }
        memcpy(a.profile, s, plen);
        if (!gw_mig_profile_valid(a.profile)) {
                snprintf(why, n, "has no MIG profile such as 1g.10gb, 2g.20gb or 3g.40gb before the ':'");
                return -EINVAL;
        }
        if (colon) {
                long long c;
                if (gw_parse_int(colon + 1, 1, GW_MIG_COUNT_MAX, &c) < 0) {
                        snprintf(why, n, "has a COUNT that is not a number of slices from 1 to %d", GW_MIG_COUNT_MAX);
                        return -EINVAL;
                }
                a.count = (int) c;
        }
        *ret = a;
        return 0;
}

static bool matches(const struct gw_mig_slot *s, const char *profile) {
        return s->usable && s->profile && !strcmp(s->profile, profile);
}

/* Per GPU index: its slices of the profile (free or not) and the free ones. */
struct tally {
        int held[MAX_GPUS], free[MAX_GPUS];
        int most_held, total_free;
};

static int tally_of(const struct gw_mig_slot *slots, size_t n, const char *profile, struct tally *t) {
        memset(t, 0, sizeof(*t));
        for (size_t i = 0; i < n; i++) {
                if (slots[i].gpu < 0 || slots[i].gpu >= MAX_GPUS)
                        return -EINVAL;
                if (!matches(&slots[i], profile))
                        continue;
                int g = slots[i].gpu;
                t->held[g]++;
                t->free[g] += slots[i].job_id == 0;
                t->total_free += slots[i].job_id == 0;
                if (t->held[g] > t->most_held)
                        t->most_held = t->held[g];
        }
        return 0;
}

/* Writes up to want free slices of the profile on GPU g to pick, in the slots' order;
 * returns how many. */
static int take_from(const struct gw_mig_slot *slots, size_t n, const char *profile, int g, int want, size_t *pick) {
        int k = 0;
        for (size_t i = 0; i < n && k < want; i++)
                if (slots[i].gpu == g && slots[i].job_id == 0 && matches(&slots[i], profile))
                        pick[k++] = i;
        return k;
}

/* The GPU with the fewest free slices that are still enough (best fit), lowest index on a
 * tie; -1 if none has count free. */
static int best_fit(const struct tally *t, int count) {
        int best = -1;
        for (int g = 0; g < MAX_GPUS; g++)
                if (t->free[g] >= count && (best < 0 || t->free[g] < t->free[best]))
                        best = g;
        return best;
}

/* Over several GPUs, the most free first (lowest index on a tie): as few GPUs as it can. */
static void spread(const struct gw_mig_slot *slots, size_t n, const char *profile, struct tally *t, int count,
                   size_t *pick) {
        int got = 0;
        while (got < count) {
                int g = 0;
                for (int i = 1; i < MAX_GPUS; i++)
                        if (t->free[i] > t->free[g])
                                g = i;
                got += take_from(slots, n, profile, g, count - got, pick + got);
                t->free[g] = 0;
        }
}

int gw_mig_place(const struct gw_mig_slot *slots, size_t n, const struct gw_mig_ask *ask, size_t *ret_pick) {
        struct tally t;
        if ((n && !slots) || !ask || !ret_pick || ask->count < 1 || ask->count > GW_MIG_COUNT_MAX ||
            !gw_mig_profile_valid(ask->profile))
                return -EINVAL;
        if (tally_of(slots, n, ask->profile, &t) < 0)
                return -EINVAL;
        if (t.most_held == 0)
                return -ENOENT;
        size_t pick[GW_MIG_COUNT_MAX];
        if (ask->count <= t.most_held) {
                int g = best_fit(&t, ask->count);
                if (g < 0)
                        return -EAGAIN;
                (void) take_from(slots, n, ask->profile, g, ask->count, pick);
        } else {
                if (t.total_free < ask->count)
                        return -EBUSY;
                spread(slots, n, ask->profile, &t, ask->count, pick);
        }
        memcpy(ret_pick, pick, (size_t) ask->count * sizeof(*pick));
        return 0;
}

double gw_mig_share(const struct gw_mig_slot *slots, const size_t *pick, size_t n_pick) {
        double share = 0;
        for (size_t i = 0; i < n_pick; i++) {
                const struct gw_mig_slot *s = &slots[pick[i]];
                share += s->slices && s->max_slices && s->slices <= s->max_slices ? (double) s->slices / s->max_slices
                                                                                  : 1.0;
        }
        return share;
}

const char *gw_mig_wait_words(int r, const struct gw_mig_ask *ask, char *buf, size_t size) {
        const char *p = ask->profile;
        if (r == -ENOENT)
                snprintf(buf, size, "no free %s slice: no GPU in service has that profile", p);
        else if (r == -EBUSY)
                snprintf(buf, size, "fewer than %d %s slices free", ask->count, p);
        else if (ask->count > 1)
                snprintf(buf, size, "no GPU with %d free %s slices", ask->count, p);
        else
                snprintf(buf, size, "no free %s slice", p);
        return buf;
}
