/* Training awareness measures over the pure modules, with series shaped like the
 * fake trainer's (tests/fakes/fake_trainer.c): epochs of S seconds with jitter, a startup
 * epoch, sawtooth memory that climbs during training, peaks in validation and drops back to
 * its baseline, sampled every second with noise.
 *
 *   ETA: median absolute error of gw_eta_estimate at 10%, 50% and 90% progress against the
 *        true remaining time, over RUNS runs of 100 epochs with +-20% uniform jitter.
 *   Leak: detection delay (epochs after the leak starts until gw_leak_detect_series flags it)
 *        for 400 MiB/epoch on one GPU of two, and false positives on 20 non-leaking runs.
 *
 * Build and run (from the repository root, after building build-NAME):
 *   cc -O2 -std=gnu17 -Isrc bench/training_bench.c build-NAME/libgw_core.a build-NAME/libgw_base.a -lm \
 *      -o /tmp/training_bench && /tmp/training_bench */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/eta.h"
#include "core/leak.h"

#define RUNS 200
#define EPOCHS 100
#define EPOCH_S 60.0
#define JITTER 0.20
#define MIB (1024.0 * 1024.0)

static unsigned long long rng_state;
static double uniform(void) { /* xorshift64*: reproducible, seeded per run */
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return (double) ((rng_state * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static int cmp_d(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return (x > y) - (x < y);
}

static double median(double *v, size_t n) {
        qsort(v, n, sizeof *v, cmp_d);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void eta_error(void) {
        static const int marks[] = { 10, 50, 90 };
        double abs_err[3][RUNS], rel_err[3][RUNS];
        for (int run = 0; run < RUNS; run++) {
                rng_state = 0x9E3779B97F4A7C15ULL + (unsigned long long) run * 7919;
                double dur[EPOCHS];
                for (int e = 0; e < EPOCHS; e++)
                        dur[e] = EPOCH_S * (1 + JITTER * (2 * uniform() - 1)) + (e == 0 ? 25 : 0);
                for (int m = 0; m < 3; m++) {
                        int done = marks[m];
                        struct gw_eta_epoch ep[EPOCHS];
                        gw_usec_t t = 0;
                        for (int e = 0; e < done; e++) {
                                ep[e] = (struct gw_eta_epoch){ .duration = (gw_usec_t) (dur[e] * 1e6),
                                                               .startup = e == 0 };
                                t += ep[e].duration;
                        }
                        struct gw_eta_input in = { .epochs = ep,
                                                   .n_epochs = (size_t) done,
                                                   .done = done,
                                                   .total = EPOCHS,
                                                   .last_end = t,
                                                   .now = t };
                        struct gw_eta out;
                        if (gw_eta_estimate(&in, &out) < 0)
                                abort();
                        double truth = 0;
                        for (int e = done; e < EPOCHS; e++)
                                truth += dur[e];
                        abs_err[m][run] = fabs(out.remaining_s - truth);
                        rel_err[m][run] = abs_err[m][run] / truth;
                }
        }
        printf("ETA (%d runs, %d epochs of %.0f s +-%.0f%%, a 25 s startup):\n", RUNS, EPOCHS, EPOCH_S, JITTER * 100);
        for (int m = 0; m < 3; m++) {
                double a = median(abs_err[m], RUNS), r = median(rel_err[m], RUNS);
                printf("  at %2d%% progress: median |error| %.0f s = %.2f%% of the time left\n", marks[m], a, 100 * r);
        }
}

#define SAMPLES_PER_EPOCH 30
#define LEAK_EPOCHS_RUN 16

/* One GPU's memory over n epochs: baseline 3 GiB + leak per epoch, training climbs 1.5 GiB,
 * validation peaks 0.5 GiB higher for the last 20%, then back down; +-30 MiB noise. */
static size_t series(struct gw_point *pts, gw_usec_t *bounds, int n, double leak_mib, int leak_from) {
        size_t k = 0;
        gw_usec_t t = 0;
        bounds[0] = 0;
        for (int e = 1; e <= n; e++) {
                int samples = (int) (SAMPLES_PER_EPOCH * (1 + JITTER * (2 * uniform() - 1)));
                double base = 3 * 1024 + (e >= leak_from ? leak_mib * (e - leak_from + 1) : 0);
                for (int s = 0; s < samples; s++) {
                        double f = (double) s / samples, mib = base;
                        if (e == 1 && s < 3)
                                mib = 200; /* the process starts: almost nothing yet */
                        else if (f < 0.1)
                                mib = base + 50;
                        else if (f < 0.8)
                                mib = base + 1500 * (f - 0.1) / 0.7;
                        else
                                mib = base + 2000;
                        if (e == 1)
                                mib += 800 * f; /* the allocator's one-off growth in epoch 1 */
                        mib += 60 * uniform() - 30;
                        pts[k++] = (struct gw_point){ .t = t, .mem = (uint64_t) (mib * MIB) };
                        t += 1000000;
                }
                bounds[e] = t;
        }
        return k;
}

static void leak_detection(void) {
        static struct gw_point p0[LEAK_EPOCHS_RUN * SAMPLES_PER_EPOCH * 2], p1[LEAK_EPOCHS_RUN * SAMPLES_PER_EPOCH * 2];
        gw_usec_t b0[LEAK_EPOCHS_RUN + 1], b1[LEAK_EPOCHS_RUN + 1];
        struct gw_leak_params par;
        gw_leak_params_default(&par);
        double delays[RUNS];
        int missed = 0, fp = 0;
        for (int run = 0; run < RUNS + 20; run++) {
                bool leaking = run < RUNS;
                rng_state = 0xD1B54A32D192ED03ULL + (unsigned long long) run * 104729;
                int leak_from = 3;
                size_t n0 = series(p0, b0, LEAK_EPOCHS_RUN, leaking ? 400 : 0, leak_from);
                size_t n1 = series(p1, b1, LEAK_EPOCHS_RUN, 0, leak_from);
                (void) n1;
                int flagged_at = -1;
                for (int e = 2; e <= LEAK_EPOCHS_RUN && flagged_at < 0; e++) {
                        /* As the daemon sees it after epoch e's row: GPU 0's epoch bounds for both. */
                        struct gw_leak_series s[2] = {
                                { .gpu = 0, .mem_total = (uint64_t) 80 << 30, .pts = p0, .n = n0 },
                                { .gpu = 1, .mem_total = (uint64_t) 80 << 30, .pts = p1, .n = n1 },
                        };
                        struct gw_leak_verdict v;
                        if (gw_leak_detect_series(&par, s, 2, b0, (size_t) e + 1, 60, &v) < 0)
                                abort();
                        if (v.leak)
                                flagged_at = e;
                }
                if (leaking) {
                        if (flagged_at < 0)
                                missed++, delays[run] = NAN;
                        else
                                delays[run] = flagged_at - leak_from + 1;
                } else if (flagged_at >= 0)
                        fp++;
        }
        double d[RUNS];
        size_t nd = 0;
        double worst = 0;
        for (int i = 0; i < RUNS; i++)
                if (!isnan(delays[i])) {
                        d[nd++] = delays[i];
                        worst = delays[i] > worst ? delays[i] : worst;
                }
        printf("Leak (400 MiB/epoch on GPU 0 of 2 from epoch %d, %d runs; threshold %.0f MiB/epoch, %u epochs):\n", 3,
               RUNS, par.mib_per_epoch, par.epochs);
        printf("  flagged after a median of %.0f leaking epochs (worst %.0f), missed %d\n", nd ? median(d, nd) : NAN,
               worst, missed);
        printf("  false positives: %d of 20 non-leaking runs (%d epochs each, sawtooth, epoch-1 growth, noise)\n", fp,
               LEAK_EPOCHS_RUN);
}

int main(void) {
        eta_error();
        leak_detection();
        return 0;
}
