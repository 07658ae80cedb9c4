/* Fair share in the simulator (sim_fair.c): the +fair configurations, the per-user results,
 * and what fair share changes on a box two users share. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fairshare.h"
#include "sim/sim.h"

#define HOUR GW_SIM_HOUR
#define N_JOBS 200

static struct gw_sim_job job(int user, gw_usec_t submit) {
        return (struct gw_sim_job){ .submit = submit,
                                    .user = user,
                                    .ngpus = 1,
                                    .runtime = 2 * HOUR,
                                    .time_limit = 3 * HOUR,
                                    .stall_at = GW_SIM_NONE,
                                    .cancel_at = GW_SIM_NONE,
                                    .fail_at = GW_SIM_NONE,
                                    .val_at = GW_SIM_NONE,
                                    .fail_class = GW_FAILURE_OK };
}

/* 8 GPUs; user 0 submits 100 two-hour jobs at 0, user 1 as many at 10 h; measured at 30 h,
 * while both still have jobs waiting. */
static struct gw_sim_result run_box(const char *name) {
        static struct gw_sim_job jobs[N_JOBS];
        struct gw_sim_config c;
        struct gw_sim_result r;
        char msg[256];

        for (int i = 0; i < N_JOBS / 2; i++) {
                jobs[i] = job(0, 0);
                jobs[N_JOBS / 2 + i] = job(1, 10 * HOUR);
        }
        struct gw_sim_workload w = { .jobs = jobs, .n = N_JOBS };
        assert_int_equal(gw_sim_config_named(name, &c, msg, sizeof(msg)), 0);
        c.n_gpus = 8;
        c.seed = 1;
        c.horizon = 30 * HOUR;
        assert_int_equal(gw_sim_run(&w, &c, &r), 0);
        assert_int_equal(r.n_users, 2);
        assert_true(fabs(r.user_gpu_h[0] + r.user_gpu_h[1] - r.held_gpu_h) < 1e-6);
        return r;
}

static void fair_share_evens_out_two_users(void **state) {
        (void) state;
        struct gw_sim_result base = run_box("baseline"), fair = run_box("baseline+fair");

        /* First come, first served: user 0's 200 GPU-h fill the box for 25 h. */
        assert_true(fabs(base.user_gpu_h[0] - 200.0) < 1e-6);
        assert_true(base.user_gpu_h[1] < 0.25 * base.user_gpu_h[0]);
        /* Fair share: the box is as busy, and shared evenly once user 1 came. */
        assert_true(fabs(fair.held_gpu_h - base.held_gpu_h) < 1e-6);
        double total = fair.user_gpu_h[0] + fair.user_gpu_h[1];
        if (fabs(fair.user_gpu_h[0] - fair.user_gpu_h[1]) > 0.1 * total)
                fail_msg("fair share: user 0 held %.1f GPU-h, user 1 %.1f", fair.user_gpu_h[0], fair.user_gpu_h[1]);
        /* User 1 waits much less, user 0 more (jobs not started count with their wait so far). */
        assert_true(fair.user_wait_s[1] < 0.75 * base.user_wait_s[1]); /* 19.3 h to 12.6 h */
        assert_true(fair.user_wait_s[0] > base.user_wait_s[0]);
        gw_sim_result_free(&base);
        gw_sim_result_free(&fair);
}

static void fair_config_names(void **state) {
        (void) state;
        struct gw_sim_config c;
        char msg[256];

        assert_int_equal(gw_sim_config_named("all:hpo+fair", &c, msg, sizeof(msg)), 0);
        assert_true(c.fairshare && c.retry);
        assert_string_equal(c.policy.name, "hpo");
        assert_string_equal(c.name, "all:hpo+fair");
        assert_int_equal(c.fs_half_life, GW_FS_HALF_LIFE_DEFAULT);
        assert_int_equal(gw_sim_config_named("baseline", &c, msg, sizeof(msg)), 0);
        assert_false(c.fairshare);
        assert_int_equal(gw_sim_config_named("+fair", &c, msg, sizeof(msg)), -EINVAL);
        assert_int_equal(gw_sim_config_named("fifo+fair", &c, msg, sizeof(msg)), -EINVAL);
        assert_non_null(strstr(msg, "unknown configuration 'fifo'"));
}

/* The per-user table: one row per user, a column per configuration. */
static void users_table(void **state) {
        (void) state;
        struct gw_sim_result r[2] = { run_box("baseline"), run_box("baseline+fair") };
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        assert_non_null(f);
        gw_sim_print_users(f, r, 2);
        fclose(f);
        assert_non_null(strstr(text, "per user: GPU-hours held / mean wait (h)"));
        assert_non_null(strstr(text, "baseline+fair"));
        assert_non_null(strstr(text, "\n0     "));
        assert_non_null(strstr(text, "\n1     "));
        assert_non_null(strstr(text, "200.0 /"));
        free(text);
        gw_sim_result_free(&r[0]);
        gw_sim_result_free(&r[1]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(fair_share_evens_out_two_users),
                cmocka_unit_test(fair_config_names),
                cmocka_unit_test(users_table),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
