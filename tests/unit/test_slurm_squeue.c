#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "core/slurm.h"

static int parse(const char *line, struct gw_slurm_squeue_row *r) {
        return gw_slurm_squeue_parse(line, strlen(line), r);
}

/* Lines as Slurm 22.05's squeue printed them on the test cluster, and padded as the same
 * format prints them where a field has the default width. */
static void test_lines(void **state) {
        (void) state;
        struct gw_slurm_squeue_row r;
        assert_int_equal(parse("1|FAILED|768|gw75a600n1|NonZeroExitCode", &r), 0);
        assert_int_equal(r.job_id, 1);
        assert_string_equal(r.state, "FAILED");
        assert_string_equal(r.exit_status, "768");
        assert_string_equal(r.nodes, "gw75a600n1");
        assert_string_equal(r.reason, "NonZeroExitCode");
        assert_int_equal(parse("42                  |PENDING             |0                   |"
                               "                    |Resources",
                               &r),
                         0);
        assert_int_equal(r.job_id, 42);
        assert_string_equal(r.state, "PENDING");
        assert_string_equal(r.nodes, "");
        assert_string_equal(r.reason, "Resources");
        /* A reason with blanks is the last field, whole. */
        assert_int_equal(parse("7|PENDING|0||launch failed requeued held\r", &r), 0);
        assert_string_equal(r.reason, "launch failed requeued held");
        assert_int_equal(parse("4294967295|RUNNING|0|n[1-2]|None", &r), 0);
        assert_int_equal(r.job_id, UINT32_MAX);
        /* Not a line length: the text is cut at len. */
        assert_int_equal(gw_slurm_squeue_parse("3|COMPLETED|0|n1|NoneXYZ", 21, &r), 0);
        assert_string_equal(r.reason, "None");
}

static void test_refused(void **state) {
        (void) state;
        struct gw_slurm_squeue_row r = { .job_id = 99 };
        const char *bad[] = {
                "",
                "1|RUNNING|0|n1",
                "12_3|RUNNING|0|n1|None",
                "5+1|RUNNING|0|n1|None",
                "0|RUNNING|0|n1|None",
                "4294967296|RUNNING|0|n1|None",
                "x|RUNNING|0|n1|None",
                "|RUNNING|0|n1|None",
                "1||0|n1|None",
                "1|RUNNING|0|n1|None|extra",
                "1|RUNNING_FOR_A_VERY_LONG_TIME_INDEED|0|n1|None",
                "1|RUNNING|12345678901234567|n1|None",
                "No jobs in the system",
        };
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
                assert_int_equal(parse(bad[i], &r), -EINVAL);
                assert_int_equal(r.job_id, 99); /* untouched */
        }
        assert_int_equal(gw_slurm_squeue_parse(NULL, 0, &r), -EINVAL);
        assert_int_equal(gw_slurm_squeue_parse("1|\0\0ING|0|n1|None", 18, &r), -EINVAL); /* found by fuzz_slurm */
        /* Node lists and reasons are only told: cut, not refused. */
        char line[600];
        snprintf(line, sizeof line, "8|RUNNING|0|%0300d|None", 0);
        assert_int_equal(parse(line, &r), 0);
        assert_int_equal(strlen(r.nodes), sizeof r.nodes - 1);
}

static int end_of(const char *state, const char *status) {
        struct gw_slurm_state st;
        assert_int_equal(gw_slurm_state_parse(state, &st), 0);
        return gw_slurm_end_status(&st, status);
}

static void test_end_status(void **state) {
        (void) state;
        assert_int_equal(end_of("COMPLETED", "0"), 0);
        int s = end_of("FAILED", "768");
        assert_true(WIFEXITED(s));
        assert_int_equal(WEXITSTATUS(s), 3);
        s = end_of("FAILED", "9");
        assert_true(WIFSIGNALED(s));
        assert_int_equal(WTERMSIG(s), SIGKILL);
        /* FAILED whose status says nothing still did not exit 0. */
        assert_int_equal(WEXITSTATUS(end_of("FAILED", "0")), 1);
        assert_int_equal(WEXITSTATUS(end_of("FAILED", "")), 1);
        assert_int_equal(WEXITSTATUS(end_of("FAILED", "70000")), 1);
        assert_int_equal(WEXITSTATUS(end_of("FAILED", NULL)), 1);
        assert_int_equal(end_of("CANCELLED by 1000", "15"), SIGTERM);
        assert_int_equal(end_of("TIMEOUT", "0"), SIGKILL);
        assert_int_equal(end_of("OUT_OF_MEMORY", "0"), SIGKILL);
        assert_int_equal(end_of("PREEMPTED", "0"), SIGKILL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_lines),
                cmocka_unit_test(test_refused),
                cmocka_unit_test(test_end_status),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
