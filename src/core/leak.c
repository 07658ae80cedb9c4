#include "core/leak.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/parse.h"

#define MIB (1024.0 * 1024.0)

void gw_leak_params_default(struct gw_leak_params *p) {
        *p = (struct gw_leak_params){
                .mib_per_epoch = GW_LEAK_DEFAULT_MIB_PER_EPOCH,
                .epochs = GW_LEAK_DEFAULT_EPOCHS,
                .window = GW_LEAK_DEFAULT_WINDOW,
        };
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return (x > y) - (x < y);
}

double gw_leak_theil_sen(const double *x, const double *y, size_t n) {
        double s[GW_LEAK_MAX_EPOCHS * (GW_LEAK_MAX_EPOCHS - 1) / 2];
        size_t k = 0;
        if (n > GW_LEAK_MAX_EPOCHS)
                n = GW_LEAK_MAX_EPOCHS;
        for (size_t i = 0; i < n; i++)
                for (size_t j = i + 1; j < n; j++)
                        if (x[j] != x[i])
                                s[k++] = (y[j] - y[i]) / (x[j] - x[i]);
        if (!k)
                return 0;
        qsort(s, k, sizeof *s, cmp_double);
        return k % 2 ? s[k / 2] : (s[k / 2 - 1] + s[k / 2]) / 2;
}

int gw_leak_epoch_stats(const struct gw_point *pts, size_t n, gw_usec_t from, gw_usec_t to, double *ret_low,
                        double *ret_peak) {
        bool any = false;
        double lo = 0, hi = 0;
        for (size_t i = 0; pts && i < n; i++) {
                if (pts[i].t < from || pts[i].t >= to)
                        continue;
                double m = (double) pts[i].mem;
                lo = any && lo < m ? lo : m;
                hi = any && hi > m ? hi : m;
                any = true;
        }
        if (!any)
                return -ENODATA;
        *ret_low = lo;
        *ret_peak = hi;
        return 0;
}

/* One GPU's newest baselines as x (epoch) and y (MiB). */
struct view {
        double x[GW_LEAK_MAX_EPOCHS], y[GW_LEAK_MAX_EPOCHS];
        double peak; /* of the newest epoch, MiB */
        size_t n;
};

static void view_of(const struct gw_leak_gpu *g, struct view *v) {
        size_t from = g->n > GW_LEAK_MAX_EPOCHS ? g->n - GW_LEAK_MAX_EPOCHS : 0;
        v->n = 0;
        for (size_t i = from; i < g->n; i++) {
                v->x[v->n] = (double) g->epoch[i];
                v->y[v->n] = g->low[i] / MIB;
                v->n++;
        }
        v->peak = v->n ? (g->peak ? g->peak[g->n - 1] : g->low[g->n - 1]) / MIB : 0;
}

/* Theil-Sen over the last k baselines. */
static double slope_last(const struct view *v, size_t k) {
        if (k > v->n)
                k = v->n;
        return gw_leak_theil_sen(v->x + v->n - k, v->y + v->n - k, k);
}

/* Baselines in the newest run whose every step rose faster than step_min MiB per epoch. */
static unsigned run_length(const struct view *v, double step_min) {
        unsigned run = v->n ? 1 : 0;
        for (size_t i = v->n; i-- > 1; run++)
                if ((v->y[i] - v->y[i - 1]) / (v->x[i] - v->x[i - 1]) <= step_min)
                        break;
        return run;
}

static double to_oom(const struct gw_leak_gpu *g, const struct view *v, double slope) {
        if (!g->mem_total || slope <= 0)
                return NAN;
        double headroom = (double) g->mem_total / MIB - v->peak;
        return headroom > 0 ? headroom / slope : 0;
}

/* "1-3", "0,2,5-7" for the GPUs of the verdict with want(i). */
static void gpu_ranges(const struct gw_leak_verdict *out, size_t skip, bool (*want)(const struct gw_leak_gpu_verdict *),
                       char *buf, size_t len, unsigned *ret_count) {
        size_t used = 0;
        unsigned count = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < out->n_gpus; i++) {
                if (i == skip || !want(&out->per_gpu[i]))
                        continue;
                size_t j = i;
                while (j + 1 < out->n_gpus && j + 1 != skip && want(&out->per_gpu[j + 1]) &&
                       out->per_gpu[j + 1].gpu == out->per_gpu[j].gpu + 1)
                        j++;
                int r = j > i ? snprintf(buf + used, len - used, "%s%u-%u", count ? "," : "", out->per_gpu[i].gpu,
                                         out->per_gpu[j].gpu)
                              : snprintf(buf + used, len - used, "%s%u", count ? "," : "", out->per_gpu[i].gpu);
                if (r > 0 && (size_t) r < len - used)
                        used += (size_t) r;
                count += (unsigned) (j - i + 1);
                i = j;
        }
        *ret_count = count;
}

static bool is_flat(const struct gw_leak_gpu_verdict *g) { return g->flat && !g->flagged; }
static bool is_flagged(const struct gw_leak_gpu_verdict *g) { return g->flagged; }

/* "~13m", "~2h14m", "~40s" */
static void approx_time(double s, char *buf, size_t n) {
        gw_usec_t d = (gw_usec_t) (s >= 60 ? floor(s / 60) * 60 : floor(s)) * GW_USEC_PER_SEC;
        char t[32];
        snprintf(buf, n, "~%s", gw_format_duration(d, t, sizeof t));
}

/* "GPU 0", or what the caller named the memory by. */
static const char *name_of(const struct gw_leak_gpu *g, char *buf, size_t n) {
        if (g->name && *g->name)
                return g->name;
        snprintf(buf, n, "GPU %u", g->gpu);
        return buf;
}

static void leak_evidence(const struct gw_leak_verdict *out, const struct gw_leak_input *in, size_t w, char *buf,
                          size_t len) {
        const struct gw_leak_gpu_verdict *g = &out->per_gpu[w];
        char flat[96], also[96], oom[96] = "", when[40], name[16];
        unsigned n_flat, n_also;
        gpu_ranges(out, w, is_flat, flat, sizeof flat, &n_flat);
        gpu_ranges(out, w, is_flagged, also, sizeof also, &n_also);
        char sib[220] = "";
        if (n_also && n_flat)
                snprintf(sib, sizeof sib, " (GPU%s %s too; GPU%s %s flat)", n_also > 1 ? "s" : "", also,
                         n_flat > 1 ? "s" : "", flat);
        else if (n_also)
                snprintf(sib, sizeof sib, " (GPU%s %s too)", n_also > 1 ? "s" : "", also);
        else if (n_flat)
                snprintf(sib, sizeof sib, " (GPU%s %s flat)", n_flat > 1 ? "s" : "", flat);
        if (isfinite(out->epochs_to_oom)) {
                long e = (long) floor(out->epochs_to_oom);
                if (isfinite(out->seconds_to_oom)) {
                        approx_time(out->seconds_to_oom, when, sizeof when);
                        snprintf(oom, sizeof oom, "; OOM in ~%ld epoch%s / %s", e, e == 1 ? "" : "s", when);
                } else
                        snprintf(oom, sizeof oom, "; OOM in ~%ld epoch%s", e, e == 1 ? "" : "s");
        }
        snprintf(buf, len, "%s: baseline %+.0f MiB/epoch for %u epochs%s%s", name_of(&in->gpus[w], name, sizeof name),
                 g->run_slope_mib, g->rising, sib, oom);
}

static void quiet_evidence(const struct gw_leak_verdict *out, const struct gw_leak_input *in, char *buf, size_t len) {
        size_t best = SIZE_MAX;
        char name[16];
        for (size_t i = 0; i < out->n_gpus; i++)
                if (out->per_gpu[i].n >= 2 &&
                    (best == SIZE_MAX || out->per_gpu[i].slope_mib > out->per_gpu[best].slope_mib))
                        best = i;
        if (best == SIZE_MAX)
                snprintf(buf, len, "no leak: fewer than 2 epochs measured");
        else
                snprintf(buf, len, "no leak: %s baseline %+.0f MiB/epoch over %zu epochs",
                         name_of(&in->gpus[best], name, sizeof name), out->per_gpu[best].slope_mib,
                         out->per_gpu[best].n);
}

static bool params_ok(const struct gw_leak_params *p) {
        return p && isfinite(p->mib_per_epoch) && p->mib_per_epoch > 0 && p->epochs >= 2 && p->window >= p->epochs &&
               p->window <= GW_LEAK_MAX_EPOCHS;
}

int gw_leak_detect(const struct gw_leak_params *p, const struct gw_leak_input *in, struct gw_leak_verdict *out) {
        if (!params_ok(p) || !in || !out || in->n_gpus > GW_LEAK_MAX_GPUS || (in->n_gpus && !in->gpus))
                return -EINVAL;
        for (size_t i = 0; i < in->n_gpus; i++) {
                const struct gw_leak_gpu *g = &in->gpus[i];
                if (g->n && (!g->epoch || !g->low))
                        return -EINVAL;
                for (size_t k = 1; k < g->n; k++)
                        if (g->epoch[k] <= g->epoch[k - 1])
                                return -EINVAL;
        }
        struct view views[GW_LEAK_MAX_GPUS]; /* ~66 KiB */
        struct gw_leak_verdict v = { .n_gpus = in->n_gpus, .epochs_to_oom = NAN, .seconds_to_oom = NAN };
        double thr = p->mib_per_epoch;
        for (size_t i = 0; i < in->n_gpus; i++) {
                struct view *vw = &views[i];
                struct gw_leak_gpu_verdict *g = &v.per_gpu[i];
                view_of(&in->gpus[i], vw);
                *g = (struct gw_leak_gpu_verdict){ .gpu = in->gpus[i].gpu, .n = vw->n, .epochs_to_oom = NAN };
                g->slope_mib = slope_last(vw, p->window);
                g->flat = vw->n >= 2 && fabs(g->slope_mib) < thr / 8;
                g->rising = run_length(vw, thr / 2);
                g->run_slope_mib = slope_last(vw, g->rising < p->window ? g->rising : p->window);
                g->flagged = g->rising >= p->epochs && g->run_slope_mib > thr;
        }
        /* One GPU growing while its siblings stay flat over the same epochs: half the rate. */
        bool asym[GW_LEAK_MAX_GPUS] = { false };
        for (size_t i = 0; in->n_gpus >= 2 && i < in->n_gpus; i++) {
                struct gw_leak_gpu_verdict *g = &v.per_gpu[i];
                unsigned run = run_length(&views[i], thr / 4);
                double rs = slope_last(&views[i], run < p->window ? run : p->window);
                if (g->flagged || run < p->epochs || rs <= thr / 2)
                        continue;
                bool siblings_flat = true;
                for (size_t k = 0; k < in->n_gpus && siblings_flat; k++)
                        siblings_flat = k == i || (views[k].n >= 2 && fabs(slope_last(&views[k], run)) < thr / 8);
                if (siblings_flat) {
                        g->flagged = asym[i] = true;
                        g->rising = run;
                        g->run_slope_mib = rs;
                }
        }
        size_t worst = SIZE_MAX;
        for (size_t i = 0; i < in->n_gpus; i++) {
                struct gw_leak_gpu_verdict *g = &v.per_gpu[i];
                if (!g->flagged)
                        continue;
                g->epochs_to_oom = to_oom(&in->gpus[i], &views[i], g->run_slope_mib);
                if (worst == SIZE_MAX)
                        worst = i;
                else {
                        double a = g->epochs_to_oom, b = v.per_gpu[worst].epochs_to_oom;
                        if ((isfinite(a) && (!isfinite(b) || a < b)) ||
                            (!isfinite(a) && !isfinite(b) && g->run_slope_mib > v.per_gpu[worst].run_slope_mib))
                                worst = i;
                }
        }
        if (worst == SIZE_MAX) {
                quiet_evidence(&v, in, v.evidence, sizeof v.evidence);
                *out = v;
                return 0;
        }
        const struct gw_leak_gpu_verdict *w = &v.per_gpu[worst];
        v.leak = true;
        v.asymmetric = asym[worst];
        v.gpu = w->gpu;
        v.slope_mib = w->run_slope_mib;
        v.epochs = w->rising;
        v.epochs_to_oom = w->epochs_to_oom;
        if (isfinite(v.epochs_to_oom) && in->sec_per_epoch > 0)
                v.seconds_to_oom = v.epochs_to_oom * in->sec_per_epoch;
        leak_evidence(&v, in, worst, v.evidence, sizeof v.evidence);
        *out = v;
        return 0;
}

int gw_leak_detect_series(const struct gw_leak_params *p, const struct gw_leak_series *gpus, size_t n_gpus,
                          const gw_usec_t *bounds, size_t n_bounds, double sec_per_epoch, struct gw_leak_verdict *out) {
        if (n_gpus > GW_LEAK_MAX_GPUS || (n_gpus && !gpus) || (n_bounds && !bounds))
                return -EINVAL;
        long epoch[GW_LEAK_MAX_GPUS][GW_LEAK_MAX_EPOCHS]; /* ~100 KiB in all: fine on a thread's stack */
        double low[GW_LEAK_MAX_GPUS][GW_LEAK_MAX_EPOCHS], peak[GW_LEAK_MAX_GPUS][GW_LEAK_MAX_EPOCHS];
        struct gw_leak_gpu g[GW_LEAK_MAX_GPUS];
        /* The newest GW_LEAK_MAX_EPOCHS epochs, never the first. */
        size_t first = n_bounds > GW_LEAK_MAX_EPOCHS + 1 ? n_bounds - GW_LEAK_MAX_EPOCHS : 2;
        for (size_t i = 0; i < n_gpus; i++) {
                g[i] = (struct gw_leak_gpu){ .gpu = gpus[i].gpu,
                                             .mem_total = gpus[i].mem_total,
                                             .epoch = epoch[i],
                                             .low = low[i],
                                             .peak = peak[i] };
                for (size_t k = first; k < n_bounds; k++) {
                        double lo, hi;
                        if (gw_leak_epoch_stats(gpus[i].pts, gpus[i].n, bounds[k - 1], bounds[k], &lo, &hi) < 0)
                                continue;
                        epoch[i][g[i].n] = (long) k;
                        low[i][g[i].n] = lo;
                        peak[i][g[i].n] = hi;
                        g[i].n++;
                }
        }
        struct gw_leak_input in = { .gpus = g, .n_gpus = n_gpus, .sec_per_epoch = sec_per_epoch };
        return gw_leak_detect(p, &in, out);
}
