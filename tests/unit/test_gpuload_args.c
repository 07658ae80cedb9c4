/* gpuload's command line (tests/gpu/gpuload_args.c): defaults per mode, every option's
 * range, and an error that names the option for each bad one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "gpuload_args.h"

#define ARGC(v) ((int) (sizeof(v) / sizeof((v)[0])))

static int parse(int argc, char *const *argv, struct gpuload_args *a, char *err) {
        return gpuload_args_parse(argc, argv, a, err, 256);
}

static void defaults(void **state) {
        char *argv[] = { "gpuload", "busy" };
        struct gpuload_args a;
        char err[256];
        assert_int_equal(parse(ARGC(argv), argv, &a, err), 0);
        assert_int_equal(a.mode, GPULOAD_BUSY);
        assert_int_equal(a.mib, 1024);
        assert_true(a.seconds == 60);
        assert_int_equal(a.duty, 100);
        assert_int_equal(a.leak_mib, 256);
        assert_true(a.epoch_seconds == 5);
        assert_string_equal(a.run_dir, "runs/detect/gpuload");
}

static void every_option(void **state) {
        char *argv[] = { "gpuload",    "leak", "--mib",           "2048", "--seconds", "30.5",  "--duty", "50",
                         "--leak-mib", "512",  "--epoch-seconds", "4",    "--run-dir", "runs/x" };
        struct gpuload_args a;
        char err[256];
        assert_int_equal(parse(ARGC(argv), argv, &a, err), 0);
        assert_int_equal(a.mode, GPULOAD_LEAK);
        assert_int_equal(a.mib, 2048);
        assert_true(a.seconds == 30.5);
        assert_int_equal(a.duty, 50);
        assert_int_equal(a.leak_mib, 512);
        assert_true(a.epoch_seconds == 4);
        assert_string_equal(a.run_dir, "runs/x");
}

static void burst_busy_part(void **state) {
        char *argv[] = { "gpuload", "burst", "--seconds", "20" };
        struct gpuload_args a;
        char err[256];
        assert_int_equal(parse(ARGC(argv), argv, &a, err), 0);
        assert_true(a.busy_seconds == 10); /* half by default */
        char *argv2[] = { "gpuload", "burst", "--seconds", "20", "--busy-seconds", "25" };
        assert_int_equal(parse(ARGC(argv2), argv2, &a, err), -EINVAL);
        assert_non_null(strstr(err, "--busy-seconds"));
        assert_non_null(strstr(err, "longer than --seconds"));
}

static void help(void **state) {
        char *argv[] = { "gpuload", "busy", "--help" };
        struct gpuload_args a = { .mib = 7 };
        char err[256];
        assert_int_equal(parse(ARGC(argv), argv, &a, err), 1);
        assert_int_equal(a.mib, 7); /* untouched */
        assert_non_null(strstr(gpuload_usage, "idle"));
}

/* Each bad command line, and what its message must name. */
static void refused(void **state) {
        static const struct {
                const char *argv[6];
                const char *needle;
        } cases[] = {
                { { "gpuload" }, "MODE: missing" },
                { { "gpuload", "spin" }, "MODE spin: not a mode" },
                { { "gpuload", "busy", "--mib" }, "--mib: needs a value" },
                { { "gpuload", "busy", "--mib", "0" }, "--mib 0: a whole number of MiB" },
                { { "gpuload", "busy", "--mib", "-5" }, "--mib -5:" },
                { { "gpuload", "busy", "--mib", "12G" }, "--mib 12G:" },
                { { "gpuload", "busy", "--mib", "2000000" }, "--mib 2000000:" },
                { { "gpuload", "busy", "--duty", "101" }, "--duty 101: a whole percentage" },
                { { "gpuload", "busy", "--duty", "0" }, "--duty 0:" },
                { { "gpuload", "busy", "--seconds", "0" }, "--seconds 0: seconds, more than 0" },
                { { "gpuload", "busy", "--seconds", "1e3" }, "--seconds 1e3:" },
                { { "gpuload", "busy", "--seconds", "nan" }, "--seconds nan:" },
                { { "gpuload", "busy", "--seconds", "90000" }, "--seconds 90000:" },
                { { "gpuload", "leak", "--epoch-seconds", "" }, "--epoch-seconds :" },
                { { "gpuload", "leak", "--run-dir", "" }, "--run-dir: an empty directory name" },
                { { "gpuload", "busy", "--fast", "1" }, "--fast: unknown option" },
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                int argc = 0;
                while (argc < 6 && cases[i].argv[argc])
                        argc++;
                struct gpuload_args a;
                char err[256];
                int r = parse(argc, (char *const *) cases[i].argv, &a, err);
                if (r != -EINVAL || !strstr(err, cases[i].needle))
                        fail_msg("case %zu: got %d '%s', wanted -EINVAL naming '%s'", i, r, err, cases[i].needle);
        }
}

static void mode_names(void **state) {
        for (int m = 0; m < _GPULOAD_MODE_MAX; m++)
                assert_int_equal(gpuload_mode_from_string(gpuload_mode_to_string((enum gpuload_mode) m)), m);
        assert_int_equal(gpuload_mode_from_string("BUSY"), _GPULOAD_MODE_INVALID);
        assert_int_equal(gpuload_mode_from_string(NULL), _GPULOAD_MODE_INVALID);
        assert_null(gpuload_mode_to_string(_GPULOAD_MODE_MAX));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(defaults), cmocka_unit_test(every_option), cmocka_unit_test(burst_busy_part),
                cmocka_unit_test(help),     cmocka_unit_test(refused),      cmocka_unit_test(mode_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
