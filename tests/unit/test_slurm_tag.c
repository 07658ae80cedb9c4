#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "core/slurm.h"

static int parse(const char *line, struct gw_slurm_tagged *r) { return gw_slurm_tag_parse(line, strlen(line), r); }

static void test_format(void **state) {
        (void) state;
        char buf[GW_SLURM_TAG_SIZE];
        assert_int_equal(gw_slurm_tag_format(17, 2, buf, sizeof buf), 0);
        assert_string_equal(buf, "gpuward:17:2");
        assert_int_equal(gw_slurm_tag_format(INT64_MAX, INT32_MAX, buf, sizeof buf), 0);
        assert_int_equal(gw_slurm_tag_format(0, 1, buf, sizeof buf), -EINVAL);
        assert_int_equal(gw_slurm_tag_format(1, 0, buf, sizeof buf), -EINVAL);
        assert_int_equal(gw_slurm_tag_format(12345, 1, buf, 8), -EINVAL);
}

/* What squeue -h --format=%i|%U|%k prints: the tag read back; others' comments are not ours. */
static void test_parse(void **state) {
        (void) state;
        struct gw_slurm_tagged t;
        assert_int_equal(parse("42|1000|gpuward:17:2", &t), 0);
        assert_int_equal(t.slurm_id, 42);
        assert_int_equal(t.uid, 1000);
        assert_int_equal(t.job, 17);
        assert_int_equal(t.attempt, 2);
        assert_int_equal(parse("43|0|gpuward:1:1\n", &t), 0);
        assert_int_equal(t.job, 1);
        assert_int_equal(parse("44|1000|(null)", &t), -ENOENT);
        assert_int_equal(parse("44|1000|", &t), -ENOENT);
        assert_int_equal(parse("44|1000|gpuward:x:1", &t), -ENOENT);
        assert_int_equal(parse("44|1000|gpuward:1:1|x", &t), -ENOENT);
        assert_int_equal(parse("44|1000|gpuward:0:1", &t), -ENOENT);
        assert_int_equal(parse("44|1000|gpuward:1:", &t), -ENOENT);
        assert_int_equal(parse("12_3|1000|gpuward:1:1", &t), -ENOENT);
        assert_int_equal(parse("44|gpuward:1:1", &t), -EINVAL);
        assert_int_equal(parse("0|1000|gpuward:1:1", &t), -EINVAL);
        assert_int_equal(parse("4294967296|1000|gpuward:1:1", &t), -EINVAL);
        assert_int_equal(parse("JOBID|UID|COMMENT", &t), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_format),
                cmocka_unit_test(test_parse),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
