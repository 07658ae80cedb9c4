/* src/store/walbatch.c: a transaction written through the store's VFS is in the WAL file, for
 * any other connection, once its commit returns; one whose write fails is not committed, and
 * the next one is, with the database whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sqlite_test.h"
#include "store/walbatch.h"

struct fixture {
        struct sqlite_test_dir t;
        sqlite3 *w; /* through the VFS */
        sqlite3 *r; /* SQLite's default VFS: another process's view */
};

static int rc_of(sqlite3 *db, const char *sql) { return sqlite3_exec(db, sql, NULL, NULL, NULL); }

static int setup(void **state) {
        struct fixture *f = calloc(1, sizeof *f);
        assert_non_null(f);
        sqlite_test_dir_make(&f->t, "t.db");
        assert_non_null(gw_walbatch_vfs());
        assert_int_equal(sqlite3_open_v2(f->t.db, &f->w, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, gw_walbatch_vfs()),
                         SQLITE_OK);
        sqlite_test_exec(f->w, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0;"
                               "CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB NOT NULL)");
        assert_int_equal(sqlite3_open_v2(f->t.db, &f->r, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        struct fixture *f = *state;
        sqlite3_close(f->r);
        sqlite3_close(f->w);
        sqlite_test_dir_remove(&f->t);
        free(f);
        return 0;
}

/* Rows of 3000 bytes: each transaction below dirties several pages (frames). */
static int insert_rows(sqlite3 *db, int from, int n) {
        char sql[160];
        int rc = rc_of(db, "BEGIN");
        for (int k = from; rc == SQLITE_OK && k < from + n; k++) {
                snprintf(sql, sizeof sql, "INSERT INTO t (k, v) VALUES (%d, zeroblob(3000))", k);
                rc = rc_of(db, sql);
        }
        if (rc == SQLITE_OK)
                rc = rc_of(db, "COMMIT");
        if (rc != SQLITE_OK)
                (void) rc_of(db, "ROLLBACK");
        return rc;
}

static void committed_is_seen_at_once(void **state) {
        struct fixture *f = *state;
        for (int round = 0; round < 20; round++) {
                assert_int_equal(insert_rows(f->w, round * 5, 5), SQLITE_OK);
                /* Another connection reads the WAL file itself: the frames must be there. */
                assert_int_equal(sqlite_test_int(f->r, "SELECT count(*) FROM t"), (round + 1) * 5);
        }
        /* One larger than a single write of SQLite's may be (128 KiB): written in pieces. */
        assert_int_equal(insert_rows(f->w, 5000, 60), SQLITE_OK);
        assert_int_equal(sqlite_test_int(f->r, "SELECT count(*) FROM t"), 160);
        sqlite_test_exec(f->w, "DELETE FROM t WHERE k >= 5000");
        /* A transaction rolled back leaves nothing, and the next one takes its frames' place. */
        sqlite_test_exec(f->w, "BEGIN; INSERT INTO t (k, v) VALUES (1000, zeroblob(3000)); ROLLBACK");
        assert_int_equal(insert_rows(f->w, 2000, 3), SQLITE_OK);
        assert_int_equal(sqlite_test_int(f->r, "SELECT count(*) FROM t"), 103);
        assert_int_equal(sqlite_test_int(f->r, "SELECT count(*) FROM t WHERE k = 1000"), 0);
        /* Checkpointed and started over: still whole. */
        sqlite_test_exec(f->w, "PRAGMA wal_checkpoint(TRUNCATE)");
        assert_int_equal(insert_rows(f->w, 3000, 2), SQLITE_OK);
        assert_int_equal(sqlite_test_int(f->r, "SELECT count(*) FROM t"), 105);
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(f->r, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_string_equal((const char *) sqlite3_column_text(st, 0), "ok");
        sqlite3_finalize(st);
}

/* The WAL file cannot grow (a file size limit: EFBIG, as a full disk's ENOSPC): the commit
 * frame's write fails, SQLite is told, and the transaction is not committed. */
static void failed_write_fails_the_commit(void **state) {
        struct fixture *f = *state;
        assert_int_equal(insert_rows(f->w, 0, 2), SQLITE_OK);
        char wal[128];
        snprintf(wal, sizeof wal, "%s-wal", f->t.db);
        struct stat st;
        assert_int_equal(stat(wal, &st), 0);
        struct rlimit old, lim;
        assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
        lim = old;
        lim.rlim_cur = (rlim_t) st.st_size + 4096; /* less than the frames below */
        void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
        int rc = insert_rows(f->w, 100, 10);
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
        (void) signal(SIGXFSZ, was);
        assert_int_not_equal(rc, SQLITE_OK);
        assert_int_equal(sqlite_test_int(f->r, "SELECT count(*) FROM t"), 2);
        assert_int_equal(sqlite_test_int(f->w, "SELECT count(*) FROM t"), 2);
        /* With room again, the next transaction is committed, the database whole. */
        assert_int_equal(insert_rows(f->w, 200, 10), SQLITE_OK);
        assert_int_equal(sqlite_test_int(f->r, "SELECT count(*) FROM t"), 12);
        sqlite3_close(f->w);
        assert_int_equal(sqlite3_open_v2(f->t.db, &f->w, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        assert_int_equal(sqlite_test_int(f->w, "SELECT count(*) FROM t"), 12);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(committed_is_seen_at_once, setup, teardown),
                cmocka_unit_test_setup_teardown(failed_write_fails_the_commit, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
