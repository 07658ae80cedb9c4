/* The simulator's CSV trace and the lab generator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

#define SEC GW_SIM_SEC

static int read_text(const char *text, struct gw_sim_workload *w, char *msg, size_t n) {
        FILE *f = fmemopen((void *) text, strlen(text), "r");
        assert_non_null(f);
        int k = gw_sim_trace_read(f, w, msg, n);
        fclose(f);
        return k;
}

static void reads_minimal_columns(void **state) {
        struct gw_sim_workload w;
        char msg[256] = "";
        const char *t = "# a comment\n"
                        "gpus,runtime_s,submit_s,fail_at_s,fail_class\r\n"
                        "2,3600,120.5,,\n"
                        "1,inf,60,30,\n"
                        "\n"
                        "1,600,60,100,gpu_fault\n";

        assert_int_equal(read_text(t, &w, msg, sizeof(msg)), 0);
        assert_int_equal(w.n, 3);
        /* Sorted by submit, ties in file order. */
        assert_int_equal(w.jobs[0].submit, 60 * SEC);
        assert_int_equal(w.jobs[0].runtime, GW_USEC_INFINITY);
        assert_int_equal(w.jobs[0].fail_class, GW_FAILURE_USER_ERROR);
        assert_true(w.jobs[0].fail_repeat);
        assert_int_equal(w.jobs[1].fail_class, GW_FAILURE_GPU_FAULT);
        assert_false(w.jobs[1].fail_repeat);
        assert_int_equal(w.jobs[2].submit, 120 * SEC + 500000);
        assert_int_equal(w.jobs[2].ngpus, 2);
        assert_int_equal(w.jobs[2].time_limit, 24 * GW_SIM_HOUR);
        assert_int_equal(w.jobs[2].fail_at, GW_SIM_NONE);
        assert_int_equal(w.jobs[2].stall_at, GW_SIM_NONE);
        assert_int_equal(w.jobs[2].ckpt_interval, 0);
        gw_sim_workload_free(&w);
}

static void refuses_bad_input(void **state) {
        struct gw_sim_workload w;
        char msg[256];
        static const struct {
                const char *text, *msg;
        } bad[] = {
                { "gpus,runtime_s\n1,60\n", "header: submit_s, gpus and runtime_s are required" },
                { "submit_s,gpus,runtime_s,color\n", "header: unknown column 'color'" },
                { "submit_s,gpus,gpus,runtime_s\n", "header: column 'gpus' twice" },
                { "submit_s,gpus,runtime_s\n0,0,60\n", "line 2: gpus: '0' is not valid" },
                { "submit_s,gpus,runtime_s\n0,65,60\n", "line 2: gpus: '65' is not valid" },
                { "submit_s,gpus,runtime_s\n0,1\n", "line 2: 2 fields, the header has 3" },
                { "submit_s,gpus,runtime_s\n-5,1,60\n", "line 2: submit_s: '-5' is not valid" },
                { "submit_s,gpus,runtime_s,fail_class\n0,1,60,ok\n", "line 2: fail_class: 'ok' is not valid" },
                { "submit_s,gpus,runtime_s,profile\n0,1,60,nope\n", "line 2: profile: 'nope' is not valid" },
                { "submit_s,gpus,runtime_s,zero_frac\n0,1,60,1.5\n", "line 2: zero_frac: '1.5' is not valid" },
                { "submit_s,gpus,runtime_s,val_len_s\n0,1,60,30\n", "line 2: val_len_s without val_at_s" },
                { "", "no header line" },
        };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                msg[0] = '\0';
                assert_int_equal(read_text(bad[i].text, &w, msg, sizeof(msg)), -EINVAL);
                assert_string_equal(msg, bad[i].msg);
        }
}

static void same_jobs(const struct gw_sim_job *a, const struct gw_sim_job *b) {
        assert_int_equal(a->submit, b->submit);
        assert_int_equal(a->user, b->user);
        assert_int_equal(a->ngpus, b->ngpus);
        assert_int_equal(a->runtime, b->runtime);
        assert_int_equal(a->time_limit, b->time_limit);
        assert_int_equal(a->ckpt_interval, b->ckpt_interval);
        assert_int_equal(a->stall_at, b->stall_at);
        assert_int_equal(a->cancel_at, b->cancel_at);
        assert_int_equal(a->fail_at, b->fail_at);
        assert_int_equal(a->fail_class, b->fail_class);
        assert_int_equal(a->fail_repeat, b->fail_repeat);
        assert_int_equal(a->val_len, b->val_len);
        if (a->val_len)
                assert_int_equal(a->val_at, b->val_at);
        assert_true(a->zero_frac == b->zero_frac);
        assert_int_equal(a->interactive, b->interactive);
        assert_string_equal(a->profile, b->profile);
}

/* A generated workload written as a trace and read back runs to the same table. */
static void round_trip(void **state) {
        struct gw_sim_gen g;
        struct gw_sim_workload w, back;
        char *buf = NULL, msg[256];
        size_t len = 0;

        gw_sim_gen_default(&g);
        g.n_gpus = 8;
        g.span = 2 * GW_SIM_DAY;
        assert_int_equal(gw_sim_generate_lab(&g, &w), 0);
        FILE *f = open_memstream(&buf, &len);
        assert_int_equal(gw_sim_trace_write(f, &w), 0);
        fclose(f);
        assert_int_equal(read_text(buf, &back, msg, sizeof(msg)), 0);
        assert_int_equal(back.n, w.n);
        for (size_t i = 0; i < w.n; i++)
                same_jobs(&w.jobs[i], &back.jobs[i]);

        struct gw_sim_config c;
        struct gw_sim_result a, b;
        assert_int_equal(gw_sim_config_named("all", &c, msg, sizeof(msg)), 0);
        c.n_gpus = 8;
        c.horizon = g.span;
        assert_int_equal(gw_sim_run(&w, &c, &a), 0);
        assert_int_equal(gw_sim_run(&back, &c, &b), 0);
        assert_int_equal(a.completed, b.completed);
        assert_true(a.busy_gpu_h == b.busy_gpu_h);
        assert_true(a.wait_p99_s == b.wait_p99_s);
        gw_sim_result_free(&a);
        gw_sim_result_free(&b);
        free(buf);
        gw_sim_workload_free(&w);
        gw_sim_workload_free(&back);
}

/* The generator's shapes stay near the published ones it was built from. */
static void lab_shapes(void **state) {
        struct gw_sim_gen g;
        struct gw_sim_workload w, w2;
        struct gw_sim_shape s;

        gw_sim_gen_default(&g);
        g.n_gpus = 64;
        g.span = 14 * GW_SIM_DAY;
        assert_int_equal(gw_sim_generate_lab(&g, &w), 0);
        gw_sim_workload_shape(&w, &s);
        assert_true(s.n > 3000);
        assert_true(s.runtime_p50_s > 15 * 60 && s.runtime_p50_s < 30 * 60);
        assert_true(s.runtime_p90_s > 3 * 3600 && s.runtime_p90_s < 5 * 3600);
        assert_true(s.one_gpu_frac > 0.7 && s.one_gpu_frac < 0.9);
        assert_true(s.multi_gpu_time_frac > 0.5);
        assert_true(s.killed_failed_frac > 0.25 && s.killed_failed_frac < 0.4);
        for (size_t i = 1; i < w.n; i++)
                assert_true(w.jobs[i].submit >= w.jobs[i - 1].submit);

        /* Deterministic in the seed; another seed, another workload. */
        assert_int_equal(gw_sim_generate_lab(&g, &w2), 0);
        assert_int_equal(w2.n, w.n);
        for (size_t i = 0; i < w.n; i++)
                same_jobs(&w.jobs[i], &w2.jobs[i]);
        gw_sim_workload_free(&w2);
        g.seed = 2;
        assert_int_equal(gw_sim_generate_lab(&g, &w2), 0);
        assert_true(w2.n != w.n || w2.jobs[0].submit != w.jobs[0].submit);
        gw_sim_workload_free(&w2);

        /* A job count instead of a period. */
        g.n_jobs = 500;
        assert_int_equal(gw_sim_generate_lab(&g, &w2), 0);
        assert_int_equal(w2.n, 500);
        gw_sim_workload_free(&w2);
        gw_sim_workload_free(&w);

        g.load = 0;
        assert_int_equal(gw_sim_generate_lab(&g, &w), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(reads_minimal_columns),
                cmocka_unit_test(refuses_bad_input),
                cmocka_unit_test(round_trip),
                cmocka_unit_test(lab_shapes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
