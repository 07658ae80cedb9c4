#include "core/fairshare.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define HOUR_USEC (3600.0 * (double) GW_USEC_PER_SEC)

/* 2^(-dt / half_life); 1 without decay or for dt <= 0. */
static double decay(gw_usec_t dt, gw_usec_t half_life) {
        if (half_life <= 0 || dt <= 0)
                return 1.0;
        return exp2(-(double) dt / (double) half_life);
}

double gw_fs_usage_at(const struct gw_fs_user *u, gw_usec_t now, gw_usec_t half_life) {
        return u->used_gpu_h * decay(now - u->used_at, half_life);
}

/* GPU-hours of gpus GPUs over a span of len, each instant decayed by its distance from the
 * span's end: gpus * integral_0^len 2^(-s / h) ds = gpus * h / ln 2 * (1 - 2^(-len / h)).
 * expm1 keeps it exact for spans much shorter than the half-life, the usual case. */
static double span_gpu_h(double gpus, gw_usec_t len, gw_usec_t half_life) {
        if (half_life <= 0)
                return gpus * (double) len / HOUR_USEC;
        double h = (double) half_life;
        return gpus * h / M_LN2 * -expm1(-(double) len * M_LN2 / h) / HOUR_USEC;
}

int gw_fs_charge(struct gw_fs_user *u, double gpus, gw_usec_t from, gw_usec_t to, gw_usec_t half_life) {
        if (!u || !(gpus >= 0) || !isfinite(gpus) || to < from || half_life < 0)
                return -EINVAL;
        /* A late report of an interval before the last one charged is decayed to used_at,
         * so the record never moves back in time. */
        gw_usec_t ref = to > u->used_at ? to : u->used_at;
        double add = span_gpu_h(gpus, to - from, half_life) * decay(ref - to, half_life);
        u->used_gpu_h = gw_fs_usage_at(u, ref, half_life) + add;
        u->used_at = ref;
        return 0;
}

static bool user_ok(const struct gw_fs_user *u) {
        return isfinite(u->share) && u->share >= 0 && isfinite(u->used_gpu_h) && u->used_gpu_h >= 0;
}

static double weight(const struct gw_fs_user *u) { return u->share > 0 ? u->share : 1.0; }

/* The sums of usage at now and of the weights; -EINVAL for a bad user. */
static int totals(const struct gw_fs_user *users, size_t n, gw_usec_t now, gw_usec_t half_life, double *ret_used,
                  double *ret_shares) {
        double used = 0, shares = 0;

        if ((n && !users) || half_life < 0)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                if (!user_ok(&users[i]))
                        return -EINVAL;
                used += gw_fs_usage_at(&users[i], now, half_life);
                shares += weight(&users[i]);
        }
        *ret_used = used;
        *ret_shares = shares;
        return 0;
}

static double factor(double used, double total_used, double share_frac) {
        if (total_used <= 0)
                return 1.0;
        return exp2(-(used / total_used) / share_frac);
}

int gw_fs_factors(const struct gw_fs_user *users, size_t n, gw_usec_t now, gw_usec_t half_life, double *ret_factor) {
        double used, shares;
        int r;

        if (n && !ret_factor)
                return -EINVAL;
        r = totals(users, n, now, half_life, &used, &shares);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                ret_factor[i] = factor(gw_fs_usage_at(&users[i], now, half_life), used, weight(&users[i]) / shares);
        return 0;
}

/* "1/3" when the share is one of k equal parts (the default), else a percentage. */
static void share_text(double frac, char *buf, size_t size) {
        double k = 1.0 / frac;
        if (fabs(k - round(k)) < 1e-9 && k < 1e6)
                snprintf(buf, size, "1/%.0f", round(k));
        else
                snprintf(buf, size, "%.1f%%", frac * 100.0);
}

int gw_fs_explain(const struct gw_fs_user *users, size_t n, size_t i, const char *name, gw_usec_t now,
                  gw_usec_t half_life, char *buf, size_t size) {
        double used_all, shares;
        char share[32];
        int r;

        if (!buf || size == 0 || !name || i >= n)
                return -EINVAL;
        r = totals(users, n, now, half_life, &used_all, &shares);
        if (r < 0)
                return r;
        double used = gw_fs_usage_at(&users[i], now, half_life), frac = weight(&users[i]) / shares;
        share_text(frac, share, sizeof(share));
        int len = snprintf(
                buf, size, "fairshare %.2f: %s used %.1f GPU-h (decayed), %.0f%% of all use, against a %s share",
                factor(used, used_all, frac), name, used, used_all > 0 ? used / used_all * 100.0 : 0.0, share);
        if (len < 0)
                return -EINVAL;
        return (size_t) len >= size ? -ENOBUFS : len;
}

void gw_fs_reorder(void **items, size_t n, const bool *dirty, int (*cmp)(const void *, const void *), void **tmp) {
        size_t n_clean = 0, k = 0;
        for (size_t i = 0; i < n; i++) { /* the clean ones close up at the front, in order */
                if (dirty[i])
                        tmp[k++] = items[i];
                else
                        items[n_clean++] = items[i];
        }
        if (!k)
                return;
        qsort(tmp, k, sizeof *tmp, cmp);
        /* Merged from the back, into the room the dirty ones left at the end of items. */
        size_t i = n_clean, j = k, w = n;
        while (j > 0) {
                if (i > 0 && cmp(&items[i - 1], &tmp[j - 1]) > 0)
                        items[--w] = items[--i];
                else
                        items[--w] = tmp[--j];
        }
}

void gw_fs_priority_why(int priority, const char *user_line, char *buf, size_t size) {
        if (user_line)
                snprintf(buf, size, "priority %d, then %s, then submission order", priority, user_line);
        else
                snprintf(buf, size, "priority %d, then submission order (fair share is off)", priority);
}
