/* The removal of ended jobs' cgroups and the pool of emptied ones (src/daemon/exec/cgroup.c), with
 * plain directories standing in: rmdir refuses a directory with a file in it as it refuses a cgroup
 * with a process in it, and the pool reads the interface files the test writes. */
#include <errno.h>
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
#include "daemon/exec/proc.h"

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

/* A restarted daemon's sweep removes an earlier daemon's empty slot-N, its pool makes a new
 * slot-N for a job, and the ended attempt's slot-N, put in the trash before the sweep, must
 * not take the new one (its job could not join it: "No such file or directory"). */
static void test_a_directory_made_again_under_the_name_stays(void **state) {
        struct gw_cgroup_trash t = { 0 };
        const char *old = make_dir("slot-4", false);
        gw_cgroup_trash_add(&t, old);
        assert_int_equal(rmdir(old), 0);
        const char *again = make_dir("slot-4", false);
        assert_int_equal(gw_cgroup_trash_sweep(&t, 1000), GW_USEC_INFINITY);
        assert_true(exists(again));
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

static void put(const char *dir, const char *file, const char *text) {
        char p[700];
        snprintf(p, sizeof p, "%s/%s", dir, file);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

/* A slot taken and made ready to come back: nothing in it (cgroup.events), no OOM kill. */
static char *take_empty(struct gw_cgroups *cg, struct gw_cgroup_pool *pool) {
        char *dir = NULL;
        assert_int_equal(gw_cgroup_pool_take(cg, pool, &dir), 0);
        assert_true(exists(dir));
        put(dir, "cgroup.events", "populated 0\nfrozen 0\n");
        put(dir, "memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
        return dir;
}

static void test_the_pool_takes_back_only_what_nothing_can_be_in(void **state) {
        struct gw_cgroups cg = { .mode = GW_CGROUP_V2, .memory = true };
        snprintf(cg.base, sizeof cg.base, "%s", root);
        struct gw_cgroup_pool pool = { 0 };
        char path[128];
        char *a = take_empty(&cg, &pool);
        snprintf(path, sizeof path, "%s/slot-2", root); /* an earlier daemon's, maybe an adopted job's */
        assert_int_equal(mkdir(path, 0755), 0);
        put(a, "cgroup.events", "populated 1\nfrozen 0\n");
        assert_false(gw_cgroup_pool_give_back(&cg, &pool, a)); /* a process still in it */
        put(a, "cgroup.events", "populated 0\nfrozen 0\n");
        assert_false(gw_cgroup_pool_give_back(&cg, &pool, a)); /* refused once: the caller removes it */

        char *b = take_empty(&cg, &pool);
        assert_string_not_equal(b, path); /* slot-2 is not taken over */
        snprintf(path, sizeof path, "%s/inner", b);
        assert_int_equal(mkdir(path, 0755), 0);
        assert_false(gw_cgroup_pool_give_back(&cg, &pool, b)); /* a cgroup made inside it */

        char *c = take_empty(&cg, &pool);
        put(c, "memory.events", "low 0\nhigh 0\nmax 0\noom 1\noom_kill 1\n");
        assert_false(gw_cgroup_pool_give_back(&cg, &pool, c)); /* its count would not be the next attempt's */

        char *d = take_empty(&cg, &pool), *e = NULL;
        assert_true(gw_cgroup_pool_give_back(&cg, &pool, d));
        assert_false(gw_cgroup_pool_give_back(&cg, &pool, d)); /* given back already */
        assert_int_equal(gw_cgroup_pool_take(&cg, &pool, &e), 0);
        assert_string_equal(e, d); /* no new directory */
        assert_true(gw_cgroup_pool_give_back(&cg, &pool, e)); /* the same slot again, through its kept files */

        snprintf(path, sizeof path, "%s/job-3.1", root);
        assert_false(gw_cgroup_pool_give_back(&cg, &pool, path)); /* an older daemon's job cgroup */
        char *f = NULL;
        cg.mode = GW_CGROUP_V1;
        assert_int_equal(gw_cgroup_pool_take(&cg, &pool, &f), -EOPNOTSUPP); /* v1: one per attempt */
        assert_null(f);
        gw_cgroup_pool_free(&pool);
        free(a);
        free(b);
        free(c);
        free(d);
        free(e);
}

static void test_counter_lines(void **state) {
        uint64_t v = 0;
        assert_int_equal(gw_proc_counter_in("oom 2\noom_kill_x 5\noom_kill 7\n", "oom_kill", &v), 0);
        assert_int_equal(v, 7);
        assert_int_equal(gw_proc_counter_in("oom_kill 9", "oom_kill", &v), 0); /* no newline at the end */
        assert_int_equal(v, 9);
        assert_int_equal(gw_proc_counter_in("oom 2\n", "oom_kill", &v), -ENOENT);
        assert_int_equal(gw_proc_counter_in("oom_kill x\n", "oom_kill", &v), -EIO);
        assert_int_equal(gw_proc_counter_in("", "oom_kill", &v), -ENOENT);
        char p[128];
        snprintf(p, sizeof p, "%s/events", root);
        put(root, "events", "populated 0\n");
        assert_int_equal(gw_proc_counter(p, "populated", &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(gw_proc_counter("/nonexistent-gw/events", "populated", &v), -ENOENT);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_empty_ones_go_at_once, setup, teardown),
                cmocka_unit_test_setup_teardown(test_a_directory_made_again_under_the_name_stays, setup, teardown),
                cmocka_unit_test_setup_teardown(test_a_busy_one_is_tried_again_each_second, setup, teardown),
                cmocka_unit_test_setup_teardown(test_one_that_never_empties_is_given_up_after_a_minute, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_the_pool_takes_back_only_what_nothing_can_be_in, setup, teardown),
                cmocka_unit_test_setup_teardown(test_counter_lines, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
