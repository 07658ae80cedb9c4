/* The removal of ended jobs' cgroups (src/daemon/exec/cgroup.c), with plain directories standing in:
 * rmdir refuses a directory with a file in it as it refuses a cgroup with a process in it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/exec/cgroup.h"

static char root[64];

static int setup(void **state) {
        snprintf(root, sizeof root, "/tmp/gw-trash-XXXXXX");
        assert_non_null(mkdtemp(root));
        return 0;
}

static int teardown(void **state) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
        return 0;
}

/* A directory under root; with busy, a file in it keeps rmdir from removing it. */
static const char *make_dir(const char *name, bool busy) {
        static char path[4][128];
        static int k;
        char *p = path[k++ % 4];
        snprintf(p, sizeof path[0], "%s/%s", root, name);
        assert_int_equal(mkdir(p, 0755), 0);
        if (busy) {
                char f[160];
                snprintf(f, sizeof f, "%s/pid", p);
                FILE *fp = fopen(f, "w");
                assert_non_null(fp);
                fclose(fp);
        }
        return p;
}

static void unbusy(const char *dir) {
        char f[160];
        snprintf(f, sizeof f, "%s/pid", dir);
        assert_int_equal(unlink(f), 0);
}

static bool exists(const char *dir) {
        struct stat st;
        return stat(dir, &st) == 0;
}

static void test_empty_ones_go_at_once(void **state) {
        struct gw_cgroup_trash t = { 0 };
        const char *a = make_dir("job-1.1", false), *b = make_dir("job-2.1", false);
        gw_cgroup_trash_add(&t, a);
        gw_cgroup_trash_add(&t, b);
        gw_cgroup_trash_add(&t, "/nonexistent-gw-trash/job-3.1"); /* already gone: nothing to do */
        assert_int_equal(gw_cgroup_trash_sweep(&t, 1000), GW_USEC_INFINITY);
        assert_false(exists(a));
        assert_false(exists(b));
        assert_int_equal(t.n, 0);
        gw_cgroup_trash_free(&t);
}

static void test_a_busy_one_is_tried_again_each_second(void **state) {
        struct gw_cgroup_trash t = { 0 };
        gw_usec_t now = 50 * GW_USEC_PER_SEC;
        const char *busy = make_dir("job-1.1", true);
        gw_cgroup_trash_add(&t, busy);
        assert_int_equal(gw_cgroup_trash_sweep(&t, now), now + GW_USEC_PER_SEC);
        assert_true(exists(busy));

        /* Its last process gone, it still waits for its turn: no rmdir on every loop iteration. */
        unbusy(busy);
        assert_int_equal(gw_cgroup_trash_sweep(&t, now + 1000), now + GW_USEC_PER_SEC);
        assert_true(exists(busy));

        /* A new one meanwhile is removed at once and does not move the busy one's turn. */
        const char *fresh = make_dir("job-2.1", false);
        gw_cgroup_trash_add(&t, fresh);
        assert_int_equal(gw_cgroup_trash_sweep(&t, now + 2000), now + GW_USEC_PER_SEC);
        assert_false(exists(fresh));

        assert_int_equal(gw_cgroup_trash_sweep(&t, now + GW_USEC_PER_SEC), GW_USEC_INFINITY);
        assert_false(exists(busy));
        gw_cgroup_trash_free(&t);
}

static void test_one_that_never_empties_is_given_up_after_a_minute(void **state) {
        struct gw_cgroup_trash t = { 0 };
        const char *stuck = make_dir("job-1.1", true);
        gw_cgroup_trash_add(&t, stuck);
        gw_usec_t now = GW_USEC_PER_SEC, due = gw_cgroup_trash_sweep(&t, now);
        int sweeps = 1;
        while (due != GW_USEC_INFINITY && sweeps < 1000) {
                assert_true(due > now);
                now = due;
                due = gw_cgroup_trash_sweep(&t, now);
                sweeps++;
        }
        assert_int_equal(due, GW_USEC_INFINITY);
        assert_int_equal(sweeps, 60);
        assert_true(exists(stuck)); /* left for the next start's sweep, never forced */
        gw_cgroup_trash_free(&t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_empty_ones_go_at_once, setup, teardown),
                cmocka_unit_test_setup_teardown(test_a_busy_one_is_tried_again_each_second, setup, teardown),
                cmocka_unit_test_setup_teardown(test_one_that_never_empties_is_given_up_after_a_minute, setup,
                                                teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
