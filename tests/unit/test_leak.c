#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/leak.h"

#define SEC GW_USEC_PER_SEC
#define T0 ((gw_usec_t) 1700000000 * SEC)
#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)
#define EPOCH_S 120 /* 100 s training, 20 s validation */
#define MAX_PTS 4096
#define MAX_GPUS 4

/* A synthetic run: one point per 2 s; what memory does within an epoch is up to shape(). */
struct run {
        struct gw_point pts[MAX_GPUS][MAX_PTS];
        size_t n[MAX_GPUS];
        gw_usec_t bounds[64];
        size_t n_bounds;
};

/* Memory of gpu at second s of (1-based) epoch e. */
typedef double (*shape_fn)(unsigned gpu, long e, int s, void *arg);

static void build(struct run *r, unsigned n_gpus, long epochs, shape_fn shape, void *arg) {
        memset(r, 0, sizeof *r);
        r->bounds[r->n_bounds++] = T0;
        for (long e = 1; e <= epochs; e++) {
                gw_usec_t start = T0 + (e - 1) * EPOCH_S * SEC;
                for (int s = 0; s < EPOCH_S; s += 2)
                        for (unsigned g = 0; g < n_gpus; g++)
                                r->pts[g][r->n[g]++] = (struct gw_point){ .t = start + s * SEC,
                                                                          .util = 90,
                                                                          .mem = (uint64_t) shape(g, e, s, arg) };
                r->bounds[r->n_bounds++] = start + EPOCH_S * SEC;
        }
}

static struct gw_leak_verdict judge(const struct run *r, unsigned n_gpus, long epochs, uint64_t total) {
        struct gw_leak_params p;
        gw_leak_params_default(&p);
        struct gw_leak_series s[MAX_GPUS];
        for (unsigned g = 0; g < n_gpus; g++)
                s[g] = (struct gw_leak_series){ .gpu = g, .mem_total = total, .pts = r->pts[g], .n = r->n[g] };
        struct gw_leak_verdict v;
        memset(&v, 0x5a, sizeof v);
        assert_int_equal(gw_leak_detect_series(&p, s, n_gpus, r->bounds, (size_t) epochs + 1, EPOCH_S, &v), 0);
        return v;
}

/* PyTorch's caching: the first epoch starts from nothing and grows; later epochs climb
 * during training, jump during validation and come back to the same baseline. */
static double sawtooth(unsigned gpu, long e, int s, void *arg) {
        double base = 20.0 * GIB, noise = (double) ((e * 7 + s * 13) % 11) * MIB;
        if (e == 1 && s < 10)
                return (double) s * 2 * GIB;
        if (s >= 100)
                return base + 6.0 * GIB + noise; /* validation */
        return base + (double) s / 100 * 4 * GIB + noise; /* training climbs */
}

static void sawtooth_is_not_a_leak(void **state) {
        static struct run r;
        build(&r, 2, 30, sawtooth, NULL);
        for (long e = 3; e <= 30; e++) {
                struct gw_leak_verdict v = judge(&r, 2, e, 80 * GIB);
                assert_false(v.leak);
        }
        struct gw_leak_verdict v = judge(&r, 2, 30, 80 * GIB);
        assert_true(v.per_gpu[0].flat);
        assert_non_null(strstr(v.evidence, "no leak"));
}

/* The allocator grows once in epoch 1 (and its first validation), then stays. */
static double warmup(unsigned gpu, long e, int s, void *arg) {
        if (e == 1)
                return (double) (s < 60 ? s : 60) * 200 * MIB;
        return 30.0 * GIB + (s >= 100 ? 2.0 * GIB : 0);
}

static void epoch_one_growth_is_not_a_leak(void **state) {
        static struct run r;
        build(&r, 1, 12, warmup, NULL);
        for (long e = 2; e <= 12; e++)
                assert_false(judge(&r, 1, e, 80 * GIB).leak);
        /* Even with a one-off step in epoch 2 (a bigger validation batch), flat afterwards. */
        struct gw_leak_params p;
        gw_leak_params_default(&p);
        long ep[] = { 2, 3, 4, 5, 6, 7 };
        double low[] = { 10.0 * GIB, 13.0 * GIB, 13.0 * GIB, 13.0 * GIB, 13.0 * GIB, 13.0 * GIB };
        struct gw_leak_gpu g = { .gpu = 0, .mem_total = 80 * GIB, .epoch = ep, .low = low, .n = 6 };
        struct gw_leak_input in = { .gpus = &g, .n_gpus = 1 };
        struct gw_leak_verdict v;
        for (size_t n = 2; n <= 6; n++) {
                g.n = n;
                assert_int_equal(gw_leak_detect(&p, &in, &v), 0);
                assert_false(v.leak);
        }
}

/* Baseline +300 MiB after every validation, on every GPU; peak 4 GiB above it. */
static double steady_leak(unsigned gpu, long e, int s, void *arg) {
        double base = 10.0 * GIB + (double) (e - 1) * 300 * MIB;
        if (e == 1 && s < 10)
                return 0;
        if (s >= 100)
                return base + 4.0 * GIB;
        return base + (double) s / 100 * 2 * GIB;
}

static void steady_leak_flagged_with_oom_prediction(void **state) {
        static struct run r;
        build(&r, 1, 8, steady_leak, NULL);
        /* Epoch 1 is not used: baselines of epochs 2, 3 are only 2 rising epochs. */
        assert_false(judge(&r, 1, 3, 80 * GIB).leak);
        struct gw_leak_verdict v = judge(&r, 1, 4, 80 * GIB);
        assert_true(v.leak);
        assert_int_equal(v.gpu, 0);
        assert_int_equal(v.epochs, 3);
        assert_true(fabs(v.slope_mib - 300) < 1e-6);
        /* Peak of epoch 4 = 10 GiB + 900 MiB + 4 GiB; (80 GiB - that) / 300 MiB per epoch. */
        double want = (80.0 * 1024 - (14.0 * 1024 + 900)) / 300;
        assert_true(fabs(v.epochs_to_oom - want) < 1e-6);
        assert_true(fabs(v.seconds_to_oom - want * EPOCH_S) < 1e-3);
        char expect[128];
        snprintf(expect, sizeof expect, "GPU 0: baseline +300 MiB/epoch for 3 epochs; OOM in ~%ld epochs / ",
                 (long) floor(want));
        assert_non_null(strstr(v.evidence, expect));
        /* Longer: the run grows, the OOM comes closer. */
        struct gw_leak_verdict later = judge(&r, 1, 8, 80 * GIB);
        assert_true(later.leak);
        assert_int_equal(later.epochs, 7);
        assert_true(later.epochs_to_oom < v.epochs_to_oom);
        /* 200 MiB/epoch is below the default threshold. */
        long ep[] = { 2, 3, 4, 5, 6 };
        double low[5];
        for (int i = 0; i < 5; i++)
                low[i] = 10.0 * GIB + i * 200.0 * MIB;
        struct gw_leak_gpu g = { .epoch = ep, .low = low, .n = 5, .mem_total = 80 * GIB };
        struct gw_leak_input in = { .gpus = &g, .n_gpus = 1 };
        struct gw_leak_params p;
        gw_leak_params_default(&p);
        assert_int_equal(gw_leak_detect(&p, &in, &v), 0);
        assert_false(v.leak);
}

/* GPU 0 (EMA weights, checkpoints) leaks 412 MiB/epoch, GPUs 1-3 do not. */
static double gpu0_leak(unsigned gpu, long e, int s, void *arg) {
        double base = 20.0 * GIB + (gpu == 0 ? (double) (e - 1) * 412 * MIB : 0);
        return base + (s >= 100 ? 3.0 * GIB : (double) s / 100 * GIB);
}

static void one_gpu_growing_is_flagged(void **state) {
        static struct run r;
        build(&r, 4, 6, gpu0_leak, NULL);
        struct gw_leak_verdict v = judge(&r, 4, 6, 80 * GIB);
        assert_true(v.leak);
        assert_int_equal(v.gpu, 0);
        assert_true(v.per_gpu[0].flagged);
        for (int g = 1; g < 4; g++) {
                assert_false(v.per_gpu[g].flagged);
                assert_true(v.per_gpu[g].flat);
        }
        assert_non_null(strstr(v.evidence, "GPU 0: baseline +412 MiB/epoch for 5 epochs (GPUs 1-3 flat); OOM in ~"));
        /* 200 MiB/epoch on GPU 0 alone: below the threshold, but its siblings are flat. */
        struct gw_leak_params p;
        gw_leak_params_default(&p);
        long ep[] = { 2, 3, 4, 5 };
        double grow[4], flat[4];
        for (int i = 0; i < 4; i++) {
                grow[i] = 10.0 * GIB + i * 200.0 * MIB;
                flat[i] = 10.0 * GIB + (i % 2) * 5.0 * MIB;
        }
        struct gw_leak_gpu g2[] = { { .gpu = 0, .epoch = ep, .low = grow, .n = 4 },
                                    { .gpu = 1, .epoch = ep, .low = flat, .n = 4 } };
        struct gw_leak_input in = { .gpus = g2, .n_gpus = 2 };
        assert_int_equal(gw_leak_detect(&p, &in, &v), 0);
        assert_true(v.leak);
        assert_true(v.asymmetric);
        assert_true(isnan(v.epochs_to_oom)); /* capacity unknown */
        assert_non_null(strstr(v.evidence, "GPU 0: baseline +200 MiB/epoch for 4 epochs (GPU 1 flat)"));
        /* The same growth on one GPU alone is not enough. */
        in.n_gpus = 1;
        assert_int_equal(gw_leak_detect(&p, &in, &v), 0);
        assert_false(v.leak);
}

static double noisy(unsigned gpu, long e, int s, void *arg) {
        /* A pseudo-random baseline wobble of up to 100 MiB, no trend. */
        unsigned x = (unsigned) (e * 2654435761u);
        double base = 20.0 * GIB + (double) (x % 100) * MIB;
        return base + (s >= 100 ? 2.0 * GIB : (double) s / 100 * GIB);
}

static void noise_is_not_a_leak_and_a_noisy_leak_is(void **state) {
        static struct run r;
        build(&r, 1, 40, noisy, NULL);
        for (long e = 3; e <= 40; e++)
                assert_false(judge(&r, 1, e, 80 * GIB).leak);
        long ep[8];
        double low[8];
        for (int i = 0; i < 8; i++) {
                ep[i] = i + 2;
                low[i] = 10.0 * GIB + i * 300.0 * MIB + ((i * 37) % 80) * MIB;
        }
        struct gw_leak_gpu g = { .epoch = ep, .low = low, .n = 8, .mem_total = 80 * GIB };
        struct gw_leak_input in = { .gpus = &g, .n_gpus = 1 };
        struct gw_leak_params p;
        struct gw_leak_verdict v;
        gw_leak_params_default(&p);
        assert_int_equal(gw_leak_detect(&p, &in, &v), 0);
        assert_true(v.leak);
        assert_true(v.slope_mib > 256 && v.slope_mib < 350);
}

static void theil_sen_and_bad_input(void **state) {
        double x[] = { 1, 2, 3, 4, 5 }, y[] = { 0, 10, 20, 1000, 40 };
        assert_true(fabs(gw_leak_theil_sen(x, y, 5) - 10) < 1e-9); /* the outlier does not move it */
        assert_true(gw_leak_theil_sen(x, y, 1) == 0);
        struct gw_leak_params p;
        gw_leak_params_default(&p);
        struct gw_leak_verdict v;
        struct gw_leak_input in = { .n_gpus = 0 };
        assert_int_equal(gw_leak_detect(&p, &in, &v), 0);
        assert_false(v.leak);
        p.epochs = 1;
        assert_int_equal(gw_leak_detect(&p, &in, &v), -EINVAL);
        gw_leak_params_default(&p);
        long ep[] = { 3, 2 };
        double low[] = { 1, 2 };
        struct gw_leak_gpu g = { .epoch = ep, .low = low, .n = 2 };
        in = (struct gw_leak_input){ .gpus = &g, .n_gpus = 1 };
        assert_int_equal(gw_leak_detect(&p, &in, &v), -EINVAL);
        struct gw_point pts[] = { { .t = 5, .mem = 7 }, { .t = 6, .mem = 3 }, { .t = 9, .mem = 9 } };
        double lo, hi;
        assert_int_equal(gw_leak_epoch_stats(pts, 3, 5, 9, &lo, &hi), 0);
        assert_true(lo == 3 && hi == 7);
        assert_int_equal(gw_leak_epoch_stats(pts, 3, 10, 20, &lo, &hi), -ENODATA);
}

/* A job on a MIG slice: the evidence names the slice, and the OOM is counted from its size. */
static void slice_named_and_its_size_used(void **state) {
        (void) state;
        long ep[] = { 2, 3, 4, 5 };
        double low[4];
        for (int i = 0; i < 4; i++)
                low[i] = 2.0 * GIB + i * 400.0 * MIB;
        struct gw_leak_gpu g = { .epoch = ep,
                                 .low = low,
                                 .n = 4,
                                 .mem_total = 10 * GIB,
                                 .name = "MIG-fa4e0000-0000-4000-8001-000000000000 (1g.10gb on GPU 0)" };
        struct gw_leak_input in = { .gpus = &g, .n_gpus = 1 };
        struct gw_leak_params p;
        gw_leak_params_default(&p);
        struct gw_leak_verdict v;
        assert_int_equal(gw_leak_detect(&p, &in, &v), 0);
        assert_true(v.leak);
        /* (10 GiB - (2 GiB + 1200 MiB)) / 400 MiB per epoch = 17.48 */
        assert_string_equal(v.evidence, "MIG-fa4e0000-0000-4000-8001-000000000000 (1g.10gb on GPU 0): baseline "
                                        "+400 MiB/epoch for 4 epochs; OOM in ~17 epochs");
        g.n = 1;
        assert_int_equal(gw_leak_detect(&p, &in, &v), 0);
        assert_string_equal(v.evidence, "no leak: fewer than 2 epochs measured");
        g.n = 2;
        low[1] = low[0];
        assert_int_equal(gw_leak_detect(&p, &in, &v), 0);
        assert_string_equal(v.evidence, "no leak: MIG-fa4e0000-0000-4000-8001-000000000000 (1g.10gb on GPU 0) "
                                        "baseline +0 MiB/epoch over 2 epochs");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(sawtooth_is_not_a_leak),
                cmocka_unit_test(epoch_one_growth_is_not_a_leak),
                cmocka_unit_test(steady_leak_flagged_with_oom_prediction),
                cmocka_unit_test(one_gpu_growing_is_flagged),
                cmocka_unit_test(noise_is_not_a_leak_and_a_noisy_leak_is),
                cmocka_unit_test(theil_sen_and_bad_input),
                cmocka_unit_test(slice_named_and_its_size_used),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
