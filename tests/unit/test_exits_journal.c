/* The exits journal as the daemon reads it (src/daemon/exec/launcher.c): the supervisors'
 * lines, whole or torn, old and new. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/exec/launcher.h"

struct journal {
        char dir[64], path[96];
};

/* A journal holding text, as supervisors appended it. */
static void journal_make(struct journal *j, const char *text) {
        snprintf(j->dir, sizeof j->dir, "/tmp/gw-test-exits-XXXXXX");
        assert_non_null(mkdtemp(j->dir));
        snprintf(j->path, sizeof j->path, "%s/exits", j->dir);
        FILE *f = fopen(j->path, "w");
        assert_non_null(f);
        assert_int_equal(fputs(text, f) >= 0, 1);
        assert_int_equal(fclose(f), 0);
}

static void journal_remove(const struct journal *j) {
        assert_int_equal(unlink(j->path), 0);
        assert_int_equal(rmdir(j->dir), 0);
}

/* A job's end with its pid (a job that ended before its supervisor told the pid), one
 * without, an older supervisor's three fields; a line torn short and one whose pid is not
 * one are never read as ends. */
static void test_each_kind_of_line(void **state) {
        (void) state;
        struct journal j;
        journal_make(&j, "\n5 1 0 100 200\n"
                         "\n6 2 9 300 400 4242\n"
                         "\n7 1 256\n"
                         "\n8 1 0 10\n"
                         "\n9 1 0 1 2 -5\n"
                         "\n10 1 0 1 2 3 4\n"
                         "\n11 1 0 5");
        struct gw_exits *e;
        assert_int_equal(gw_exits_open(j.path, &e), 0);
        struct gw_exit_report r;
        assert_int_equal(gw_exits_take(e, 5, 1, &r), 0);
        assert_true(r.known);
        assert_int_equal(r.status, 0);
        assert_int_equal(r.wall, 100);
        assert_int_equal(r.mono, 200);
        assert_int_equal(r.pid, 0);
        assert_int_equal(gw_exits_take(e, 6, 2, &r), 0);
        assert_int_equal(r.status, 9);
        assert_int_equal(r.wall, 300);
        assert_int_equal(r.mono, 400);
        assert_int_equal(r.pid, 4242);
        assert_int_equal(gw_exits_take(e, 7, 1, &r), 0);
        assert_int_equal(r.status, 256);
        assert_int_equal(r.wall, 0);
        assert_int_equal(r.pid, 0);
        assert_int_equal(gw_exits_take(e, 8, 1, &r), -ENOENT);
        assert_int_equal(gw_exits_take(e, 9, 1, &r), -ENOENT);
        assert_int_equal(gw_exits_take(e, 10, 1, &r), -ENOENT);
        /* Unfinished (no newline yet): not an end until its line is whole. */
        assert_int_equal(gw_exits_take(e, 11, 1, &r), -ENOENT);
        assert_int_equal(gw_exits_take(e, 6, 2, &r), -ENOENT); /* taken once */
        e = gw_exits_close(e);
        journal_remove(&j);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_each_kind_of_line),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
