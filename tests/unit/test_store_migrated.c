/* src/store: what the later migrations changed, on a new database and on one an earlier
 * gpuwardd left.  The jobs_end index holds only the jobs that have ended (end_time > 0), and
 * the queries by end time still get the rows they asked for; a running attempt's monotonic
 * start, kept in job_clock before, is in its job's row. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/job.h"
#include "sqlite_test.h"
#include "store/store_internal.h"
#include "store/jobclock.h"
#include "store/usage.h"

#define SCHEMA_FULL_INDEX 28 /* the last schema whose jobs_end held every job */
#define SCHEMA_CLOCK_TABLE 29 /* the last schema with the job_clock table */
#define NOW ((gw_usec_t) 1763769600 * GW_USEC_PER_SEC)

struct fixture {
        struct sqlite_test_dir t;
};

static int setup(void **state) {
        struct fixture *f = calloc(1, sizeof *f);
        assert_non_null(f);
        sqlite_test_dir_make(&f->t, "gpuward.db");
        *state = f;
        return 0;
}

static int teardown(void **state) {
        struct fixture *f = *state;
        sqlite_test_dir_remove(&f->t);
        free(f);
        return 0;
}

static sqlite3 *raw_open(const struct fixture *f) {
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open_v2(f->t.db, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL), SQLITE_OK);
        return db;
}

/* A job straight into the table, as any schema since 1 takes it. */
static void raw_job(sqlite3 *db, enum gw_job_state state, gw_usec_t start, gw_usec_t end) {
        char sql[512];
        snprintf(sql, sizeof sql,
                 "INSERT INTO jobs (name, uid, gid, user, state, ngpus, time_limit, argv, cwd, submit_time, "
                 "start_time, end_time) VALUES ('j', 1000, 1000, 'alice', %d, 1, 60, x'', '/', %lld, %lld, %lld)",
                 (int) state, (long long) (NOW - 7200 * GW_USEC_PER_SEC), (long long) start, (long long) end);
        sqlite_test_exec(db, sql);
}

/* Three jobs that have not ended (end_time 0) and two that have, one of them before the
 * window the usage query is asked for. */
static void add_jobs(sqlite3 *db) {
        raw_job(db, GW_JOB_PENDING, 0, 0);
        raw_job(db, GW_JOB_HELD, 0, 0);
        raw_job(db, GW_JOB_RUNNING, NOW - 60 * GW_USEC_PER_SEC, 0);
        raw_job(db, GW_JOB_COMPLETED, NOW - 7000 * GW_USEC_PER_SEC, NOW - 6000 * GW_USEC_PER_SEC);
        raw_job(db, GW_JOB_FAILED, NOW - 600 * GW_USEC_PER_SEC, NOW - 300 * GW_USEC_PER_SEC);
}

/* The entries in jobs_end's leaves (dbstat: the pages as stored). */
static long long index_entries(sqlite3 *db) {
        return sqlite_test_int(
                db, "SELECT coalesce(sum(ncell), 0) FROM dbstat WHERE name = 'jobs_end' AND pagetype = 'leaf'");
}

static void count_row(const struct gw_store_usage_row *r, void *userdata) {
        assert_int_equal(r->state, GW_JOB_FAILED);
        (*(int *) userdata)++;
}

/* Opens the store on f's database (migrating it), checks the index and the queries, closes. */
static void check_store(const struct fixture *f) {
        struct gw_store *s = NULL;
        char err[256] = "";
        if (gw_store_open(f->t.dir, &s, err, sizeof err) < 0)
                fail_msg("gw_store_open: %s", err);
        sqlite3 *db = raw_open(f);
        assert_int_equal(sqlite_test_int(db, "PRAGMA user_version"), gw_store_schema_version());
        assert_int_equal(index_entries(db), 2);
        assert_int_equal(sqlite_test_int(db, "SELECT count(*) FROM jobs"), 5);
        sqlite3_close(db);

        int n = 0;
        assert_int_equal(gw_store_usage_rows(s, NOW - 3600 * GW_USEC_PER_SEC, count_row, &n), 0);
        assert_int_equal(n, 1);
        gw_usec_t used = -1;
        assert_int_equal(gw_store_gpu_time_since(s, 1000, NOW - 3600 * GW_USEC_PER_SEC, NOW, &used), 0);
        assert_int_equal(used, 300 * GW_USEC_PER_SEC);
        gw_store_close(s);
}

static void new_database(void **state) {
        struct fixture *f = *state;
        struct gw_store *s = NULL;
        char err[256] = "";
        if (gw_store_open(f->t.dir, &s, err, sizeof err) < 0)
                fail_msg("gw_store_open: %s", err);
        gw_store_close(s);
        sqlite3 *db = raw_open(f);
        add_jobs(db);
        sqlite3_close(db);
        check_store(f);
}

/* A database schema 28's gpuwardd left: made by the migrations up to it, with its jobs. */
static void schema_28_database(void **state) {
        struct fixture *f = *state;
        sqlite3 *db = raw_open(f);
        for (int v = 0; v < SCHEMA_FULL_INDEX; v++)
                sqlite_test_exec(db, gw_store_migrations[v]);
        sqlite_test_exec(db, "PRAGMA user_version = 28");
        add_jobs(db);
        assert_int_equal(index_entries(db), 5); /* every job, ended or not */
        sqlite3_close(db);
        check_store(f);
}

/* A database schema 29's gpuwardd left with a job running: its monotonic start, in job_clock
 * then, is the job's after the migration, and the table is gone. */
static void clock_moved_into_the_job_row(void **state) {
        struct fixture *f = *state;
        sqlite3 *db = raw_open(f);
        for (int v = 0; v < SCHEMA_CLOCK_TABLE; v++)
                sqlite_test_exec(db, gw_store_migrations[v]);
        sqlite_test_exec(db, "PRAGMA user_version = 29");
        add_jobs(db); /* the third is running */
        sqlite_test_exec(db,
                         "INSERT INTO job_clock (job_id, attempt, boot_id, start_mono) VALUES (3, 1, 'boot-a', 12345)");
        sqlite3_close(db);
        struct gw_store *s = NULL;
        char err[256] = "";
        if (gw_store_open(f->t.dir, &s, err, sizeof err) < 0)
                fail_msg("gw_store_open: %s", err);
        gw_usec_t v = 0;
        assert_int_equal(gw_store_job_clock_get(s, 3, 1, "boot-a", &v), 0);
        assert_int_equal(v, 12345);
        assert_int_equal(gw_store_job_clock_get(s, 2, 1, "boot-a", &v), -ENOENT); /* none kept for it */
        assert_int_equal(gw_store_job_clock_get(s, 3, 1, "boot-b", &v), -ENOENT); /* another boot's */
        assert_int_equal(sqlite_test_int(gw_store_db(s), "SELECT count(*) FROM sqlite_schema WHERE name = 'job_clock'"),
                         0);
        gw_store_close(s);
}

/* The SQL text of the first statement on jobs the store steps while traced. */
static int trace_jobs_stmt(unsigned type, void *userdata, void *stmt, void *x) {
        (void) type;
        (void) x;
        char *sql = userdata;
        const char *text = sqlite3_sql(stmt);
        if (!sql[0] && text && strstr(text, "FROM jobs"))
                snprintf(sql, 1024, "%s", text);
        return 0;
}

/* What SQLite's plan for sql says, its steps' details joined by " | ". */
static void query_plan(sqlite3 *db, const char *sql, char *out, size_t n) {
        char eqp[1100];
        snprintf(eqp, sizeof eqp, "EXPLAIN QUERY PLAN %s", sql);
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(db, eqp, -1, &st, NULL), SQLITE_OK);
        size_t used = 0;
        out[0] = '\0';
        while (sqlite3_step(st) == SQLITE_ROW && used < n)
                used += (size_t) snprintf(out + used, n - used, "%s | ", (const char *) sqlite3_column_text(st, 3));
        sqlite3_finalize(st);
}

/* GET /api/v1/usage reads the jobs that ended inside its window by jobs_end, not every job in
 * a final state by jobs_state: over a long history its window is a small part of them. */
static void usage_reads_by_end_time(void **state) {
        struct fixture *f = *state;
        struct gw_store *s = NULL;
        char err[256] = "", sql[1024] = "", plan[1024];
        if (gw_store_open(f->t.dir, &s, err, sizeof err) < 0)
                fail_msg("gw_store_open: %s", err);
        sqlite3 *db = gw_store_db(s);
        assert_int_equal(sqlite3_trace_v2(db, SQLITE_TRACE_STMT, trace_jobs_stmt, sql), SQLITE_OK);
        int n = 0;
        assert_int_equal(gw_store_usage_rows(s, NOW - 3600 * GW_USEC_PER_SEC, count_row, &n), 0);
        assert_int_equal(sqlite3_trace_v2(db, 0, NULL, NULL), SQLITE_OK);
        assert_non_null(strstr(sql, "end_time"));
        query_plan(db, sql, plan, sizeof plan);
        if (!strstr(plan, "USING INDEX jobs_end "))
                fail_msg("usage query plan: %s", plan);
        gw_store_close(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(new_database, setup, teardown),
                cmocka_unit_test_setup_teardown(schema_28_database, setup, teardown),
                cmocka_unit_test_setup_teardown(usage_reads_by_end_time, setup, teardown),
                cmocka_unit_test_setup_teardown(clock_moved_into_the_job_row, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
