#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "core/telemetry.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))
#define SEC GW_USEC_PER_SEC

static struct gw_point pt(gw_usec_t t, unsigned util, uint64_t mem) {
        return (struct gw_point){ .t = t, .util = (uint8_t) util, .mem_util = 0, .mem = mem };
}

static void push_t(struct gw_ring *r, gw_usec_t t) {
        struct gw_point p = pt(t, (unsigned) (t % 101), (uint64_t) t * 1000);
        gw_ring_push(r, &p);
}

/* ---- ring ---- */

static void ring_empty(void **state) {
        struct gw_ring r;
        struct gw_point out[4];

        gw_ring_init(&r, 8);
        assert_null(gw_ring_last(&r));
        assert_int_equal(gw_ring_since(&r, 0, out, N_ELEMS(out)), 0);
        assert_int_equal(gw_ring_since(&r, INT64_MIN, out, N_ELEMS(out)), 0);
        gw_ring_free(&r);
        gw_ring_free(&r); /* freeing twice is harmless: free zeroes the ring */
        assert_null(r.v);
}

static void ring_wraps_oldest_first(void **state) {
        struct gw_ring r;
        struct gw_point out[16];
        size_t n;

        gw_ring_init(&r, 4);
        for (gw_usec_t t = 1; t <= 10; t++)
                push_t(&r, t);
        assert_int_equal(r.n, 4);

        n = gw_ring_since(&r, 0, out, N_ELEMS(out));
        assert_int_equal(n, 4);
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(out[i].t, 7 + (gw_usec_t) i);
                assert_int_equal(out[i].mem, (uint64_t) (7 + i) * 1000);
        }

        n = gw_ring_since(&r, 9, out, N_ELEMS(out));
        assert_int_equal(n, 2);
        assert_int_equal(out[0].t, 9);
        assert_int_equal(out[1].t, 10);

        /* max caps the copy; what is copied is still the oldest matching points, in order */
        n = gw_ring_since(&r, 0, out, 2);
        assert_int_equal(n, 2);
        assert_int_equal(out[0].t, 7);
        assert_int_equal(out[1].t, 8);
        assert_int_equal(gw_ring_since(&r, 0, out, 0), 0);

        assert_int_equal(gw_ring_since(&r, 11, out, N_ELEMS(out)), 0);
        assert_non_null(gw_ring_last(&r));
        assert_int_equal(gw_ring_last(&r)->t, 10);
        gw_ring_free(&r);
}

static void ring_partial_then_full(void **state) {
        struct gw_ring r;
        struct gw_point out[8];

        gw_ring_init(&r, 5);
        push_t(&r, 100);
        push_t(&r, 200);
        assert_int_equal(gw_ring_last(&r)->t, 200);
        assert_int_equal(gw_ring_since(&r, 150, out, N_ELEMS(out)), 1);
        assert_int_equal(out[0].t, 200);
        /* exactly at capacity, then one over: every position of the wrap is exercised */
        for (gw_usec_t t = 300; t <= 700; t += 100) {
                push_t(&r, t);
                size_t n = gw_ring_since(&r, 0, out, N_ELEMS(out));
                assert_int_equal(n, r.n);
                for (size_t i = 1; i < n; i++)
                        assert_true(out[i - 1].t < out[i].t);
                assert_int_equal(out[n - 1].t, t);
        }
        assert_int_equal(out[0].t, 300);
        gw_ring_free(&r);
}

static void ring_capacity_one(void **state) {
        struct gw_ring r;
        struct gw_point out[4];

        gw_ring_init(&r, 1);
        for (gw_usec_t t = 1; t <= 3; t++) {
                push_t(&r, t);
                assert_int_equal(gw_ring_last(&r)->t, t);
                assert_int_equal(gw_ring_since(&r, 0, out, N_ELEMS(out)), 1);
                assert_int_equal(out[0].t, t);
        }
        assert_int_equal(gw_ring_since(&r, 4, out, N_ELEMS(out)), 0);
        gw_ring_free(&r);
}

static void ring_capacity_zero(void **state) {
        struct gw_ring r;
        struct gw_point out[1];

        gw_ring_init(&r, 0);
        push_t(&r, 1);
        assert_null(gw_ring_last(&r));
        assert_int_equal(gw_ring_since(&r, 0, out, 1), 0);
        gw_ring_free(&r);
}

/* ---- aggregator ---- */

static void agg_first_point(void **state) {
        struct gw_agg a = { 0 }, done = { 0 };
        struct gw_point p = pt(125 * SEC + 7, 40, 4000);

        assert_false(gw_agg_add(&a, 60 * SEC, &p, &done));
        assert_int_equal(a.bucket, 120 * SEC);
        assert_int_equal(a.n, 1);
        assert_int_equal(a.util_min, 40);
        assert_int_equal(a.util_max, 40);
        assert_int_equal(a.mem_min, 4000);
        assert_int_equal(a.mem_max, 4000);
        assert_true(gw_agg_util_mean(&a) == 40.0);
        assert_int_equal(gw_agg_mem_mean(&a), 4000);
        assert_int_equal(done.n, 0);

        struct gw_agg empty = { 0 };
        assert_true(gw_agg_util_mean(&empty) == 0.0);
        assert_int_equal(gw_agg_mem_mean(&empty), 0);
}

static void agg_epoch_bucket_accumulates(void **state) {
        struct gw_agg a = { 0 };
        struct gw_point p1 = pt(1 * SEC, 10, 100), p2 = pt(2 * SEC, 30, 300);

        /* bucket 0 is a real bucket once it holds a point; the second point must join it */
        assert_false(gw_agg_add(&a, 60 * SEC, &p1, NULL));
        assert_false(gw_agg_add(&a, 60 * SEC, &p2, NULL));
        assert_int_equal(a.bucket, 0);
        assert_int_equal(a.n, 2);
        assert_true(gw_agg_util_mean(&a) == 20.0);
}

static void agg_one_bucket_then_rollover(void **state) {
        const gw_usec_t w = 60 * SEC;
        struct gw_agg a = { 0 }, done = { 0 };
        struct gw_point in[] = {
                pt(60 * SEC, 50, 1000), pt(70 * SEC, 10, 5000), pt(119 * SEC + 999999, 90, 3000),
                pt(80 * SEC, 20, 2000), /* late but inside the current bucket: counts */
        };

        for (size_t i = 0; i < N_ELEMS(in); i++)
                assert_false(gw_agg_add(&a, w, &in[i], &done));
        assert_int_equal(a.bucket, 60 * SEC);
        assert_int_equal(a.n, 4);
        assert_int_equal(done.n, 0);

        struct gw_point next = pt(185 * SEC, 77, 7777);
        assert_true(gw_agg_add(&a, w, &next, &done));
        assert_int_equal(done.bucket, 60 * SEC);
        assert_int_equal(done.n, 4);
        assert_int_equal(done.util_min, 10);
        assert_int_equal(done.util_max, 90);
        assert_true(gw_agg_util_mean(&done) == 42.5);
        assert_int_equal(done.mem_min, 1000);
        assert_int_equal(done.mem_max, 5000);
        assert_int_equal(gw_agg_mem_mean(&done), 2750);

        /* a skipped bucket (120 s) is simply absent; the new one starts from the point alone */
        assert_int_equal(a.bucket, 180 * SEC);
        assert_int_equal(a.n, 1);
        assert_int_equal(a.util_min, 77);
        assert_int_equal(a.util_max, 77);
        assert_int_equal(a.mem_max, 7777);

        /* rollover with done == NULL is allowed */
        struct gw_point later = pt(240 * SEC, 1, 1);
        assert_true(gw_agg_add(&a, w, &later, NULL));
        assert_int_equal(a.bucket, 240 * SEC);
}

static void agg_old_points_ignored(void **state) {
        const gw_usec_t w = 60 * SEC;
        struct gw_agg a = { 0 }, done = { 0 };
        struct gw_point p = pt(600 * SEC, 30, 300), old = pt(599 * SEC, 100, 999999);

        assert_false(gw_agg_add(&a, w, &p, &done));
        assert_false(gw_agg_add(&a, w, &old, &done));
        assert_int_equal(a.bucket, 600 * SEC);
        assert_int_equal(a.n, 1);
        assert_int_equal(a.util_max, 30);
        assert_int_equal(a.mem_max, 300);
        assert_int_equal(done.n, 0);
}

/* ---- usage ---- */

static void usage_mean_and_peak(void **state) {
        struct gw_usage u = { 0 };

        assert_true(gw_usage_mean(&u) == 0.0);
        assert_int_equal(gw_usage_percentile(&u, 50), 0);
        assert_int_equal(u.mem_peak, 0);

        gw_usage_add(&u, 10, 5000);
        gw_usage_add(&u, 20, 9000);
        gw_usage_add(&u, 60, 7000);
        assert_int_equal(u.n, 3);
        assert_true(gw_usage_mean(&u) == 30.0);
        assert_int_equal(u.mem_peak, 9000);
        assert_int_equal(gw_usage_percentile(&u, 0), 10);
        assert_int_equal(gw_usage_percentile(&u, 33), 10);
        assert_int_equal(gw_usage_percentile(&u, 34), 20);
        assert_int_equal(gw_usage_percentile(&u, 100), 60);
        assert_int_equal(gw_usage_percentile(&u, 1000), 60);
}

static void usage_clamps_util(void **state) {
        struct gw_usage u = { 0 };

        gw_usage_add(&u, 150, 1);
        gw_usage_add(&u, 4000000000u, 2);
        assert_int_equal(u.hist[100], 2);
        assert_true(gw_usage_mean(&u) == 100.0);
        assert_int_equal(gw_usage_percentile(&u, 0), 100);
        assert_int_equal(gw_usage_percentile(&u, 100), 100);
        assert_int_equal(u.mem_peak, 2);
}

static uint64_t xorshift(uint64_t *s) {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        return *s;
}

static int cmp_unsigned(const void *a, const void *b) {
        unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
        return (x > y) - (x < y);
}

/* The definition, written the slow way: sort, then take the ceil(pct/100 * n)-th value. */
static unsigned brute_percentile(const unsigned *sorted, size_t n, unsigned pct) {
        size_t rank;

        if (pct > 100)
                pct = 100;
        rank = (pct * n + 99) / 100;
        return sorted[rank ? rank - 1 : 0];
}

static void usage_percentiles_match_sort(void **state) {
        static const unsigned fixed[] = { 0, 1, 50, 90, 95, 99, 100, 101, 250 };
        uint64_t seed = 0x9e3779b97f4a7c15u;
        unsigned *vals = malloc(1000 * sizeof(*vals));

        assert_non_null(vals);
        for (int c = 0; c < 400; c++) {
                struct gw_usage u = { 0 };
                size_t n = 1 + xorshift(&seed) % 1000;
                unsigned mode = (unsigned) (xorshift(&seed) % 3);
                double sum = 0;
                uint64_t peak = 0;

                for (size_t i = 0; i < n; i++) {
                        /* uniform, clustered near idle, or clustered near full: percentiles
                         * land both in busy and in sparse parts of the histogram */
                        unsigned v = (unsigned) (xorshift(&seed) % 101);
                        if (mode == 1)
                                v = v % 7;
                        else if (mode == 2)
                                v = 100 - v % 4;
                        uint64_t mem = xorshift(&seed) % (UINT64_C(80) << 30);
                        vals[i] = v;
                        sum += v;
                        if (mem > peak)
                                peak = mem;
                        gw_usage_add(&u, v, mem);
                }
                qsort(vals, n, sizeof(*vals), cmp_unsigned);

                assert_int_equal(u.n, n);
                assert_true(gw_usage_mean(&u) == sum / (double) n);
                assert_int_equal(u.mem_peak, peak);
                assert_int_equal(gw_usage_percentile(&u, 0), vals[0]);
                for (size_t k = 0; k < N_ELEMS(fixed); k++)
                        assert_int_equal(gw_usage_percentile(&u, fixed[k]), brute_percentile(vals, n, fixed[k]));
                for (int k = 0; k < 5; k++) {
                        unsigned pct = (unsigned) (xorshift(&seed) % 101);
                        assert_int_equal(gw_usage_percentile(&u, pct), brute_percentile(vals, n, pct));
                }
        }
        free(vals);
}

/* ---- attribution ---- */

static const struct gw_job_anchor anchors[] = {
        { .job_id = 17, .shim_pid = 1700, .cgroup_name = "job-17.1" },
        { .job_id = 23, .shim_pid = 2300, .cgroup_name = "job-23.2" },
        { .job_id = 31, .shim_pid = 3100, .cgroup_name = NULL },
};

static int64_t attr(unsigned pid, const char *cgroup, const unsigned *anc, size_t n_anc) {
        struct gw_proc_facts p = { .pid = pid, .cgroup = cgroup, .ancestors = anc, .n_ancestors = n_anc };
        return gw_attribute(&p, anchors, N_ELEMS(anchors));
}

static void attribute_cgroup_v2(void **state) {
        assert_int_equal(attr(5000, "0::/gpuward/state-x/job-17.1\n", NULL, 0), 17);
        assert_int_equal(attr(5000, "0::/gpuward/state-x/job-23.2", NULL, 0), 23);
        /* a process in a child cgroup of the job (nested scope) still belongs to it */
        assert_int_equal(attr(5000, "0::/gpuward/state-x/job-23.2/payload\n", NULL, 0), 23);
        /* bare path, as a caller might pass after parsing */
        assert_int_equal(attr(5000, "/gpuward/state-x/job-17.1", NULL, 0), 17);
}

static void attribute_cgroup_v1(void **state) {
        const char *v1 = "12:pids:/user.slice/user-1000.slice\n"
                         "11:memory:/user.slice\n"
                         "4:freezer:/gpuward/state-x/job-17.1\n"
                         "1:name=systemd:/user.slice/user-1000.slice/session-2.scope\n"
                         "0::/user.slice/user-1000.slice/session-2.scope\n";
        assert_int_equal(attr(5000, v1, NULL, 0), 17);
        /* last line without a trailing newline */
        assert_int_equal(attr(5000, "11:memory:/user.slice\n4:freezer:/gpuward/state-x/job-23.2", NULL, 0), 23);
}

static void attribute_cgroup_exact_component(void **state) {
        static const unsigned anc[] = { 4000, 1 };

        assert_int_equal(attr(5000, "0::/gpuward/state-x/job-17.10\n", anc, N_ELEMS(anc)), 0);
        assert_int_equal(attr(5000, "0::/gpuward/state-x/job-17.1x/y\n", NULL, 0), 0);
        assert_int_equal(attr(5000, "0::/gpuward/state-x/xjob-17.1\n", NULL, 0), 0);
        assert_int_equal(attr(5000, "4:freezer:/gpuward/job-17.10\n0::/job-17.11", NULL, 0), 0);
        /* the "ID:controllers:" prefix is not a path component */
        struct gw_job_anchor odd = { .job_id = 9, .shim_pid = 0, .cgroup_name = "0::" };
        struct gw_proc_facts p = { .pid = 5000, .cgroup = "0::/x/y\n" };
        assert_int_equal(gw_attribute(&p, &odd, 1), 0);
        /* an empty anchor name matches nothing, even a path with an empty component */
        struct gw_job_anchor empty = { .job_id = 9, .shim_pid = 0, .cgroup_name = "" };
        p.cgroup = "0::/x//y/\n";
        assert_int_equal(gw_attribute(&p, &empty, 1), 0);
}

static void attribute_ancestry(void **state) {
        static const unsigned via_shim[] = { 4100, 4000, 2300, 1 };
        static const unsigned via_other[] = { 4100, 3100, 1 };

        assert_int_equal(attr(5000, NULL, via_shim, N_ELEMS(via_shim)), 23);
        /* a job with no cgroup name can be found only this way */
        assert_int_equal(attr(5000, "0::/user.slice\n", via_other, N_ELEMS(via_other)), 31);
        /* the process is itself a shim */
        assert_int_equal(attr(1700, NULL, NULL, 0), 17);
        assert_int_equal(attr(2300, "0::/\n", (const unsigned[]){ 1 }, 1), 23);
}

static void attribute_none(void **state) {
        static const unsigned anc[] = { 4100, 4000, 1 };
        struct gw_proc_facts p = { .pid = 5000, .cgroup = "0::/gpuward/state-x/job-17.1" };

        assert_int_equal(attr(5000, "0::/user.slice/session-2.scope\n", anc, N_ELEMS(anc)), 0);
        assert_int_equal(attr(5000, NULL, NULL, 0), 0);
        assert_int_equal(attr(5000, "", anc, N_ELEMS(anc)), 0);
        assert_int_equal(attr(0, "0::/gpuward/state-x/job-17.1", anc, N_ELEMS(anc)), 0);
        assert_int_equal(gw_attribute(&p, anchors, 0), 0);
        assert_int_equal(gw_attribute(&p, NULL, 3), 0);
        assert_int_equal(gw_attribute(NULL, anchors, N_ELEMS(anchors)), 0);
        /* pid 1 heads every chain and must not be taken for a shim */
        struct gw_job_anchor init = { .job_id = 5, .shim_pid = 1, .cgroup_name = NULL };
        p.cgroup = NULL;
        p.ancestors = anc;
        p.n_ancestors = N_ELEMS(anc);
        assert_int_equal(gw_attribute(&p, &init, 1), 0);
}

static void attribute_cgroup_beats_ancestry(void **state) {
        /* in job 23's cgroup but descended from job 17's shim (e.g. moved by the daemon) */
        static const unsigned anc[] = { 4000, 1700, 1 };

        assert_int_equal(attr(5000, "0::/gpuward/state-x/job-23.2\n", anc, N_ELEMS(anc)), 23);
        /* and the process itself being a shim does not override its cgroup either */
        assert_int_equal(attr(1700, "0::/gpuward/state-x/job-23.2\n", NULL, 0), 23);
        /* the innermost shim wins among ancestors */
        static const unsigned nested[] = { 2300, 1700, 1 };
        assert_int_equal(attr(5000, NULL, nested, N_ELEMS(nested)), 23);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(ring_empty),
                cmocka_unit_test(ring_wraps_oldest_first),
                cmocka_unit_test(ring_partial_then_full),
                cmocka_unit_test(ring_capacity_one),
                cmocka_unit_test(ring_capacity_zero),
                cmocka_unit_test(agg_first_point),
                cmocka_unit_test(agg_epoch_bucket_accumulates),
                cmocka_unit_test(agg_one_bucket_then_rollover),
                cmocka_unit_test(agg_old_points_ignored),
                cmocka_unit_test(usage_mean_and_peak),
                cmocka_unit_test(usage_clamps_util),
                cmocka_unit_test(usage_percentiles_match_sort),
                cmocka_unit_test(attribute_cgroup_v2),
                cmocka_unit_test(attribute_cgroup_v1),
                cmocka_unit_test(attribute_cgroup_exact_component),
                cmocka_unit_test(attribute_ancestry),
                cmocka_unit_test(attribute_none),
                cmocka_unit_test(attribute_cgroup_beats_ancestry),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
