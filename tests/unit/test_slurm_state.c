#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "core/slurm.h"

struct state_case {
        const char *text;
        enum gw_job_state state;
        enum gw_failure_class cls;
};

/* Every state of squeue %T / sacct State, its short form (squeue %t), and how sacct
 * prints some (by whom, cut with '+'). */
static const struct state_case states[] = {
        { "PENDING", GW_JOB_PENDING, GW_FAILURE_OK },
        { "PD", GW_JOB_PENDING, GW_FAILURE_OK },
        { "RUNNING", GW_JOB_RUNNING, GW_FAILURE_OK },
        { "R", GW_JOB_RUNNING, GW_FAILURE_OK },
        { "running", GW_JOB_RUNNING, GW_FAILURE_OK },
        { "CONFIGURING", GW_JOB_RUNNING, GW_FAILURE_OK },
        { "COMPLETING", GW_JOB_RUNNING, GW_FAILURE_OK },
        { "CG", GW_JOB_RUNNING, GW_FAILURE_OK },
        { "SUSPENDED", GW_JOB_RUNNING, GW_FAILURE_OK },
        { "STOPPED", GW_JOB_RUNNING, GW_FAILURE_OK },
        { "SIGNALING", GW_JOB_RUNNING, GW_FAILURE_OK },
        { "STAGE_OUT", GW_JOB_RUNNING, GW_FAILURE_OK },
        { "RESIZING", GW_JOB_RUNNING, GW_FAILURE_OK },
        { "REQUEUED", GW_JOB_PENDING, GW_FAILURE_OK },
        { "REQUEUE_FED", GW_JOB_PENDING, GW_FAILURE_OK },
        { "REQUEUE_HOLD", GW_JOB_HELD, GW_FAILURE_OK },
        { "RH", GW_JOB_HELD, GW_FAILURE_OK },
        { "SPECIAL_EXIT", GW_JOB_HELD, GW_FAILURE_OK },
        { "RESV_DEL_HOLD", GW_JOB_HELD, GW_FAILURE_OK },
        { "COMPLETED", GW_JOB_COMPLETED, GW_FAILURE_OK },
        { "CD", GW_JOB_COMPLETED, GW_FAILURE_OK },
        { "FAILED", GW_JOB_FAILED, GW_FAILURE_USER_ERROR },
        { "F", GW_JOB_FAILED, GW_FAILURE_USER_ERROR },
        { "CANCELLED", GW_JOB_CANCELLED, GW_FAILURE_CANCELLED },
        { "CANCELLED by 1000", GW_JOB_CANCELLED, GW_FAILURE_CANCELLED },
        { "CANCELLED+", GW_JOB_CANCELLED, GW_FAILURE_CANCELLED },
        { "CA", GW_JOB_CANCELLED, GW_FAILURE_CANCELLED },
        { "REVOKED", GW_JOB_CANCELLED, GW_FAILURE_CANCELLED },
        { "TIMEOUT", GW_JOB_TIMEOUT, GW_FAILURE_TIMEOUT },
        { "TO", GW_JOB_TIMEOUT, GW_FAILURE_TIMEOUT },
        { "DEADLINE", GW_JOB_TIMEOUT, GW_FAILURE_TIMEOUT },
        { "NODE_FAIL", GW_JOB_FAILED, GW_FAILURE_LOST },
        { "NF", GW_JOB_FAILED, GW_FAILURE_LOST },
        { "BOOT_FAIL", GW_JOB_FAILED, GW_FAILURE_LOST },
        { "OUT_OF_MEMORY", GW_JOB_FAILED, GW_FAILURE_HOST_OOM },
        { "OOM", GW_JOB_FAILED, GW_FAILURE_HOST_OOM },
        { "PREEMPTED", GW_JOB_FAILED, GW_FAILURE_KILLED },
        { " PENDING\n", GW_JOB_PENDING, GW_FAILURE_OK },
};

static void job_states(void **state) {
        for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
                struct gw_slurm_state s;
                if (gw_slurm_state_parse(states[i].text, &s) != 0)
                        fail_msg("state \"%s\" not known", states[i].text);
                assert_string_equal(gw_job_state_name(s.state), gw_job_state_name(states[i].state));
                assert_string_equal(gw_failure_class_name(s.cls), gw_failure_class_name(states[i].cls));
                assert_non_null(s.what);
                assert_true(strlen(s.what) > 0);
                /* A final Slurm state is a final gpuward state and the other way round. */
                assert_int_equal(gw_job_state_is_final(s.state), s.cls != GW_FAILURE_OK || s.state == GW_JOB_COMPLETED);
        }
}

static void unknown_states(void **state) {
        struct gw_slurm_state s = { .what = "untouched" };
        const char *bad[] = { "", " ", "PEND", "RUNNINGX", "+", "BOGUS", "cd2" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(gw_slurm_state_parse(bad[i], &s), -EINVAL);
        assert_int_equal(gw_slurm_state_parse(NULL, &s), -EINVAL);
        assert_string_equal(s.what, "untouched");
}

struct reason_case {
        const char *text;
        int ret;
        enum gw_job_reason reason;
        bool blocked;
        const char *what_has;
};

static const struct reason_case reasons[] = {
        /* The ones the test cluster showed (squeue %r). */
        { "Resources", 0, GW_REASON_RESOURCES, false, "GPUs" },
        { "Priority", 0, GW_REASON_PRIORITY, false, "higher priority" },
        { "Dependency", 0, GW_REASON_DEPENDENCY, false, "depends" },
        { "BeginTime", 0, GW_REASON_BACKOFF, false, "start time" },
        { "JobHeldUser", 0, GW_REASON_HELD, true, "owner" },
        { "None", 0, GW_REASON_NONE, false, "scheduling pass" },
        /* Others of Slurm 22.05's list. */
        { "JobHeldAdmin", 0, GW_REASON_HELD, true, "administrator" },
        { "DependencyNeverSatisfied", 0, GW_REASON_DEPENDENCY, true, "never start" },
        { "ReqNodeNotAvail, UnavailableNodes:gpu2", 0, GW_REASON_RESOURCES, false, "drained" },
        { "(ReqNodeNotAvail, May be reserved for other job)", 0, GW_REASON_RESOURCES, false, "drained" },
        { "Reservation", 0, GW_REASON_RESERVATION, false, "reservation" },
        { "ReservationDeleted", 0, GW_REASON_RESERVATION, true, "deleted" },
        { "launch failed requeued held", 0, GW_REASON_HELD, true, "could not launch" },
        { "JobHoldMaxRequeue", 0, GW_REASON_HELD, true, "too many" },
        { "PartitionDown", 0, GW_REASON_RESOURCES, true, "partition is down" },
        { "PartitionTimeLimit", 0, GW_REASON_RESOURCES, true, "time limit" },
        { "BadConstraints", 0, GW_REASON_RESOURCES, true, "no node" },
        { "AssocGrpGRES", 0, GW_REASON_QUOTA, false, "account" },
        { "AssocMaxGRESPerJob", 0, GW_REASON_QUOTA, false, "account" },
        { "AssociationJobLimit", 0, GW_REASON_QUOTA, false, "account" },
        { "QOSMaxGRESPerUser", 0, GW_REASON_QUOTA, false, "QOS" },
        { "QOSNotAllowed", 0, GW_REASON_QUOTA, true, "QOS" },
        { "InvalidAccount", 0, GW_REASON_QUOTA, true, "account" },
        { "MaxGRESPerAccount", 0, GW_REASON_QUOTA, false, "per-account" },
        { "JobArrayTaskLimit", 0, GW_REASON_QUOTA, false, "array" },
        { "Cleaning", 0, GW_REASON_RESOURCES, false, "cleaning" },
        { "BurstBufferStageIn", 0, GW_REASON_RESOURCES, false, "burst buffer" },
        /* Unknown: waiting for resources, flagged for the caller to log. */
        { "SomethingNew", 1, GW_REASON_RESOURCES, false, "see squeue" },
        { "resources", 1, GW_REASON_RESOURCES, false, "see squeue" },
};

static void pending_reasons(void **state) {
        for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
                const struct reason_case *c = &reasons[i];
                struct gw_slurm_reason r;
                int ret = gw_slurm_reason_parse(c->text, &r);
                if (ret != c->ret)
                        fail_msg("reason \"%s\": %d, expected %d", c->text, ret, c->ret);
                assert_string_equal(gw_job_reason_name(r.reason), gw_job_reason_name(c->reason));
                if (r.blocked != c->blocked)
                        fail_msg("reason \"%s\": blocked %d", c->text, r.blocked);
                if (!strstr(r.what, c->what_has))
                        fail_msg("reason \"%s\": \"%s\" does not say \"%s\"", c->text, r.what, c->what_has);
        }
        struct gw_slurm_reason r;
        assert_int_equal(gw_slurm_reason_parse("", &r), -EINVAL);
        assert_int_equal(gw_slurm_reason_parse("()", &r), -EINVAL);
        assert_int_equal(gw_slurm_reason_parse(NULL, &r), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(job_states),
                cmocka_unit_test(unknown_states),
                cmocka_unit_test(pending_reasons),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
