#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "core/migplace.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))
#define ONE(g, job) \
        { .gpu = (g), .profile = "1g.10gb", .slices = 1, .max_slices = 7, .job_id = (job), .usable = true }
#define TWO(g, job) \
        { .gpu = (g), .profile = "2g.20gb", .slices = 2, .max_slices = 7, .job_id = (job), .usable = true }

static struct gw_mig_ask ask(const char *profile, int count) {
        struct gw_mig_ask a = { .count = count };
        strncpy(a.profile, profile, sizeof(a.profile) - 1);
        return a;
}

static void parses_profile_and_count(void **state) {
        (void) state;
        struct gw_mig_ask a;
        char why[128];
        assert_int_equal(gw_mig_ask_parse("1g.10gb", &a, why, sizeof why), 0);
        assert_string_equal(a.profile, "1g.10gb");
        assert_int_equal(a.count, 1);
        assert_int_equal(gw_mig_ask_parse("3g.40gb:2", &a, why, sizeof why), 0);
        assert_string_equal(a.profile, "3g.40gb");
        assert_int_equal(a.count, 2);
        assert_int_equal(gw_mig_ask_parse("1g.10gb+me:64", &a, why, sizeof why), 0);
        assert_int_equal(a.count, 64);
        assert_int_equal(gw_mig_ask_parse("1c.3g.40gb", &a, why, sizeof why), 0);

        static const char *const bad[] = {
                "",           ":2",        "2",       "gpu",         "1g.10gb:", "1g.10gb:0",
                "1g.10gb:65", "1g.10gb:x", "1G.10GB", "1g.10gb:2:3", "1g 10gb",  "1g.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        };
        for (size_t i = 0; i < N_ELEMS(bad); i++) {
                a = ask("kept", 9);
                why[0] = '\0';
                assert_int_equal(gw_mig_ask_parse(bad[i], &a, why, sizeof why), -EINVAL);
                assert_true(why[0] != '\0');
                assert_string_equal(a.profile, "kept"); /* written only on success */
        }
}

/* GPU 0 has one free 1g slice, GPU 1 three: a one-slice job goes to GPU 0 (best fit),
 * leaving GPU 1's three together for a job that asks three. */
static void one_gpu_best_fit_then_lowest_index(void **state) {
        (void) state;
        struct gw_mig_slot s[] = { ONE(0, 5), ONE(0, 0), ONE(1, 0), ONE(1, 0),
                                   ONE(1, 0), ONE(2, 0), ONE(2, 6), TWO(2, 0) };
        size_t pick[4];
        struct gw_mig_ask a = ask("1g.10gb", 1);
        assert_int_equal(gw_mig_place(s, N_ELEMS(s), &a, pick), 0);
        assert_int_equal(pick[0], 1);
        a = ask("1g.10gb", 3);
        assert_int_equal(gw_mig_place(s, N_ELEMS(s), &a, pick), 0);
        assert_int_equal(pick[0], 2);
        assert_int_equal(pick[1], 3);
        assert_int_equal(pick[2], 4);
        /* A tie (GPUs 0 and 2 have one free each): the lower index. */
        s[1].job_id = 7;
        s[5].job_id = 0;
        s[0].job_id = 0;
        a = ask("1g.10gb", 1);
        assert_int_equal(gw_mig_place(s, N_ELEMS(s), &a, pick), 0);
        assert_int_equal(pick[0], 0);
        a = ask("2g.20gb", 1);
        assert_int_equal(gw_mig_place(s, N_ELEMS(s), &a, pick), 0);
        assert_int_equal(pick[0], 7);
}

/* Two slices free, one on each GPU, and a job asking two: it waits for one GPU to have both
 * rather than straddle two GPUs. */
static void never_straddles_when_one_gpu_could_hold_it(void **state) {
        (void) state;
        struct gw_mig_slot s[] = { ONE(0, 1), ONE(0, 0), ONE(1, 2), ONE(1, 0) };
        size_t pick[2] = { 99, 99 };
        struct gw_mig_ask a = ask("1g.10gb", 2);
        assert_int_equal(gw_mig_place(s, N_ELEMS(s), &a, pick), -EAGAIN);
        assert_int_equal(pick[0], 99);
        char words[96];
        assert_string_equal(gw_mig_wait_words(-EAGAIN, &a, words, sizeof words), "no GPU with 2 free 1g.10gb slices");
        a = ask("1g.10gb", 1);
        s[1].job_id = s[3].job_id = 9;
        assert_int_equal(gw_mig_place(s, N_ELEMS(s), &a, pick), -EAGAIN);
        assert_string_equal(gw_mig_wait_words(-EAGAIN, &a, words, sizeof words), "no free 1g.10gb slice");
}

/* More than any GPU holds: spread, the GPU with the most free first. */
static void spreads_only_beyond_one_gpus_worth(void **state) {
        (void) state;
        struct gw_mig_slot s[] = { ONE(0, 0), ONE(0, 3), ONE(0, 0), ONE(1, 0), ONE(1, 0), ONE(1, 0) };
        size_t pick[4];
        struct gw_mig_ask a = ask("1g.10gb", 4);
        assert_int_equal(gw_mig_place(s, N_ELEMS(s), &a, pick), 0);
        assert_int_equal(pick[0], 3);
        assert_int_equal(pick[1], 4);
        assert_int_equal(pick[2], 5);
        assert_int_equal(pick[3], 0);
        char words[96];
        a = ask("1g.10gb", 6);
        assert_int_equal(gw_mig_place(s, N_ELEMS(s), &a, pick), -EBUSY);
        assert_string_equal(gw_mig_wait_words(-EBUSY, &a, words, sizeof words), "fewer than 6 1g.10gb slices free");
}

/* A drained GPU's slices and unknown profiles are never given; no such profile at all. */
static void unusable_and_unknown_are_not_given(void **state) {
        (void) state;
        struct gw_mig_slot s[] = { ONE(0, 0), ONE(1, 0), { .gpu = 1, .profile = NULL, .job_id = 0, .usable = true } };
        s[0].usable = false;
        size_t pick[2];
        struct gw_mig_ask a = ask("1g.10gb", 1);
        assert_int_equal(gw_mig_place(s, N_ELEMS(s), &a, pick), 0);
        assert_int_equal(pick[0], 1);
        a = ask("3g.40gb", 1);
        assert_int_equal(gw_mig_place(s, N_ELEMS(s), &a, pick), -ENOENT);
        char words[96];
        assert_string_equal(gw_mig_wait_words(-ENOENT, &a, words, sizeof words),
                            "no free 3g.40gb slice: no GPU in service has that profile");
        assert_int_equal(gw_mig_place(NULL, 0, &a, pick), -ENOENT);
}

static void refuses_malformed_input(void **state) {
        (void) state;
        struct gw_mig_slot s[] = { ONE(64, 0) };
        size_t pick[2];
        struct gw_mig_ask a = ask("1g.10gb", 1);
        assert_int_equal(gw_mig_place(s, N_ELEMS(s), &a, pick), -EINVAL);
        s[0].gpu = 0;
        a.count = 0;
        assert_int_equal(gw_mig_place(s, N_ELEMS(s), &a, pick), -EINVAL);
        a = ask("whole", 1);
        assert_int_equal(gw_mig_place(s, N_ELEMS(s), &a, pick), -EINVAL);
        a = ask("1g.10gb", 1);
        assert_int_equal(gw_mig_place(s, N_ELEMS(s), &a, NULL), -EINVAL);
}

static void share_is_slices_of_the_gpu(void **state) {
        (void) state;
        struct gw_mig_slot s[] = { ONE(0, 0), TWO(0, 0), { .gpu = 1, .profile = "1g.10gb", .usable = true } };
        size_t pick[] = { 0, 1 };
        assert_float_equal(gw_mig_share(s, pick, 2), 3.0 / 7, 1e-9);
        size_t unknown[] = { 2 };
        assert_float_equal(gw_mig_share(s, unknown, 1), 1.0, 1e-9); /* unknown: a whole GPU, never 0 */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(parses_profile_and_count),
                cmocka_unit_test(one_gpu_best_fit_then_lowest_index),
                cmocka_unit_test(never_straddles_when_one_gpu_could_hold_it),
                cmocka_unit_test(spreads_only_beyond_one_gpus_worth),
                cmocka_unit_test(unusable_and_unknown_are_not_given),
                cmocka_unit_test(refuses_malformed_input),
                cmocka_unit_test(share_is_slices_of_the_gpu),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
