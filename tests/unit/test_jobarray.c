/* Job arrays (core/jobarray.c): Slurm's --array syntax, its limits and errors, and the
 * folded form `gpuward queue` shows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/jobarray.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* Parses spec and folds it back as job 17: a round trip through both functions. */
static void fold_of(const char *spec, char *out, size_t size) {
        struct gw_array a;
        char msg[GW_ARRAY_MSG_SIZE];
        int r = gw_array_parse(spec, "--array", &a, msg, sizeof(msg));
        if (r < 0)
                fail_msg("'%s': %s", spec, msg);
        assert_true(gw_array_fold(17, a.ids, a.n, a.max_running, out, size) > 0);
        gw_array_done(&a);
}

static void parse_slurm_forms(void **state) {
        (void) state;
        static const struct {
                const char *spec;
                size_t n;
                uint32_t first, last, max_running;
                const char *folded;
        } cases[] = {
                { "0-49%4", 50, 0, 49, 4, "17_[0-49%4]" },
                { "1,3,5-9", 7, 1, 9, 0, "17_[1,3,5-9]" },
                { "0-99:10%8", 10, 0, 90, 8, "17_[0,10,20,30,40,50,60,70,80,90%8]" },
                { "1-7:2", 4, 1, 7, 0, "17_[1,3,5,7]" },
                { "5", 1, 5, 5, 0, "17_5" },
                { "5%1", 1, 5, 5, 1, "17_[5%1]" },
                { "5-49", 45, 5, 49, 0, "17_[5-49]" },
                { "9,1-3,2", 4, 1, 9, 0, "17_[1-3,9]" }, /* repeats count once, sorted */
                { "0-9999", 10000, 0, 9999, 0, "17_[0-9999]" }, /* the limit exactly */
                { "999999", 1, 999999, 999999, 0, "17_999999" },
                { "0-999999:100", 10000, 0, 999900, 0, NULL },
                { "0-9999,0-9999", 10000, 0, 9999, 0, "17_[0-9999]" }, /* repeats past the gather */
                { "0-2:5", 1, 0, 0, 0, "17_0" },
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                struct gw_array a;
                char msg[GW_ARRAY_MSG_SIZE] = "", out[256];
                if (gw_array_parse(cases[i].spec, "--array", &a, msg, sizeof(msg)) < 0)
                        fail_msg("'%s': %s", cases[i].spec, msg);
                assert_int_equal(a.n, cases[i].n);
                assert_int_equal(a.ids[0], cases[i].first);
                assert_int_equal(a.ids[a.n - 1], cases[i].last);
                assert_int_equal(a.max_running, cases[i].max_running);
                for (size_t k = 1; k < a.n; k++)
                        assert_true(a.ids[k] > a.ids[k - 1]);
                gw_array_done(&a);
                if (cases[i].folded) {
                        fold_of(cases[i].spec, out, sizeof(out));
                        assert_string_equal(out, cases[i].folded);
                }
        }
}

static void parse_errors_name_the_field(void **state) {
        (void) state;
        static const struct {
                const char *spec, *msg;
        } cases[] = {
                { "", "--array: '': no task indexes (examples: 0-49, 1,3,5-9, 0-99:10%8)" },
                { "%4", "--array: '%4': no task indexes (examples: 0-49, 1,3,5-9, 0-99:10%8)" },
                { "9-3", "--array: '9-3': the range ends before it starts" },
                { "0-99:0", "--array: '0-99:0': the step after ':' must be a whole number from 1 to 999999" },
                { "0-99:", "--array: '0-99:': the step after ':' must be a whole number from 1 to 999999" },
                { "1,,3", "--array: '': an empty item (two commas, or a comma at an end)" },
                { "1,", "--array: '': an empty item (two commas, or a comma at an end)" },
                { "-1", "--array: '-1': is not a task index: indexes are whole numbers from 0 to 999999" },
                { "1000000", "--array: '1000000': is not a task index: indexes are whole numbers from 0 to 999999" },
                { "99999999999",
                  "--array: '99999999999': is not a task index: indexes are whole numbers from 0 to 999999" },
                { "0-x",
                  "--array: '0-x': the end of the range is not a task index: indexes are whole numbers from 0 to 999999" },
                { "1 ,2", "--array: '1 ': is not INDEX, INDEX-INDEX or INDEX-INDEX:STEP (examples: 7, 0-49, 0-99:10)" },
                { "3:2", "--array: '3:2': is not INDEX, INDEX-INDEX or INDEX-INDEX:STEP (examples: 7, 0-49, 0-99:10)" },
                { "0-9%0",
                  "--array: '%0': the limit of tasks running at once after '%' must be a whole number from 1 to 10000" },
                { "0-9%",
                  "--array: '%': the limit of tasks running at once after '%' must be a whole number from 1 to 10000" },
                { "0-9%4%2",
                  "--array: '%4%2': the limit of tasks running at once after '%' must be a whole number from 1 to 10000" },
                { "0-9%10001",
                  "--array: '%10001': the limit of tasks running at once after '%' must be a whole number from 1 to 10000" },
                { "0-10000", "--array: '0-10000' makes more than 10000 tasks" },
                { "0-999999", "--array: '0-999999' makes more than 10000 tasks" },
                { "0-9998,20000-20001", "--array: '0-9998,20000-20001' makes more than 10000 tasks" },
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                struct gw_array a = { .n = 99 };
                char msg[GW_ARRAY_MSG_SIZE] = "";
                assert_int_equal(gw_array_parse(cases[i].spec, "--array", &a, msg, sizeof(msg)), -EINVAL);
                assert_string_equal(msg, cases[i].msg);
                assert_int_equal(a.n, 99); /* untouched */
        }
        /* The API's field name, for the daemon. */
        struct gw_array a;
        char msg[GW_ARRAY_MSG_SIZE];
        assert_int_equal(gw_array_parse("7-1", "array", &a, msg, sizeof(msg)), -EINVAL);
        assert_string_equal(msg, "array: '7-1': the range ends before it starts");
        /* A long item is quoted in part. */
        assert_int_equal(gw_array_parse("1-2-3-4-5-6-7-8-9-10-11-12-13-14-15-16-17", "array", &a, msg, sizeof(msg)),
                         -EINVAL);
        assert_non_null(strstr(msg, "array: '1-2-3-4-5-6-7-8-9-10-11-12-13-14-15-16-1'...: is not INDEX"));
}

static void fold_cuts_whole_items(void **state) {
        (void) state;
        const uint32_t ids[] = { 1, 3, 5, 6, 7, 8, 9, 20, 40 };
        char buf[64];

        assert_int_equal(gw_array_fold(17, ids, N_ELEMS(ids), 0, buf, sizeof(buf)), 18);
        assert_string_equal(buf, "17_[1,3,5-9,20,40]");
        assert_int_equal(gw_array_fold(17, ids, N_ELEMS(ids), 0, buf, 16), -ENOBUFS);
        assert_string_equal(buf, "17_[1,3,5-9...]");
        assert_int_equal(gw_array_fold(17, ids, N_ELEMS(ids), 0, buf, 15), -ENOBUFS);
        assert_string_equal(buf, "17_[1,3...]");
        assert_int_equal(gw_array_fold(17, ids, N_ELEMS(ids), 0, buf, 18), -ENOBUFS); /* "]" does not fit */
        assert_string_equal(buf, "17_[1,3,5-9...]");
        assert_int_equal(gw_array_fold(17, ids, N_ELEMS(ids), 0, buf, 9), -ENOBUFS);
        assert_string_equal(buf, "17_[...]");
        assert_int_equal(gw_array_fold(123456, ids, 1, 0, buf, 4), -ENOBUFS);
        assert_string_equal(buf, "");
        assert_int_equal(gw_array_fold(123456, ids, N_ELEMS(ids), 0, buf, 4), -ENOBUFS);
        assert_string_equal(buf, "");
        /* Not ascending, repeated, or none. */
        const uint32_t bad[] = { 3, 1 };
        const uint32_t rep[] = { 1, 1 };
        assert_int_equal(gw_array_fold(17, bad, 2, 0, buf, sizeof(buf)), -EINVAL);
        assert_int_equal(gw_array_fold(17, rep, 2, 0, buf, sizeof(buf)), -EINVAL);
        assert_int_equal(gw_array_fold(17, ids, 0, 0, buf, sizeof(buf)), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(parse_slurm_forms),
                cmocka_unit_test(parse_errors_name_the_field),
                cmocka_unit_test(fold_cuts_whole_items),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
