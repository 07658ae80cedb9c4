#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "core/slurm.h"

/* Real texts: the v1 ones read on the test cluster (Debian 12, Slurm 22.05, two slurmd on
 * one host: slurm_NODE), the v2 ones as published from Slurm 23-24 nodes. */
#define V1_BATCH                                                                                   \
        "9:name=systemd:/\n8:pids:/\n7:blkio:/\n6:freezer:/slurm_gw3f1n1/uid_0/job_1/step_batch\n" \
        "5:devices:/\n4:memory:/process_api/beb929b39da68cf04e796ed565aaaf9e\n3:cpuset:/\n"        \
        "2:cpuacct:/\n1:cpu:/\n0::/\n"

struct row {
        const char *text;
        int ret;
        uint32_t job;
        enum gw_slurm_step_kind kind;
        uint32_t step;
        bool v2;
        int uid; /* -1: none */
        const char *node;
};

static const struct row rows[] = {
        { V1_BATCH, 0, 1, GW_SLURM_STEP_BATCH, 0, false, 0, "gw3f1n1" },
        { "6:freezer:/slurm_gpu1/uid_0/job_1/step_0\n", 0, 1, GW_SLURM_STEP_NUMBERED, 0, false, 0, "gpu1" },
        { "6:freezer:/slurm/uid_1000/job_42/step_3\n", 0, 42, GW_SLURM_STEP_NUMBERED, 3, false, 1000, "" },
        { "10:devices:/slurm/uid_2101171/job_280678/step_interactive/task_0\n", 0, 280678, GW_SLURM_STEP_INTERACTIVE, 0,
          false, 2101171, "" },
        { "4:memory:/slurm/uid_7/job_9/step_extern/task_0", 0, 9, GW_SLURM_STEP_EXTERN, 0, false, 7, "" },
        /* The job's cgroup only, no step. */
        { "6:freezer:/slurm/uid_7/job_9\n", 0, 9, GW_SLURM_STEP_NONE, 0, false, 7, "" },
        /* One hierarchy shows the job, another the step: the step wins. */
        { "4:memory:/slurm/uid_7/job_9\n6:freezer:/slurm/uid_7/job_9/step_batch\n", 0, 9, GW_SLURM_STEP_BATCH, 0, false,
          7, "" },
        /* Below another cgroup (a container's, a systemd unit's). */
        { "6:freezer:/docker/abc/slurm/uid_7/job_9/step_0\n", 0, 9, GW_SLURM_STEP_NUMBERED, 0, false, 7, "" },
        { "0::/system.slice/slurmstepd.scope/job_1392969/step_0/user/task_0\n", 0, 1392969, GW_SLURM_STEP_NUMBERED, 0,
          true, -1, "" },
        { "0::/system.slice/slurmstepd.scope/job_42/step_extern/user\n", 0, 42, GW_SLURM_STEP_EXTERN, 0, true, -1, "" },
        { "0::/system.slice/gpu1_slurmstepd.scope/job_101/step_batch/user/task_special\n", 0, 101, GW_SLURM_STEP_BATCH,
          0, true, -1, "gpu1" },
        { "0::/system.slice/slurmstepd.scope/job_5\n", 0, 5, GW_SLURM_STEP_NONE, 0, true, -1, "" },
        { "0::/system.slice/slurmstepd.scope/job_5/step_weird/user\n", 0, 5, GW_SLURM_STEP_OTHER, 0, true, -1, "" },
        { "0::/system.slice/slurmstepd.scope/job_4294967295/step_4294967295\n", 0, 4294967295u, GW_SLURM_STEP_NUMBERED,
          4294967295u, true, -1, "" },
        /* Not a job's process. */
        { .text = "0::/system.slice/slurmstepd.scope/system\n", .ret = -ENOENT },
        { .text = "0::/user.slice/user-1000.slice/session-3.scope\n", .ret = -ENOENT },
        { .text = "9:name=systemd:/\n6:freezer:/\n0::/\n", .ret = -ENOENT },
        { .text = "", .ret = -ENOENT },
        { .text = "random garbage\n", .ret = -ENOENT },
        /* v1 names on the v2 line, v2 names on a v1 line: not Slurm's layout. */
        { .text = "0::/slurm/uid_1/job_2/step_0\n", .ret = -ENOENT },
        { .text = "6:freezer:/system.slice/slurmstepd.scope/job_2\n", .ret = -ENOENT },
        { .text = "6:freezer:/slurm/job_2/step_0\n", .ret = -ENOENT }, /* v1 without uid_ */
        { .text = "6:freezer:/slurmd/uid_1/job_2\n", .ret = -ENOENT },
        /* Slurm's paths that do not parse. */
        { .text = "6:freezer:/slurm/uid_1/job_x/step_0\n", .ret = -EINVAL },
        { .text = "6:freezer:/slurm/uid_1/job_0/step_0\n", .ret = -EINVAL },
        { .text = "6:freezer:/slurm/uid_1/job_4294967296\n", .ret = -EINVAL },
        { .text = "6:freezer:/slurm/uid_-1/job_2\n", .ret = -EINVAL },
        { .text = "0::/system.slice/slurmstepd.scope/job_+5/step_0\n", .ret = -EINVAL },
        { .text = "0::/system.slice/slurmstepd.scope/job_\n", .ret = -EINVAL },
        { .text = "6:freezer:/slurm/uid_1/job_2/step_0\n4:memory:/slurm/uid_1/job_3/step_0\n", .ret = -EINVAL },
        { .text = "0::/system.slice/"
                  "n123456789012345678901234567890123456789012345678901234567890123456789_slurmstepd.scope/job_1\n",
          .ret = -EINVAL },
};

static void table(void **state) {
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                const struct row *r = &rows[i];
                struct gw_slurm_proc p;
                memset(&p, 0x5a, sizeof p);
                int ret = gw_slurm_proc_from_cgroup(r->text, strlen(r->text), &p);
                if (ret != r->ret)
                        fail_msg("row %zu (%s): %d, expected %d", i, r->text, ret, r->ret);
                if (ret < 0) {
                        assert_int_equal(p.job_id, 0x5a5a5a5a); /* untouched */
                        continue;
                }
                assert_int_equal(p.job_id, r->job);
                assert_string_equal(gw_slurm_step_kind_name(p.step_kind), gw_slurm_step_kind_name(r->kind));
                assert_int_equal(p.step, r->step);
                assert_int_equal(p.v2, r->v2);
                assert_int_equal(p.has_uid, r->uid >= 0);
                if (r->uid >= 0)
                        assert_int_equal(p.uid, (uint32_t) r->uid);
                assert_string_equal(p.node, r->node);
        }
}

/* The text is read by length: what lies past it is not looked at. */
static void reads_by_length(void **state) {
        const char text[] = "6:freezer:/slurm/uid_1/job_12/step_0";
        struct gw_slurm_proc p;
        /* Cut before "2": job 1. */
        assert_int_equal(gw_slurm_proc_from_cgroup(text, strlen("6:freezer:/slurm/uid_1/job_1"), &p), 0);
        assert_int_equal(p.job_id, 1);
        assert_int_equal(p.step_kind, GW_SLURM_STEP_NONE);
        char unterminated[sizeof text - 1];
        memcpy(unterminated, text, sizeof unterminated);
        assert_int_equal(gw_slurm_proc_from_cgroup(unterminated, sizeof unterminated, &p), 0);
        assert_int_equal(p.job_id, 12);
        assert_int_equal(gw_slurm_proc_from_cgroup(NULL, 0, &p), -EINVAL);
        assert_null(gw_slurm_step_kind_name(_GW_SLURM_STEP_KIND_MAX));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(table),
                cmocka_unit_test(reads_by_length),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
