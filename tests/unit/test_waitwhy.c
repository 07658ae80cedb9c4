#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/sched.h"
#include "core/waitwhy.h"
#include "sched_test.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))
#define B(r) GW_WHY_BIT(GW_REASON_##r)

/* A host of n 80 GiB GPUs, those of drained out of service, those of run_mask held by job
 * 100 until NOW + 60 min; the jobs as given.  Plans, then asks for every reason. */
struct host {
        struct gw_sched_gpu gpus[8];
        struct gw_sched_running run;
        struct gw_sched_start starts[8];
        enum gw_job_reason reasons[8];
        uint32_t bits[8];
        struct gw_sched_plan plan;
};

static void plan_why(struct host *h, int n, uint64_t drained, uint64_t run_mask, struct gw_sched_job *jobs,
                     size_t n_jobs) {
        memset(h, 0, sizeof(*h));
        for (int i = 0; i < n; i++)
                h->gpus[i] = (struct gw_sched_gpu){ .index = i,
                                                    .usable = !(drained & M(i)),
                                                    .mem_total = 80 * GIB,
                                                    .mem_free = 80 * GIB,
                                                    .job_id = run_mask & M(i) ? 100 : 0 };
        h->run = (struct gw_sched_running){ .id = 100, .gpu_mask = run_mask, .end = NOW + 60 * MIN };
        for (size_t i = 0; i < n_jobs; i++)
                if (!jobs[i].time_limit)
                        jobs[i].time_limit = 30 * MIN;
        struct gw_sched_input in = { h->gpus, (size_t) n, jobs, n_jobs, &h->run, run_mask ? 1 : 0 };
        h->plan = (struct gw_sched_plan){ .starts = h->starts, .reasons = h->reasons };
        assert_int_equal(gw_sched_plan(&in, NOW, &h->plan), 0);
        assert_int_equal(gw_sched_why(&in, &h->plan, h->bits), 0);
}

/* A user's report: blocked by a quota and by a dependency, the job showed only the quota. */
static void quota_and_dependency_are_both_told(void **state) {
        (void) state;
        struct host h;
        struct gw_sched_job jobs[] = {
                { .id = 8, .ngpus = 1, .blocked = GW_REASON_QUOTA, .dep = GW_DEP_WAITING },
        };
        plan_why(&h, 2, 0, 0, jobs, N_ELEMS(jobs));
        assert_int_equal(h.reasons[0], GW_REASON_QUOTA);
        assert_int_equal(h.bits[0], B(QUOTA) | B(DEPENDENCY)); /* GPUs are free: not a reason */

        struct gw_why out[GW_WHY_MAX];
        struct gw_why_facts f = { .ngpus = 1, .after_job = 7, .quota = "Quota: max_gpus=1, 1 in use by job 5" };
        size_t n = gw_why_list(h.reasons[0], h.bits[0], &f, out, GW_WHY_MAX);
        assert_int_equal(n, 2);
        assert_int_equal(out[0].code, GW_REASON_QUOTA);
        assert_string_equal(out[0].text, "max_gpus=1, 1 in use by job 5");
        assert_int_equal(out[1].code, GW_REASON_DEPENDENCY);
        assert_string_equal(out[1].text, "after job 7 ends");
}

/* Held on a host without free GPUs: releasing it alone would not start it. */
static void held_is_told_with_the_gpus_it_lacks(void **state) {
        (void) state;
        struct host h;
        struct gw_sched_job jobs[] = {
                { .id = 1, .ngpus = 2, .held = true },
                { .id = 2, .ngpus = 1, .held = true },
                { .id = 3, .ngpus = 1, .backoff = true },
        };
        plan_why(&h, 2, 0, M(0), jobs, N_ELEMS(jobs));
        assert_int_equal(h.bits[0], B(HELD) | B(RESOURCES));
        assert_int_equal(h.bits[1], B(HELD)); /* GPU 1 is free */
        assert_int_equal(h.bits[2], B(BACKOFF));
}

/* 4 GPUs, GPU 2 drained: a 4-GPU job waits for it, by name; a 2-GPU job behind a running
 * one waits for GPUs as ever. */
static void a_drained_gpu_it_needs_is_named(void **state) {
        (void) state;
        struct host h;
        struct gw_sched_job jobs[] = {
                { .id = 1, .ngpus = 4 },
                { .id = 2, .ngpus = 2 },
                { .id = 3, .ngpus = 4, .held = true },
        };
        plan_why(&h, 4, M(2), M(0) | M(1), jobs, N_ELEMS(jobs));
        assert_int_equal(h.reasons[0], GW_REASON_DRAINED);
        assert_int_equal(h.bits[0], B(DRAINED));
        assert_int_equal(h.reasons[1], GW_REASON_RESOURCES);
        assert_int_equal(h.bits[1], B(RESOURCES));
        assert_int_equal(h.bits[2], B(HELD) | B(DRAINED));

        struct gw_why_gpu g[4];
        for (int i = 0; i < 4; i++)
                g[i] = (struct gw_why_gpu){ .index = i,
                                            .usable = i != 2,
                                            .drained = i == 2,
                                            .mem_total = 80 * GIB,
                                            .why = i == 2 ? "fan noise (by ann)" : NULL };
        char words[GW_WHY_TEXT];
        assert_string_equal(gw_why_drained(4, 0, g, 4, words, sizeof words),
                            "needs 4 GPUs, 3 are in service: GPU 2 drained (fan noise (by ann))");
        assert_null(gw_why_drained(2, 0, g, 4, words, sizeof words)); /* 3 in service are enough */
        assert_null(gw_why_drained(5, 0, g, 4, words, sizeof words)); /* not even with GPU 2 */

        struct gw_why out[GW_WHY_MAX];
        struct gw_why_facts f = { .ngpus = 4, .drained = words };
        (void) gw_why_drained(4, 0, g, 4, words, sizeof words);
        assert_int_equal(gw_why_list(GW_REASON_HELD, h.bits[2], &f, out, GW_WHY_MAX), 2);
        assert_int_equal(out[1].code, GW_REASON_DRAINED);
        assert_string_equal(out[1].text, "needs 4 GPUs, 3 are in service: GPU 2 drained (fan noise (by ann))");
}

static void drained_words_name_three_and_count_the_rest(void **state) {
        (void) state;
        struct gw_why_gpu g[6];
        for (int i = 0; i < 6; i++)
                g[i] = (struct gw_why_gpu){ .index = i, .usable = i == 0, .drained = i != 3, .mem_total = 80 * GIB };
        char words[GW_WHY_TEXT];
        assert_string_equal(gw_why_drained(6, 0, g, 6, words, sizeof words),
                            "needs 6 GPUs, 1 is in service: GPU 1 drained; GPU 2 drained; GPU 3 unhealthy; and 2 more");
        /* Memory: the GPUs too small for it count neither way. */
        g[5].mem_total = 40 * GIB;
        assert_string_equal(gw_why_drained(2, 60 * GIB, g, 6, words, sizeof words),
                            "needs 2 GPUs with the memory it asks, 1 is in service: GPU 1 drained; GPU 2 drained; "
                            "GPU 3 unhealthy; and 1 more");
        char tiny[8];
        assert_non_null(gw_why_drained(6, 0, g, 6, tiny, sizeof tiny)); /* cut short, still a string */
        assert_int_equal(strlen(tiny), sizeof tiny - 1);
}

/* The main reason first even when the bits lack it (the shown one, Preempted); never more
 * than asked for, never NONE. */
static void list_is_bounded_and_main_first(void **state) {
        (void) state;
        struct gw_why out[GW_WHY_MAX];
        struct gw_why_facts f = { .ngpus = 1, .booking_id = 4, .priority = 5, .preempted_by = "job 12" };
        uint32_t all = UINT32_MAX;
        size_t n = gw_why_list(GW_REASON_PREEMPTED, all, &f, out, GW_WHY_MAX);
        assert_int_equal(n, GW_WHY_MAX);
        assert_int_equal(out[0].code, GW_REASON_PREEMPTED);
        assert_string_equal(out[0].text, "by job 12; waits first of priority 5 for free GPUs");
        for (size_t i = 1; i < n; i++) {
                assert_true(out[i].code > out[i - 1].code || i == 1);
                assert_int_not_equal(out[i].code, GW_REASON_PREEMPTED);
                assert_int_not_equal(out[i].code, GW_REASON_NONE);
        }
        assert_int_equal(gw_why_list(GW_REASON_NONE, 0, &f, out, GW_WHY_MAX), 0);
        assert_int_equal(gw_why_list(GW_REASON_RESERVATION, 0, &f, out, 1), 1);
        assert_string_equal(out[0].text, "its booking 4 does not let it start now");
}

static void refuses_malformed_input(void **state) {
        (void) state;
        struct gw_sched_job job = { .id = 1, .ngpus = 1, .time_limit = MIN };
        enum gw_job_reason bad = _GW_REASON_MAX;
        struct gw_sched_input in = { NULL, 0, &job, 1, NULL, 0 };
        struct gw_sched_plan plan = { .reasons = &bad };
        uint32_t bits;
        assert_int_equal(gw_sched_why(&in, &plan, &bits), -EINVAL);
        assert_int_equal(gw_sched_why(&in, &plan, NULL), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(quota_and_dependency_are_both_told),
                cmocka_unit_test(held_is_told_with_the_gpus_it_lacks),
                cmocka_unit_test(a_drained_gpu_it_needs_is_named),
                cmocka_unit_test(drained_words_name_three_and_count_the_rest),
                cmocka_unit_test(list_is_bounded_and_main_first),
                cmocka_unit_test(refuses_malformed_input),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
