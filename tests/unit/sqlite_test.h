/* What the tests that open SQLite databases of their own share (test_store_migrated.c,
 * test_store_walbatch.c): a scratch folder for one database, and raw statements whose
 * failure fails the test.  Include after cmocka.h. */
#pragma once
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct sqlite_test_dir {
        char dir[64], db[96];
};

/* A new folder under /tmp for the database NAME. */
static inline void sqlite_test_dir_make(struct sqlite_test_dir *t, const char *name) {
        snprintf(t->dir, sizeof t->dir, "/tmp/gw-test-sqlite-XXXXXX");
        assert_non_null(mkdtemp(t->dir));
        snprintf(t->db, sizeof t->db, "%s/%s", t->dir, name);
}

/* The database, its WAL and shared memory, then the folder, which must be empty then. */
static inline void sqlite_test_dir_remove(const struct sqlite_test_dir *t) {
        const char *suffix[] = { "", "-wal", "-shm" };
        for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
                char p[128];
                snprintf(p, sizeof p, "%s%s", t->db, suffix[i]);
                (void) unlink(p);
        }
        assert_int_equal(rmdir(t->dir), 0);
}

static inline void sqlite_test_exec(sqlite3 *db, const char *sql) {
        char *err = NULL;
        if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
                fail_msg("%s: %s", sql, err);
}

/* The first column of the first row of sql. */
static inline long long sqlite_test_int(sqlite3 *db, const char *sql) {
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        long long v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        return v;
}
