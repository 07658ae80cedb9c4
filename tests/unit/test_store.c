/* src/store: the SQLite store, on a real database in a temporary directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "core/directive.h"
#include "store/jobclock.h"
#include "store/store.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* How many entries store.c's migrations[] has.  Bump it with each new migration: a store
 * that stops applying (or re-applies) one must fail here. */
#define GW_TEST_N_MIGRATIONS gw_store_schema_version()

/* A fake wall clock: every read is one second after the previous one, so event times are
 * known and strictly increasing. */
#define CLOCK_BASE ((gw_usec_t) 1763769600 * GW_USEC_PER_SEC)
static gw_usec_t fake_wall_now;
static gw_usec_t fake_wall(void) {
        fake_wall_now += GW_USEC_PER_SEC;
        return fake_wall_now;
}

struct fixture {
        char dir[64];
        struct gw_store *s;
};

static void rm_rf(const char *dir) {
        DIR *d = opendir(dir);
        if (d) {
                struct dirent *de;
                while ((de = readdir(d))) {
                        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                                continue;
                        char p[512];
                        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
                        (void) unlink(p);
                }
                closedir(d);
        }
        (void) rmdir(dir);
}

static void store_open_ok(struct fixture *f) {
        char err[256] = "";
        int r = gw_store_open(f->dir, &f->s, err, sizeof err);
        if (r < 0)
                fail_msg("gw_store_open(%s): %d %s", f->dir, r, err);
        assert_non_null(f->s);
}

static int setup(void **state) {
        struct fixture *f = calloc(1, sizeof *f);
        assert_non_null(f);
        snprintf(f->dir, sizeof f->dir, "/tmp/gw-test-store-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        fake_wall_now = CLOCK_BASE;
        gw_now_wall = fake_wall;
        store_open_ok(f);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        struct fixture *f = *state;
        f->s = gw_store_close(f->s);
        rm_rf(f->dir);
        struct stat st;
        assert_int_equal(stat(f->dir, &st), -1); /* really gone */
        gw_now_wall = gw_clock_wall;
        free(f);
        return 0;
}

/* A second connection, straight to the file, to look at what is really committed. */
static sqlite3 *raw_open(const char *dir) {
        char path[512];
        sqlite3 *db = NULL;
        snprintf(path, sizeof path, "%s/gpuward.db", dir);
        assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        return db;
}

static long long raw_int(const char *dir, const char *sql) {
        sqlite3 *db = raw_open(dir);
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        long long v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return v;
}

static void raw_text(const char *dir, const char *sql, char *out, size_t n) {
        sqlite3 *db = raw_open(dir);
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        const unsigned char *t = sqlite3_column_text(st, 0);
        snprintf(out, n, "%s", t ? (const char *) t : "(null)");
        sqlite3_finalize(st);
        sqlite3_close(db);
}

static void raw_exec(const char *dir, const char *sql) {
        sqlite3 *db = raw_open(dir);
        assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
}

/* Strings that trip naive encodings: spaces, '=', non-ASCII, empty. */
static const char *const tricky_argv[] = {
        "", "python3", "train.py", "--note", "lr = 0.1  warm up", "a=b=c", "ünïcødé ✓ 日本語", "", "\t\"'\\", NULL,
};
static const char *const tricky_env[] = {
        "PATH=/usr/local/bin:/usr/bin", "EMPTY=", "SPACES=a b  c ", "EQ=x=y==z", "UNI=héllo wörld 🚀", NULL,
};
static const char *const tricky_env_extra[] = { "K=V", "", "LANG=C.UTF-8", NULL };

static struct gw_job *job_new(uint32_t uid, enum gw_job_state st) {
        struct gw_job *j = gw_xcalloc(1, sizeof *j);
        j->name = gw_xstrdup("smoke test ✓");
        j->uid = uid;
        j->gid = uid + 1;
        j->user = gw_xstrdup(uid == 1000 ? "alice" : "bob");
        j->state = st;
        j->wait_reason = st == GW_JOB_HELD ? GW_REASON_HELD : GW_REASON_RESOURCES;
        j->priority = -7;
        j->ngpus = 2;
        j->gpu_mem = UINT64_C(80) << 30;
        j->time_limit = 1800 * GW_USEC_PER_SEC;
        j->after_job = 16;
        j->after_kind = GW_DEP_KIND_ANY;
        j->argv = gw_strv_copy((char *const *) tricky_argv);
        j->env = gw_strv_copy((char *const *) tricky_env);
        j->env_extra = gw_strv_copy((char *const *) tricky_env_extra);
        j->cwd = gw_xstrdup("/home/alice/my project");
        j->output = gw_xstrdup("/home/alice/out put.log");
        j->log_path = gw_xstrdup("/var/lib/gpuward/logs/x.log");
        j->submit_time = CLOCK_BASE + 123456;
        j->attempt = 1;
        return j;
}

static void assert_str_or_null(const char *a, const char *b, const char *what) {
        if (!a || !b) {
                if (a != b)
                        fail_msg("%s: '%s' vs '%s'", what, a ? a : "(null)", b ? b : "(null)");
                return;
        }
        if (strcmp(a, b) != 0)
                fail_msg("%s: '%s' vs '%s'", what, a, b);
}

static void assert_strv_equal(char *const *a, char *const *b, const char *what) {
        if (!a || !b) {
                if (a != b)
                        fail_msg("%s: one vector is NULL", what);
                return;
        }
        size_t na = gw_strv_length(a), nb = gw_strv_length(b);
        if (na != nb)
                fail_msg("%s: %zu vs %zu elements", what, na, nb);
        for (size_t i = 0; i < na; i++)
                if (strcmp(a[i], b[i]) != 0)
                        fail_msg("%s[%zu]: '%s' vs '%s'", what, i, a[i], b[i]);
}

static void assert_job_equal(const struct gw_job *a, const struct gw_job *b) {
        assert_int_equal(a->id, b->id);
        assert_str_or_null(a->name, b->name, "name");
        assert_int_equal(a->uid, b->uid);
        assert_int_equal(a->gid, b->gid);
        assert_str_or_null(a->user, b->user, "user");
        assert_int_equal(a->state, b->state);
        assert_int_equal(a->wait_reason, b->wait_reason);
        assert_str_or_null(a->end_reason, b->end_reason, "end_reason");
        assert_int_equal(a->priority, b->priority);
        assert_int_equal(a->ngpus, b->ngpus);
        assert_int_equal(a->gpu_mem, b->gpu_mem);
        assert_int_equal(a->time_limit, b->time_limit);
        assert_int_equal(a->after_job, b->after_job);
        assert_int_equal(a->after_kind, b->after_kind);
        assert_strv_equal(a->argv, b->argv, "argv");
        assert_strv_equal(a->env, b->env, "env");
        assert_strv_equal(a->env_extra, b->env_extra, "env_extra");
        assert_str_or_null(a->cwd, b->cwd, "cwd");
        assert_str_or_null(a->output, b->output, "output");
        assert_str_or_null(a->log_path, b->log_path, "log_path");
        assert_int_equal(a->gpu_mask, b->gpu_mask);
        assert_int_equal(a->submit_time, b->submit_time);
        assert_int_equal(a->start_time, b->start_time);
        assert_int_equal(a->end_time, b->end_time);
        assert_int_equal(a->has_exit, b->has_exit);
        assert_int_equal(a->exit_code, b->exit_code);
        assert_int_equal(a->signal, b->signal);
        assert_int_equal(a->attempt, b->attempt);
        assert_int_equal(a->pid, b->pid);
        assert_int_equal(a->shim_pid, b->shim_pid);
        assert_int_equal(a->pid_start, b->pid_start);
        assert_int_equal(a->shim_start, b->shim_start);
        assert_str_or_null(a->cgroup, b->cgroup, "cgroup");
        assert_int_equal(a->stop_state, b->stop_state);
        assert_str_or_null(a->stop_reason, b->stop_reason, "stop_reason");
}

static int64_t insert(struct gw_store *s, uint32_t uid, enum gw_job_state st) {
        struct gw_job *j = job_new(uid, st);
        j->id = -1;
        assert_int_equal(gw_store_job_insert(s, j, "submitted"), 0);
        int64_t id = j->id;
        assert_true(id > 0);
        gw_job_free(j);
        return id;
}

static void open_creates_db(void **state) {
        struct fixture *f = *state;
        char path[512], mode[32];
        struct stat st;
        snprintf(path, sizeof path, "%s/gpuward.db", f->dir);
        assert_int_equal(stat(path, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(raw_int(f->dir, "PRAGMA user_version"), GW_TEST_N_MIGRATIONS);
        raw_text(f->dir, "PRAGMA journal_mode", mode, sizeof mode);
        assert_string_equal(mode, "wal");
        assert_int_equal(raw_int(f->dir, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
                                         "name IN ('jobs', 'job_events', 'gpus')"),
                         3);
}

static void open_bad_dir(void **state) {
        (void) state;
        struct gw_store *s = NULL;
        char err[256] = "";
        assert_true(gw_store_open("/nonexistent-gw-test/dir", &s, err, sizeof err) < 0);
        assert_null(s);
        assert_true(err[0] != '\0');
}

static void job_round_trip(void **state) {
        struct fixture *f = *state;
        struct gw_job *j = job_new(1000, GW_JOB_PENDING);
        j->id = 4242; /* ignored */
        assert_int_equal(gw_store_job_insert(f->s, j, "submitted by alice"), 0);
        assert_int_equal(j->id, 1);

        struct gw_job *got = NULL;
        assert_int_equal(gw_store_job_get(f->s, j->id, &got), 0);
        assert_non_null(got);
        assert_job_equal(got, j);
        /* Spelled out too, so a broken comparison helper cannot hide a broken store. */
        assert_int_equal(gw_strv_length(got->argv), N_ELEMS(tricky_argv) - 1);
        assert_string_equal(got->argv[0], "");
        assert_string_equal(got->argv[4], "lr = 0.1  warm up");
        assert_string_equal(got->argv[6], "ünïcødé ✓ 日本語");
        assert_string_equal(got->argv[7], "");
        assert_string_equal(got->env[1], "EMPTY=");
        assert_string_equal(got->env_extra[1], "");
        assert_null(got->env_extra[3]);
        got = gw_job_free(got);

        enum gw_job_state st = _GW_JOB_STATE_INVALID;
        assert_int_equal(gw_store_job_state(f->s, j->id, &st), 0);
        assert_int_equal(st, GW_JOB_PENDING);
        gw_job_free(j);
}

/* NULL env (minimal) and an empty env are different requests and must stay apart. */
static void job_null_and_empty_vectors(void **state) {
        struct fixture *f = *state;
        struct gw_job *j = job_new(1000, GW_JOB_PENDING);
        gw_strv_free(j->env);
        j->env = NULL;
        gw_strv_free(j->env_extra);
        j->env_extra = gw_xcalloc(1, sizeof(char *));
        free(j->output);
        j->output = NULL;
        assert_int_equal(gw_store_job_insert(f->s, j, NULL), 0);

        struct gw_job *got = NULL;
        assert_int_equal(gw_store_job_get(f->s, j->id, &got), 0);
        assert_null(got->env);
        assert_non_null(got->env_extra);
        assert_null(got->env_extra[0]);
        assert_null(got->output);
        assert_job_equal(got, j);
        gw_job_free(got);
        gw_job_free(j);
}

static void job_lifecycle_events(void **state) {
        struct fixture *f = *state;
        struct gw_job *j = job_new(1000, GW_JOB_PENDING), *got = NULL;
        assert_int_equal(gw_store_job_insert(f->s, j, "submitted by alice"), 0);

        j->state = GW_JOB_RUNNING;
        j->wait_reason = GW_REASON_NONE;
        j->gpu_mask = (UINT64_C(1) << 1) | (UINT64_C(1) << 3) | (UINT64_C(1) << 63);
        j->start_time = CLOCK_BASE + 10 * GW_USEC_PER_SEC;
        j->pid = 4242;
        j->shim_pid = 4241;
        j->pid_start = UINT64_C(9876543210);
        j->shim_start = UINT64_C(9876543200);
        j->cgroup = gw_xstrdup("/sys/fs/cgroup/gpuward/job-1");
        free(j->log_path);
        j->log_path = gw_xstrdup("/var/lib/gpuward/logs/1.log");
        j->priority = 5;
        assert_int_equal(gw_store_job_update(f->s, j, "start", "started on GPUs 1,3,63"), 0);
        assert_int_equal(gw_store_job_get(f->s, j->id, &got), 0);
        assert_job_equal(got, j);
        got = gw_job_free(got);

        /* No kind: columns change, no event. */
        j->attempt = 2;
        assert_int_equal(gw_store_job_update(f->s, j, NULL, NULL), 0);

        j->state = GW_JOB_COMPLETED;
        j->has_exit = true;
        j->exit_code = 3;
        j->end_time = CLOCK_BASE + 99 * GW_USEC_PER_SEC;
        j->end_reason = gw_xstrdup("exit 3");
        assert_int_equal(gw_store_job_update(f->s, j, "end", "exit 3"), 0);
        assert_int_equal(gw_store_job_get(f->s, j->id, &got), 0);
        assert_job_equal(got, j);
        assert_true(got->has_exit);
        assert_int_equal(got->exit_code, 3);
        got = gw_job_free(got);

        static const struct {
                const char *kind, *message;
                enum gw_job_state state;
        } want[] = {
                { "submit", "submitted by alice", GW_JOB_PENDING },
                { "start", "started on GPUs 1,3,63", GW_JOB_RUNNING },
                { "end", "exit 3", GW_JOB_COMPLETED },
        };
        struct gw_job_event *ev = NULL;
        size_t n = 0;
        assert_int_equal(gw_store_job_events(f->s, j->id, &ev, &n), 0);
        assert_int_equal(n, N_ELEMS(want));
        for (size_t i = 0; i < n; i++) {
                assert_string_equal(ev[i].kind, want[i].kind);
                assert_string_equal(ev[i].message, want[i].message);
                assert_int_equal(ev[i].state, want[i].state);
                if (i > 0)
                        assert_true(ev[i].time > ev[i - 1].time);
                assert_true(ev[i].time > CLOCK_BASE && ev[i].time <= fake_wall_now);
        }
        gw_job_events_free(ev, n);

        /* A bare event, and a NULL message stored as "". */
        assert_int_equal(gw_store_job_event(f->s, j->id, GW_JOB_COMPLETED, "note", NULL), 0);
        assert_int_equal(gw_store_job_events(f->s, j->id, &ev, &n), 0);
        assert_int_equal(n, 4);
        assert_string_equal(ev[3].kind, "note");
        assert_string_equal(ev[3].message, "");
        gw_job_events_free(ev, n);
        gw_job_free(j);
}

static void unknown_ids(void **state) {
        struct fixture *f = *state;
        (void) insert(f->s, 1000, GW_JOB_PENDING);
        static const int64_t ids[] = { 0, -1, 2, 999999, INT64_MAX };
        for (size_t i = 0; i < N_ELEMS(ids); i++) {
                static struct gw_job sentinel;
                enum gw_job_state st = GW_JOB_RECLAIMED;
                struct gw_job *got = &sentinel; /* must stay untouched */
                assert_int_equal(gw_store_job_state(f->s, ids[i], &st), -ENOENT);
                assert_int_equal(st, GW_JOB_RECLAIMED);
                assert_int_equal(gw_store_job_get(f->s, ids[i], &got), -ENOENT);
                assert_ptr_equal(got, &sentinel);
                struct gw_job_event *ev = NULL;
                size_t n = 7;
                assert_int_equal(gw_store_job_events(f->s, ids[i], &ev, &n), 0);
                assert_int_equal(n, 0);
                free(ev);
        }
}

struct collect {
        int64_t ids[64];
        enum gw_job_state states[64];
        size_t n;
        size_t stop_after; /* 0 = never */
};

static int collect_cb(struct gw_job *j, void *userdata) {
        struct collect *c = userdata;
        assert_true(c->n < N_ELEMS(c->ids));
        c->ids[c->n] = j->id;
        c->states[c->n] = j->state;
        c->n++;
        /* Each job arrives whole. */
        assert_int_equal(gw_strv_length(j->argv), N_ELEMS(tricky_argv) - 1);
        gw_job_free(j);
        return c->stop_after && c->n >= c->stop_after ? -ECANCELED : 0;
}

static void jobs_active(void **state) {
        struct fixture *f = *state;
        int64_t id[_GW_JOB_STATE_MAX * 2];
        /* Every state twice, interleaved. */
        for (int k = 0; k < _GW_JOB_STATE_MAX * 2; k++)
                id[k] = insert(f->s, 1000, (enum gw_job_state)(k % _GW_JOB_STATE_MAX));
        struct collect c = { 0 };
        assert_int_equal(gw_store_jobs_active(f->s, collect_cb, &c), 0);
        size_t w = 0;
        for (int k = 0; k < _GW_JOB_STATE_MAX * 2; k++) {
                enum gw_job_state st = (enum gw_job_state)(k % _GW_JOB_STATE_MAX);
                if (st != GW_JOB_PENDING && st != GW_JOB_HELD && st != GW_JOB_RUNNING)
                        continue;
                assert_true(w < c.n);
                assert_int_equal(c.ids[w], id[k]);
                assert_int_equal(c.states[w], st);
                w++;
        }
        assert_int_equal(c.n, w);
        assert_int_equal(w, 6);

        /* A callback error stops the walk and is returned. */
        struct collect stop = { .stop_after = 2 };
        assert_int_equal(gw_store_jobs_active(f->s, collect_cb, &stop), -ECANCELED);
        assert_int_equal(stop.n, 2);
}

#define M(s) (1u << (s))

static void jobs_list(void **state) {
        struct fixture *f = *state;
        static const struct {
                uint32_t uid;
                enum gw_job_state st;
        } jobs[] = {
                { 1000, GW_JOB_COMPLETED }, { 1001, GW_JOB_FAILED },    { 1000, GW_JOB_PENDING },
                { 1000, GW_JOB_CANCELLED }, { 1001, GW_JOB_COMPLETED }, { 1000, GW_JOB_RUNNING },
                { 1001, GW_JOB_TIMEOUT },   { 1000, GW_JOB_COMPLETED }, { 1000, GW_JOB_HELD },
                { 1001, GW_JOB_RECLAIMED }, { 1000, GW_JOB_FAILED },    { 1001, GW_JOB_PENDING },
        };
        int64_t id[N_ELEMS(jobs)];
        for (size_t i = 0; i < N_ELEMS(jobs); i++)
                id[i] = insert(f->s, jobs[i].uid, jobs[i].st);
        for (size_t i = 0; i < N_ELEMS(jobs); i++)
                assert_int_equal(id[i], (int64_t) i + 1); /* the want tables below rely on it */

        const unsigned final =
                M(GW_JOB_COMPLETED) | M(GW_JOB_FAILED) | M(GW_JOB_CANCELLED) | M(GW_JOB_TIMEOUT) | M(GW_JOB_RECLAIMED);
        const struct {
                struct gw_store_filter f;
                int64_t want[16]; /* ids, newest first, 0-terminated */
        } cases[] = {
                { { 0 }, { 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0 } },
                { { .state_mask = M(GW_JOB_COMPLETED) }, { 8, 5, 1, 0 } },
                { { .state_mask = final }, { 11, 10, 8, 7, 5, 4, 2, 1, 0 } },
                { { .state_mask = M(GW_JOB_PENDING) | M(GW_JOB_HELD) }, { 12, 9, 3, 0 } },
                { { .by_uid = true, .uid = 1001 }, { 12, 10, 7, 5, 2, 0 } },
                { { .by_uid = true, .uid = 0 }, { 0 } },
                { { .before_id = 6 }, { 5, 4, 3, 2, 1, 0 } },
                { { .before_id = 1 }, { 0 } },
                { { .limit = 3 }, { 12, 11, 10, 0 } },
                { { .limit = 1 }, { 12, 0 } },
                { { .state_mask = final, .by_uid = true, .uid = 1000, .before_id = 11, .limit = 2 }, { 8, 4, 0 } },
                { { .state_mask = final, .by_uid = true, .uid = 1000, .before_id = 4, .limit = 2 }, { 1, 0 } },
                { { .state_mask = M(GW_JOB_RECLAIMED), .by_uid = true, .uid = 1000 }, { 0 } },
        };
        for (size_t k = 0; k < N_ELEMS(cases); k++) {
                struct collect c = { 0 };
                assert_int_equal(gw_store_jobs_list(f->s, &cases[k].f, collect_cb, &c), 0);
                size_t nw = 0;
                while (cases[k].want[nw])
                        nw++;
                if (c.n != nw)
                        fail_msg("case %zu: %zu jobs, want %zu", k, c.n, nw);
                for (size_t i = 0; i < nw; i++) {
                        if (c.ids[i] != cases[k].want[i])
                                fail_msg("case %zu: [%zu] is %lld, want %lld", k, i, (long long) c.ids[i],
                                         (long long) cases[k].want[i]);
                        assert_int_equal(c.states[i], jobs[c.ids[i] - 1].st);
                }
        }

        struct collect stop = { .stop_after = 1 };
        struct gw_store_filter all = { 0 };
        assert_int_equal(gw_store_jobs_list(f->s, &all, collect_cb, &stop), -ECANCELED);
        assert_int_equal(stop.n, 1);
}

static int count_cb(struct gw_job *j, void *userdata) {
        (*(size_t *) userdata)++;
        gw_job_free(j);
        return 0;
}

static void jobs_list_default_limit(void **state) {
        struct fixture *f = *state;
        assert_int_equal(gw_store_begin(f->s), 0);
        for (int i = 0; i < 105; i++)
                (void) insert(f->s, 1000, GW_JOB_COMPLETED);
        assert_int_equal(gw_store_commit(f->s), 0);
        struct gw_store_filter flt = { 0 };
        size_t n = 0;
        assert_int_equal(gw_store_jobs_list(f->s, &flt, count_cb, &n), 0);
        assert_int_equal(n, 100);
        flt.limit = 200;
        n = 0;
        assert_int_equal(gw_store_jobs_list(f->s, &flt, count_cb, &n), 0);
        assert_int_equal(n, 105);
}

static void reopen_keeps_data(void **state) {
        struct fixture *f = *state;
        struct gw_job *j = job_new(1001, GW_JOB_RUNNING);
        assert_int_equal(gw_store_job_insert(f->s, j, "x"), 0);
        struct gw_store_gpu g = { .index = 2,
                                  .uuid = "GPU-2",
                                  .name = "H100",
                                  .mem_total = 1,
                                  .drained = true,
                                  .drain_reason = "ecc" };
        assert_int_equal(gw_store_gpu_upsert(f->s, &g), 0);
        long long tables = raw_int(f->dir, "SELECT count(*) FROM sqlite_master");

        /* Reopening must not run the migrations again (they would fail on the existing tables
         * or, worse, recreate them empty). */
        f->s = gw_store_close(f->s);
        store_open_ok(f);
        assert_int_equal(raw_int(f->dir, "PRAGMA user_version"), GW_TEST_N_MIGRATIONS);
        assert_int_equal(raw_int(f->dir, "SELECT count(*) FROM sqlite_master"), tables);

        struct gw_job *got = NULL;
        assert_int_equal(gw_store_job_get(f->s, j->id, &got), 0);
        assert_job_equal(got, j);
        got = gw_job_free(got);
        struct gw_store_gpu gg;
        assert_int_equal(gw_store_gpu_get(f->s, 2, &gg), 0);
        assert_true(gg.drained);
        assert_string_equal(gg.drain_reason, "ecc");
        struct gw_job_event *ev = NULL;
        size_t n = 0;
        assert_int_equal(gw_store_job_events(f->s, j->id, &ev, &n), 0);
        assert_int_equal(n, 1);
        gw_job_events_free(ev, n);
        /* Ids keep growing across restarts. */
        assert_true(insert(f->s, 1000, GW_JOB_PENDING) > j->id);
        gw_job_free(j);

        /* A schema from a newer gpuwardd is refused, not migrated down or clobbered. */
        f->s = gw_store_close(f->s);
        raw_exec(f->dir, "PRAGMA user_version = 99");
        char err[256] = "";
        struct gw_store *s2 = NULL;
        assert_int_equal(gw_store_open(f->dir, &s2, err, sizeof err), -EPROTO);
        assert_null(s2);
        assert_non_null(strstr(err, "99"));
        char restore[64];
        snprintf(restore, sizeof restore, "PRAGMA user_version = %d", gw_store_schema_version());
        raw_exec(f->dir, restore);
        store_open_ok(f);
}

static long long committed_jobs(const char *dir) { return raw_int(dir, "SELECT count(*) FROM jobs"); }

static void batch_commit_and_rollback(void **state) {
        struct fixture *f = *state;
        /* Nested: only the outermost commit commits. */
        assert_int_equal(gw_store_begin(f->s), 0);
        assert_int_equal(gw_store_begin(f->s), 0);
        int64_t a = insert(f->s, 1000, GW_JOB_PENDING);
        int64_t b = insert(f->s, 1000, GW_JOB_PENDING);
        assert_int_equal(gw_store_commit(f->s), 0);
        assert_int_equal(committed_jobs(f->dir), 0); /* another connection sees nothing yet */
        enum gw_job_state st;
        assert_int_equal(gw_store_job_state(f->s, a, &st), 0); /* this one does */
        assert_int_equal(gw_store_commit(f->s), 0);
        assert_int_equal(committed_jobs(f->dir), 2);

        /* Rollback of a batch discards everything inserted in it, events included. */
        assert_int_equal(gw_store_begin(f->s), 0);
        assert_int_equal(gw_store_begin(f->s), 0);
        int64_t c = insert(f->s, 1000, GW_JOB_PENDING);
        int64_t d = insert(f->s, 1001, GW_JOB_HELD);
        assert_int_equal(gw_store_commit(f->s), 0);
        assert_int_equal(gw_store_rollback(f->s), 0);
        assert_int_equal(gw_store_job_state(f->s, c, &st), -ENOENT);
        assert_int_equal(gw_store_job_state(f->s, d, &st), -ENOENT);
        assert_int_equal(committed_jobs(f->dir), 2);
        assert_int_equal(raw_int(f->dir, "SELECT count(*) FROM job_events"), 2);
        assert_int_equal(gw_store_job_state(f->s, b, &st), 0);

        /* The store is usable afterwards, outside any batch (commits at once). */
        (void) insert(f->s, 1000, GW_JOB_PENDING);
        assert_int_equal(committed_jobs(f->dir), 3);
        /* Unbalanced commit/rollback are harmless. */
        assert_int_equal(gw_store_commit(f->s), 0);
        assert_int_equal(gw_store_rollback(f->s), 0);
}

/* A failed write inside a batch undoes only itself: the daemon batches a loop iteration's
 * job ends, and one bad write must not silently drop the others. */
static void inner_rollback_keeps_the_batch(void **state) {
        struct fixture *f = *state;
        enum gw_job_state st;
        assert_int_equal(gw_store_begin(f->s), 0);
        int64_t kept = insert(f->s, 1000, GW_JOB_PENDING);
        assert_int_equal(gw_store_begin(f->s), 0);
        int64_t undone = insert(f->s, 1000, GW_JOB_PENDING);
        assert_int_equal(gw_store_rollback(f->s), 0);
        int64_t after = insert(f->s, 1001, GW_JOB_HELD);
        assert_int_equal(committed_jobs(f->dir), 0);
        assert_int_equal(gw_store_commit(f->s), 0);
        assert_int_equal(committed_jobs(f->dir), 2);
        assert_int_equal(gw_store_job_state(f->s, kept, &st), 0);
        assert_int_equal(gw_store_job_state(f->s, after, &st), 0);
        /* The undone id was free again (ids are rowids), so the next job took it. */
        assert_int_equal(after, undone);
        assert_int_equal(raw_int(f->dir, "SELECT count(*) FROM job_events"), 2);
}

static void gpu_round_trip(void **state) {
        struct fixture *f = *state;
        struct gw_store_gpu g = { .index = 0, .mem_total = UINT64_C(85899345920) }, got;
        snprintf(g.uuid, sizeof g.uuid, "GPU-8d3f1a2b-0000-1111-2222-333344445555");
        snprintf(g.name, sizeof g.name, "NVIDIA H100 80GB HBM3");
        assert_int_equal(gw_store_gpu_get(f->s, 0, &got), -ENOENT);
        assert_int_equal(gw_store_gpu_upsert(f->s, &g), 0);
        memset(&got, 0x5a, sizeof got);
        assert_int_equal(gw_store_gpu_get(f->s, 0, &got), 0);
        assert_int_equal(got.index, 0);
        assert_string_equal(got.uuid, g.uuid);
        assert_string_equal(got.name, g.name);
        assert_int_equal(got.mem_total, g.mem_total);
        assert_false(got.drained);
        assert_string_equal(got.drain_reason, "");

        /* Upsert: the same index is updated in place; drain with a reason. */
        g.drained = true;
        snprintf(g.drain_reason, sizeof g.drain_reason, "fan failure — ünïcode, \"quoted\"");
        g.mem_total = 42;
        assert_int_equal(gw_store_gpu_upsert(f->s, &g), 0);
        assert_int_equal(gw_store_gpu_get(f->s, 0, &got), 0);
        assert_true(got.drained);
        assert_string_equal(got.drain_reason, g.drain_reason);
        assert_int_equal(got.mem_total, 42);
        assert_int_equal(raw_int(f->dir, "SELECT count(*) FROM gpus"), 1);

        /* A second GPU does not disturb the first; undraining clears the reason. */
        struct gw_store_gpu h = { .index = 7, .uuid = "GPU-7", .name = "A100", .mem_total = 1 };
        assert_int_equal(gw_store_gpu_upsert(f->s, &h), 0);
        g.drained = false;
        g.drain_reason[0] = '\0';
        assert_int_equal(gw_store_gpu_upsert(f->s, &g), 0);
        assert_int_equal(gw_store_gpu_get(f->s, 0, &got), 0);
        assert_false(got.drained);
        assert_string_equal(got.drain_reason, "");
        assert_int_equal(gw_store_gpu_get(f->s, 7, &got), 0);
        assert_int_equal(got.index, 7);
        assert_string_equal(got.uuid, "GPU-7");
        assert_string_equal(got.name, "A100");
        assert_int_equal(gw_store_gpu_get(f->s, 1, &got), -ENOENT);
}

/* A stop is written with the job's row before its processes are signalled: a restarted
 * store gives it back with the still-RUNNING job, and a value that is no final state reads
 * as none. */
static void stop_survives_reopen(void **state) {
        struct fixture *f = *state;
        struct gw_job *j = job_new(1000, GW_JOB_RUNNING), *got = NULL;
        assert_int_equal(gw_store_job_insert(f->s, j, "submitted by alice"), 0);
        assert_int_equal(gw_store_job_get(f->s, j->id, &got), 0);
        assert_int_equal(got->stop_state, GW_JOB_PENDING);
        assert_null(got->stop_reason);
        got = gw_job_free(got);

        j->stop_state = GW_JOB_CANCELLED;
        j->stop_reason = gw_xstrdup("cancelled by alice");
        assert_int_equal(gw_store_job_update(f->s, j, "terminate", "cancelled by alice: SIGTERM"), 0);
        f->s = gw_store_close(f->s);
        store_open_ok(f);
        struct collect c = { 0 };
        assert_int_equal(gw_store_jobs_active(f->s, collect_cb, &c), 0);
        assert_int_equal(c.n, 1);
        assert_int_equal(c.states[0], GW_JOB_RUNNING);
        assert_int_equal(gw_store_job_get(f->s, j->id, &got), 0);
        assert_job_equal(got, j);
        got = gw_job_free(got);

        raw_exec(f->dir, "UPDATE jobs SET stop_state = 2");
        assert_int_equal(gw_store_job_get(f->s, j->id, &got), 0);
        assert_int_equal(got->stop_state, GW_JOB_PENDING);
        got = gw_job_free(got);
        gw_job_free(j);
}

static long long file_size(const char *dir, const char *name) {
        char p[512];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", dir, name);
        return stat(p, &st) == 0 ? (long long) st.st_size : -1;
}

/* With checkpoints in the background, commits leave them to the store's thread: the rows
 * reach the database file (a checkpoint copied them) although no commit checkpointed. */
static void checkpoints_in_background(void **state) {
        struct fixture *f = *state;
        char err[256] = "";
        if (gw_store_checkpoint_in_background(f->s, err, sizeof err) < 0)
                fail_msg("%s", err);
        long long before = file_size(f->dir, "gpuward.db");
        for (int i = 0; i < 1500; i++)
                (void) insert(f->s, 1000, GW_JOB_PENDING);
        assert_true(file_size(f->dir, "gpuward.db-wal") > 1000LL * 4096);
        long long after = before;
        for (int i = 0; i < 500 && (after = file_size(f->dir, "gpuward.db")) <= before + 64 * 4096; i++)
                usleep(10 * 1000); /* bounded: 5 s */
        if (after <= before + 64 * 4096)
                fail_msg("the database file stayed at %lld bytes (%lld before): no checkpoint ran", after, before);
        /* Closing stops the thread; what was committed is all there. */
        f->s = gw_store_close(f->s);
        assert_int_equal(committed_jobs(f->dir), 1500);
        store_open_ok(f);
}

/* A restarted daemon reads back only the attempt it re-adopts: from its newest "start" on. */
static void attempt_events(void **state) {
        struct fixture *f = *state;
        struct gw_job *j = job_new(1000, GW_JOB_PENDING);
        struct gw_job_event *ev = NULL;
        size_t n = 0;
        assert_int_equal(gw_store_job_insert(f->s, j, "submitted"), 0);
        assert_int_equal(gw_store_job_attempt_events(f->s, j->id, &ev, &n), 0);
        assert_int_equal(n, 1); /* never started: all of them */
        gw_job_events_free(ev, n);

        static const char *const kinds[] = { "start", "xid", "terminate", "retry",
                                             "start", "xid", "terminate", "terminate" };
        for (size_t i = 0; i < N_ELEMS(kinds); i++)
                assert_int_equal(gw_store_job_event(f->s, j->id, GW_JOB_RUNNING, kinds[i], i < 4 ? "first" : "second"),
                                 0);
        assert_int_equal(gw_store_job_event(f->s, j->id + 1, GW_JOB_RUNNING, "start", "another job's"), 0);
        assert_int_equal(gw_store_job_attempt_events(f->s, j->id, &ev, &n), 0);
        assert_int_equal(n, 4);
        for (size_t i = 0; i < n; i++) {
                assert_string_equal(ev[i].kind, kinds[4 + i]);
                assert_string_equal(ev[i].message, "second");
        }
        gw_job_events_free(ev, n);
        gw_job_free(j);
}

/* A failure the daemon finds in what the store holds is told as the store's own, whatever
 * SQLite did since; the next real failure replaces it. */
static void set_error(void **state) {
        struct fixture *f = *state;
        struct gw_job *j = job_new(1000, GW_JOB_PENDING);
        assert_int_equal(gw_store_job_insert(f->s, j, "submitted"), 0);
        assert_int_equal(gw_store_set_error(f->s, -ESTALE, "it knows no job 7 attempt 1"), -ESTALE);
        enum gw_job_state st;
        assert_int_equal(gw_store_job_state(f->s, j->id, &st), 0); /* a query that works */
        assert_string_equal(gw_store_errmsg(f->s), "it knows no job 7 attempt 1");
        assert_int_equal(gw_store_error_kind(f->s), -ESTALE);
        gw_job_free(j);
}

/* The start's clock, in the job's row, is written through a statement kept prepared: each write binds all
 * of its own values (none left from the one before), a rolled-back write leaves the row as it
 * was, and the kept statement holds no lock that would keep the store from closing. */
static void job_clock_kept_statement(void **state) {
        struct fixture *f = *state;
        gw_usec_t v = 0;
        int64_t id[3];
        for (int k = 0; k < 3; k++) {
                struct gw_job *j = job_new(1000, GW_JOB_RUNNING);
                assert_int_equal(gw_store_job_insert(f->s, j, "submitted"), 0);
                id[k] = j->id;
                gw_job_free(j);
        }
        assert_int_equal(gw_store_job_clock_put(f->s, id[0], 1, "boot-a", 100), 0);
        assert_int_equal(gw_store_job_clock_put(f->s, id[1], 1, "boot-b", 200), 0);
        assert_int_equal(gw_store_job_clock_get(f->s, id[0], 1, "boot-a", &v), 0);
        assert_int_equal(v, 100);
        assert_int_equal(gw_store_job_clock_get(f->s, id[1], 1, "boot-a", &v), -ENOENT); /* another boot */
        assert_int_equal(gw_store_job_clock_put(f->s, id[0], 2, "boot-a", 300), 0); /* the attempt before's, replaced */
        assert_int_equal(gw_store_job_clock_get(f->s, id[0], 1, "boot-a", &v), -ENOENT);
        assert_int_equal(gw_store_job_clock_get(f->s, id[0], 2, "boot-a", &v), 0);
        assert_int_equal(v, 300);
        assert_int_equal(gw_store_begin(f->s), 0);
        assert_int_equal(gw_store_job_clock_put(f->s, id[0], 3, "boot-a", 400), 0);
        assert_int_equal(gw_store_rollback(f->s), 0);
        assert_int_equal(gw_store_job_clock_get(f->s, id[0], 2, "boot-a", &v), 0);
        assert_int_equal(v, 300);
        assert_int_equal(raw_int(f->dir, "SELECT count(*) FROM jobs WHERE clock_boot IS NOT NULL"), 2);
        f->s = gw_store_close(f->s);
        store_open_ok(f);
        assert_int_equal(gw_store_job_clock_get(f->s, id[0], 2, "boot-a", &v), 0);
        assert_int_equal(gw_store_job_clock_put(f->s, id[2], 1, "boot-b", 500), 0);
        assert_int_equal(raw_int(f->dir, "SELECT count(*) FROM jobs WHERE clock_boot IS NOT NULL"), 3);
        assert_int_equal(gw_store_job_clock_put(f->s, id[2] + 1, 1, "boot-b", 600), -ENOENT); /* no such job */
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                T(open_creates_db),
                cmocka_unit_test(open_bad_dir),
                T(job_round_trip),
                T(job_null_and_empty_vectors),
                T(job_lifecycle_events),
                T(attempt_events),
                T(set_error),
                T(unknown_ids),
                T(jobs_active),
                T(jobs_list),
                T(jobs_list_default_limit),
                T(reopen_keeps_data),
                T(batch_commit_and_rollback),
                T(inner_rollback_keeps_the_batch),
                T(gpu_round_trip),
                T(stop_survives_reopen),
                T(checkpoints_in_background),
                T(job_clock_kept_statement),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
