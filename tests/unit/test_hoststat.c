/* base/hoststat.c: the host's CPU and memory and a process's CPU time from the kernel's text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>

#include "base/hoststat.h"

static void cpu_line_and_count(void **state) {
        (void) state;
        const char *text = "cpu  100 5 50 800 20 3 2 10 0 0\n"
                           "cpu0 50 2 25 400 10 1 1 5 0 0\n"
                           "cpu1 50 3 25 400 10 2 1 5 0 0\n"
                           "intr 12345\nctxt 999\n";
        struct gw_cpu_ticks t;
        unsigned n = 0;
        assert_int_equal(gw_hoststat_parse_cpu(text, &t, &n), 0);
        assert_int_equal(t.busy, 100 + 5 + 50 + 3 + 2 + 10);
        assert_int_equal(t.total, t.busy + 800 + 20);
        assert_int_equal(n, 2);
}

static void cpu_old_kernel_four_fields(void **state) {
        (void) state;
        struct gw_cpu_ticks t;
        assert_int_equal(gw_hoststat_parse_cpu("cpu 1 2 3 4\ncpu0 1 2 3 4\n", &t, NULL), 0);
        assert_int_equal(t.busy, 6);
        assert_int_equal(t.total, 10);
}

static void cpu_refused(void **state) {
        (void) state;
        struct gw_cpu_ticks t = { 7, 7 };
        assert_int_equal(gw_hoststat_parse_cpu("", &t, NULL), -EINVAL);
        assert_int_equal(gw_hoststat_parse_cpu("cpu0 1 2 3 4\n", &t, NULL), -EINVAL); /* no aggregate line */
        assert_int_equal(gw_hoststat_parse_cpu("cpu 1 2 3\n", &t, NULL), -EINVAL);
        assert_int_equal(gw_hoststat_parse_cpu("cpu x 2 3 4\n", &t, NULL), -EINVAL);
        assert_int_equal(t.busy, 7); /* untouched on failure */
}

static void cpu_percent(void **state) {
        (void) state;
        struct gw_cpu_ticks a = { 100, 1000 }, b = { 150, 1100 };
        assert_true(fabs(gw_hoststat_cpu_percent(&a, &b) - 50.0) < 1e-9);
        assert_true(gw_hoststat_cpu_percent(&a, &a) < 0); /* no time passed */
        assert_true(gw_hoststat_cpu_percent(&b, &a) < 0); /* went back */
}

static void meminfo(void **state) {
        (void) state;
        const char *text = "MemTotal:       131072000 kB\nMemFree:         1000 kB\nMemAvailable:   65536000 kB\n"
                           "Buffers:          2048 kB\n";
        uint64_t total = 0, avail = 0;
        assert_int_equal(gw_hoststat_parse_meminfo(text, &total, &avail), 0);
        assert_int_equal(total, UINT64_C(131072000) * 1024);
        assert_int_equal(avail, UINT64_C(65536000) * 1024);
        /* No MemAvailable (before Linux 3.14): nothing, not a guess. */
        assert_int_equal(gw_hoststat_parse_meminfo("MemTotal: 10 kB\nMemFree: 5 kB\n", &total, &avail), -EINVAL);
        assert_int_equal(gw_hoststat_parse_meminfo("MemTotal: 10\nMemAvailable: 5 kB\n", &total, &avail), -EINVAL);
        assert_int_equal(
                gw_hoststat_parse_meminfo("MemTotal: 99999999999999999999 kB\nMemAvailable: 5 kB\n", &total, &avail),
                -EINVAL);
}

static void pid_ticks(void **state) {
        (void) state;
        uint64_t t = 0;
        /* A name with spaces and parentheses; tty_nr and tpgid of -1. */
        const char *line =
                "4242 (python3 (a) b) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 30 0 0 20 0 8 0 123 456 789\n";
        assert_int_equal(gw_hoststat_parse_pid_ticks(line, &t), 0);
        assert_int_equal(t, 280);
        assert_int_equal(gw_hoststat_parse_pid_ticks("4242 (x) S 1 2 3\n", &t), -EINVAL);
        assert_int_equal(gw_hoststat_parse_pid_ticks("no parenthesis", &t), -EINVAL);
        assert_int_equal(gw_hoststat_parse_pid_ticks("1 (x)", &t), -EINVAL);
        assert_int_equal(t, 280);
}

static void proc_percent(void **state) {
        (void) state;
        /* 200 ticks of 100 Hz over 2 s: one whole core. */
        assert_true(fabs(gw_hoststat_proc_percent(1000, 1200, 100, 2000000) - 100.0) < 1e-9);
        /* Four cores busy: 400, as top says. */
        assert_true(fabs(gw_hoststat_proc_percent(0, 800, 100, 2000000) - 400.0) < 1e-9);
        assert_true(gw_hoststat_proc_percent(1000, 1200, 100, 0) < 0);
        assert_true(gw_hoststat_proc_percent(1200, 1000, 100, 2000000) < 0); /* another process with the pid */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(cpu_line_and_count),
                cmocka_unit_test(cpu_old_kernel_four_fields),
                cmocka_unit_test(cpu_refused),
                cmocka_unit_test(cpu_percent),
                cmocka_unit_test(meminfo),
                cmocka_unit_test(pid_ticks),
                cmocka_unit_test(proc_percent),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
