#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "store/store_internal.h"
#include "store/walbatch.h"

enum stmt_id {
        ST_JOB_INSERT,
        ST_JOB_UPDATE,
        ST_EVENT_INSERT,
        ST_JOB_GET,
        ST_JOB_STATE,
        ST_JOB_EVENTS,
        ST_ATTEMPT_EVENTS,
        ST_JOBS_ACTIVE,
        ST_GPU_UPSERT,
        ST_GPU_GET,
        ST_SERIES_ADD,
        ST_SERIES_GET,
        ST_ATTEMPT_ADD,
        ST_ATTEMPTS_GET,
        ST_BEGIN,
        ST_COMMIT,
        ST_ROLLBACK,
        ST_SAVEPOINT,
        ST_RELEASE,
        ST_ROLLBACK_TO,
        _ST_MAX,
};

#define JOB_COLUMNS                                                                                              \
        "id, name, uid, gid, user, state, wait_reason, end_reason, priority, ngpus, gpu_mem, "                   \
        "time_limit, after_job, after_kind, argv, env, env_extra, cwd, output, log_path, "                       \
        "gpu_mask, submit_time, start_time, end_time, has_exit, exit_code, signal, attempt, "                    \
        "pid, shim_pid, pid_start, shim_start, cgroup, telemetry, retries, retry_on, yolo, checkpoint, "         \
        "resume_cmd, not_before, resume_from, idle_policy, progress_file, health_url, booking_id, leak_policy, " \
        "stop_state, stop_reason, warn_signal, warn_before, interactive, array_spec, array_next, array_job, "    \
        "array_index, preemptible, resume_epoch, dataset, publish, publish_metric, mig_profile, mig_count, "     \
        "mig_slices, mig_share, scratch, scratch_name"

static const char *const stmt_sql[_ST_MAX] = {
        [ST_JOB_INSERT] = "INSERT INTO jobs (name, uid, gid, user, state, wait_reason, priority, ngpus, "
                          "gpu_mem, time_limit, after_job, after_kind, argv, env, env_extra, cwd, output, "
                          "log_path, submit_time, attempt, retries, retry_on, yolo, checkpoint, resume_cmd, "
                          "idle_policy, progress_file, health_url, booking_id, leak_policy, warn_signal, warn_before, "
                          "interactive, array_spec, array_next, array_job, array_index, preemptible, dataset, publish, "
                          "publish_metric, mig_profile, mig_count, scratch) "
                          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, "
                          "?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, "
                          "?34, ?35, ?36, ?37, ?38, ?39, ?40, ?41, ?42, ?43, ?44)",
        [ST_JOB_UPDATE] = "UPDATE jobs SET state = ?2, wait_reason = ?3, end_reason = ?4, gpu_mask = ?5, "
                          "start_time = ?6, end_time = ?7, has_exit = ?8, exit_code = ?9, signal = ?10, "
                          "attempt = ?11, pid = ?12, shim_pid = ?13, pid_start = ?14, shim_start = ?15, "
                          "cgroup = ?16, log_path = ?17, priority = ?18, telemetry = ?19, not_before = ?20, "
                          "resume_from = ?21, idle_policy = ?22, stop_state = ?23, stop_reason = ?24, "
                          "resume_epoch = ?25, mig_slices = ?26, mig_share = ?27 WHERE id = ?1",
        [ST_EVENT_INSERT] = "INSERT INTO job_events (job_id, time, state, kind, message) "
                            "VALUES (?1, ?2, ?3, ?4, ?5)",
        [ST_JOB_GET] = "SELECT " JOB_COLUMNS " FROM jobs WHERE id = ?1",
        [ST_JOB_STATE] = "SELECT state FROM jobs WHERE id = ?1",
        [ST_JOB_EVENTS] = "SELECT time, state, kind, message FROM job_events WHERE job_id = ?1 ORDER BY id",
        /* Every attempt begins with a "start" event (lifecycle.c record_start). */
        [ST_ATTEMPT_EVENTS] = "SELECT time, state, kind, message FROM job_events WHERE job_id = ?1 AND id >= "
                              "coalesce((SELECT max(id) FROM job_events WHERE job_id = ?1 AND kind = 'start'), 0) "
                              "ORDER BY id",
        [ST_JOBS_ACTIVE] = "SELECT " JOB_COLUMNS " FROM jobs WHERE state IN (0, 1, 2) ORDER BY id",
        [ST_GPU_UPSERT] = "INSERT INTO gpus (idx, uuid, name, mem_total, drained, drain_reason) "
                          "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(idx) DO UPDATE SET "
                          "uuid = excluded.uuid, name = excluded.name, mem_total = excluded.mem_total, "
                          "drained = excluded.drained, drain_reason = excluded.drain_reason",
        [ST_GPU_GET] = "SELECT idx, uuid, name, mem_total, drained, drain_reason FROM gpus WHERE idx = ?1",
        [ST_SERIES_ADD] = "INSERT OR REPLACE INTO job_series (job_id, gpu, t, util_min, util_mean, util_max, mem_min, "
                          "mem_mean, mem_max) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        [ST_SERIES_GET] = "SELECT gpu, t, util_min, util_mean, util_max, mem_min, mem_mean, mem_max FROM job_series "
                          "WHERE job_id = ?1 AND t >= ?2 ORDER BY gpu, t",
        [ST_ATTEMPT_ADD] = "INSERT OR REPLACE INTO job_attempts (job_id, attempt, gpu_mask, start_time, end_time, "
                           "has_exit, exit_code, signal, class, evidence, resumed_from, epoch, log_path, ckpt_id, "
                           "ckpt_epoch) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        [ST_ATTEMPTS_GET] = "SELECT attempt, gpu_mask, start_time, end_time, has_exit, exit_code, signal, class, "
                            "evidence, resumed_from, epoch, log_path, ckpt_id, ckpt_epoch FROM job_attempts "
                            "WHERE job_id = ?1 ORDER BY attempt",
        /* Deferred: the locks are taken by the first read or write, so a loop iteration that
         * writes nothing (a job's pid arriving, a launcher's answer) costs no fcntl.  This is
         * the only writing connection (the checkpointer's are PASSIVE), so upgrading to the
         * write lock cannot meet another writer. */
        [ST_BEGIN] = "BEGIN",
        [ST_COMMIT] = "COMMIT",
        [ST_ROLLBACK] = "ROLLBACK",
        [ST_SAVEPOINT] = "SAVEPOINT gw_nested",
        [ST_RELEASE] = "RELEASE gw_nested",
        [ST_ROLLBACK_TO] = "ROLLBACK TO gw_nested",
};

struct gw_store {
        sqlite3 *db;
        sqlite3_stmt *stmt[_ST_MAX];
        sqlite3_stmt *kept[_GW_KEPT_MAX]; /* stmt.c's, prepared at their first use */
        int depth; /* open gw_store_begin calls */
        struct gw_store_observer obs;
        /* The last failure, kept because a rollback after it resets SQLite's own message. */
        int last_err; /* negative errno, 0 = none yet */
        char last_msg[512];
        bool masked; /* a rollback's own failure since hides last_msg in SQLite */
        unsigned long write_failures; /* ENOSPC, EROFS, EIO failures so far */
        struct gw_checkpointer *ckpt; /* NULL: SQLite checkpoints inside commits */
};

int gw_store_checkpoint_in_background(struct gw_store *s, char *err, size_t errlen) {
        if (!s->ckpt)
                s->ckpt = gw_checkpointer_start(s->db, err, errlen);
        return s->ckpt ? 0 : -EIO;
}

void gw_store_set_observer(struct gw_store *s, const struct gw_store_observer *o) { s->obs = *o; }

static void tell_job(struct gw_store *s, int64_t id, const struct gw_job *j, enum gw_job_state state, const char *kind,
                     const char *message) {
        if (s->obs.job)
                s->obs.job(s->obs.userdata, id, j, state, kind, message);
}

static int sql_errno(int rc) {
        switch (rc) {
        case SQLITE_FULL:
                return -ENOSPC;
        case SQLITE_READONLY:
                return -EROFS;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                return -EBUSY;
        case SQLITE_NOMEM:
                return -ENOMEM;
        case SQLITE_CONSTRAINT:
                return -EEXIST;
        default:
                return -EIO;
        }
}

static int sql_err(struct gw_store *s) {
        int rc = sqlite3_errcode(s->db), r = sql_errno(rc);
        /* A read-only file system shows up as an I/O error whose system errno says EROFS. */
        int sys = sqlite3_system_errno(s->db);
        if (r == -EIO && (sys == EROFS || sys == ENOSPC))
                r = -sys;
        s->last_err = r;
        s->masked = false;
        if (sys && (r == -EIO || r == -EROFS || r == -ENOSPC))
                snprintf(s->last_msg, sizeof s->last_msg, "%s (%s, %s)", sqlite3_errmsg(s->db), sqlite3_errstr(rc),
                         strerror(sys));
        else
                snprintf(s->last_msg, sizeof s->last_msg, "%s", sqlite3_errmsg(s->db));
        if (r == -ENOSPC || r == -EROFS || r == -EIO)
                s->write_failures++;
        return r;
}

const char *gw_store_errmsg(struct gw_store *s) {
        if (s->last_err && (s->masked || sqlite3_errcode(s->db) == SQLITE_OK))
                return s->last_msg;
        return sqlite3_errmsg(s->db);
}

int gw_store_error_kind(const struct gw_store *s) { return s->last_err; }

int gw_store_set_error(struct gw_store *s, int err, const char *msg) {
        s->last_err = err;
        snprintf(s->last_msg, sizeof s->last_msg, "%s", msg);
        s->masked = true; /* SQLite's own message says nothing of it */
        return err;
}

unsigned long gw_store_write_failures(const struct gw_store *s) { return s->write_failures; }

/* For the store's other files (store_internal.h). */
sqlite3 *gw_store_db(struct gw_store *s) { return s->db; }

sqlite3_stmt **gw_store_kept_slot(struct gw_store *s, enum gw_store_kept k) { return &s->kept[k]; }

void gw_store_booking_saved(struct gw_store *s, const struct gw_store_booking *b) {
        if (s->obs.booking)
                s->obs.booking(s->obs.userdata, b);
}
int gw_store_sql_err(struct gw_store *s) { return sql_err(s); }

static sqlite3_stmt *stmt_get(struct gw_store *s, enum stmt_id id) {
        sqlite3_stmt *st = s->stmt[id];
        (void) sqlite3_reset(st);
        (void) sqlite3_clear_bindings(st);
        return st;
}

static int exec_simple(struct gw_store *s, enum stmt_id id) {
        sqlite3_stmt *st = stmt_get(s, id);
        int rc = sqlite3_step(st);
        (void) sqlite3_reset(st);
        return rc == SQLITE_DONE ? 0 : sql_err(s);
}

/* A rollback after a failure: it fails too when SQLite already rolled back by itself (as it
 * may on SQLITE_FULL or an I/O error), and must not hide the error that caused it. */
static int exec_rollback(struct gw_store *s, enum stmt_id id) {
        sqlite3_stmt *st = stmt_get(s, id);
        int rc = sqlite3_step(st);
        (void) sqlite3_reset(st);
        if (rc == SQLITE_DONE)
                return 0;
        s->masked = true;
        return sql_errno(rc);
}

/* Transactions nest: the outermost is a real one, inner ones are savepoints, so a failed
 * inner write undoes only itself and leaves what the outer transaction holds (the daemon
 * groups one loop iteration's job ends into one commit). */
int gw_store_begin(struct gw_store *s) {
        int r = exec_simple(s, s->depth ? ST_SAVEPOINT : ST_BEGIN);
        if (r == 0)
                s->depth++;
        return r;
}

int gw_store_commit(struct gw_store *s) {
        if (s->depth == 0)
                return 0;
        if (--s->depth > 0)
                return exec_simple(s, ST_RELEASE);
        int r = exec_simple(s, ST_COMMIT);
        if (r < 0)
                (void) exec_rollback(s, ST_ROLLBACK);
        return r;
}

int gw_store_rollback(struct gw_store *s) {
        if (s->depth == 0)
                return 0;
        if (--s->depth > 0) {
                int r = exec_rollback(s, ST_ROLLBACK_TO);
                (void) exec_rollback(s, ST_RELEASE);
                return r;
        }
        return exec_rollback(s, ST_ROLLBACK);
}

/* The database holds every job's command, directory and submitted environment (API keys
 * among them) and the tokens' hashes: only the daemon's user may read it.  SQLite gives the
 * -wal and -shm files the database file's mode; a state dir from before this is mended.
 * Best effort: on a read-only state dir SQLite itself decides what can be opened. */
static void make_private(const char *path) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return;
        (void) fchmod(fd, 0600);
        (void) close(fd);
        char side[4200];
        for (int i = 0; i < 2; i++) {
                snprintf(side, sizeof side, "%s%s", path, i ? "-shm" : "-wal");
                (void) chmod(side, 0600);
        }
}

int gw_store_open(const char *dir, struct gw_store **ret, char *err, size_t errlen) {
        char path[4096];
        if ((size_t) snprintf(path, sizeof path, "%s/gpuward.db", dir) >= sizeof path) {
                snprintf(err, errlen, "state dir path too long");
                return -ENAMETOOLONG;
        }
        make_private(path);
        struct gw_store *s = gw_xcalloc(1, sizeof *s);
        int r = -EIO;
        if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                            gw_walbatch_vfs()) != SQLITE_OK) {
                snprintf(err, errlen, "cannot open %s: %s", path, s->db ? sqlite3_errmsg(s->db) : "out of memory");
                goto fail;
        }
        (void) sqlite3_busy_timeout(s->db, 5000);
        r = gw_store_schema_check(s->db, path, err, errlen);
        if (r < 0)
                goto fail;
        r = -EIO;
        if (sqlite3_exec(s->db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;",
                         NULL, NULL, NULL) != SQLITE_OK) {
                snprintf(err, errlen, "cannot set up %s: %s", path, sqlite3_errmsg(s->db));
                goto fail;
        }
        r = gw_store_migrate(s->db, err, errlen);
        if (r < 0)
                goto fail;
        for (int i = 0; i < _ST_MAX; i++)
                if (sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->stmt[i], NULL) !=
                    SQLITE_OK) {
                        snprintf(err, errlen, "preparing statement %d: %s", i, sqlite3_errmsg(s->db));
                        r = -EIO;
                        goto fail;
                }
        *ret = s;
        return 0;
fail:
        gw_store_close(s);
        return r;
}

struct gw_store *gw_store_close(struct gw_store *s) {
        if (!s)
                return NULL;
        s->ckpt = gw_checkpointer_stop(s->ckpt);
        for (int i = 0; i < _ST_MAX; i++)
                sqlite3_finalize(s->stmt[i]);
        for (int i = 0; i < _GW_KEPT_MAX; i++)
                sqlite3_finalize(s->kept[i]);
        sqlite3_close(s->db);
        free(s);
        return NULL;
}

static void bind_strv(sqlite3_stmt *st, int i, char *const *v) {
        if (!v) {
                sqlite3_bind_null(st, i);
                return;
        }
        size_t len;
        char *blob = gw_strv_pack(v, &len);
        sqlite3_bind_blob(st, i, blob, (int) len, free);
}

static int event_insert(struct gw_store *s, int64_t id, enum gw_job_state state, const char *kind,
                        const char *message) {
        sqlite3_stmt *st = stmt_get(s, ST_EVENT_INSERT);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, gw_now_wall());
        sqlite3_bind_int(st, 3, state);
        gw_store_bind_text(st, 4, kind);
        gw_store_bind_text(st, 5, message ? message : "");
        int rc = sqlite3_step(st);
        (void) sqlite3_reset(st);
        return rc == SQLITE_DONE ? 0 : sql_err(s);
}

int gw_store_job_insert(struct gw_store *s, struct gw_job *j, const char *message) {
        int r = gw_store_begin(s);
        if (r < 0)
                return r;
        sqlite3_stmt *st = stmt_get(s, ST_JOB_INSERT);
        gw_store_bind_text(st, 1, j->name);
        sqlite3_bind_int64(st, 2, j->uid);
        sqlite3_bind_int64(st, 3, j->gid);
        gw_store_bind_text(st, 4, j->user);
        sqlite3_bind_int(st, 5, j->state);
        sqlite3_bind_int(st, 6, j->wait_reason);
        sqlite3_bind_int(st, 7, j->priority);
        sqlite3_bind_int(st, 8, j->ngpus);
        sqlite3_bind_int64(st, 9, (sqlite3_int64) j->gpu_mem);
        sqlite3_bind_int64(st, 10, j->time_limit);
        sqlite3_bind_int64(st, 11, j->after_job);
        sqlite3_bind_int(st, 12, j->after_kind);
        bind_strv(st, 13, j->argv);
        bind_strv(st, 14, j->env);
        bind_strv(st, 15, j->env_extra);
        gw_store_bind_text(st, 16, j->cwd);
        gw_store_bind_text(st, 17, j->output);
        gw_store_bind_text(st, 18, j->log_path);
        sqlite3_bind_int64(st, 19, j->submit_time);
        sqlite3_bind_int(st, 20, j->attempt);
        sqlite3_bind_int(st, 21, j->retries);
        gw_store_bind_text(st, 22, j->retry_on);
        sqlite3_bind_int(st, 23, j->yolo);
        gw_store_bind_text(st, 24, j->checkpoint);
        gw_store_bind_text(st, 25, j->resume_cmd);
        gw_store_bind_text(st, 26, j->idle_policy);
        gw_store_bind_text(st, 27, j->progress_file);
        gw_store_bind_text(st, 28, j->health_url);
        sqlite3_bind_int64(st, 29, j->booking_id);
        gw_store_bind_text(st, 30, j->leak_policy);
        sqlite3_bind_int(st, 31, j->warn_signal);
        sqlite3_bind_int64(st, 32, j->warn_before);
        sqlite3_bind_int(st, 33, j->interactive);
        gw_store_bind_text(st, 34, j->array_spec);
        sqlite3_bind_int64(st, 35, j->array_next);
        sqlite3_bind_int64(st, 36, j->array_job);
        sqlite3_bind_int64(st, 37, j->array_index);
        sqlite3_bind_int(st, 38, j->preemptible);
        gw_store_bind_text(st, 39, j->dataset);
        gw_store_bind_text(st, 40, j->publish);
        gw_store_bind_text(st, 41, j->publish_metric);
        gw_store_bind_text(st, 42, j->mig_profile);
        sqlite3_bind_int(st, 43, j->mig_profile ? j->mig_count : 0);
        sqlite3_bind_int(st, 44, j->scratch);
        int rc = sqlite3_step(st);
        (void) sqlite3_reset(st);
        if (rc != SQLITE_DONE) {
                r = sql_err(s);
                goto fail;
        }
        j->id = sqlite3_last_insert_rowid(s->db);
        r = event_insert(s, j->id, j->state, "submit", message);
        if (r < 0)
                goto fail;
        if ((r = gw_store_commit(s)) < 0)
                return r;
        tell_job(s, j->id, j, j->state, "submit", message);
        return 0;
fail:
        (void) gw_store_rollback(s);
        return r;
}

int gw_store_job_update(struct gw_store *s, const struct gw_job *j, const char *kind, const char *message) {
        int r = gw_store_begin(s);
        if (r < 0)
                return r;
        sqlite3_stmt *st = stmt_get(s, ST_JOB_UPDATE);
        sqlite3_bind_int64(st, 1, j->id);
        sqlite3_bind_int(st, 2, j->state);
        sqlite3_bind_int(st, 3, j->wait_reason);
        gw_store_bind_text(st, 4, j->end_reason);
        sqlite3_bind_int64(st, 5, (sqlite3_int64) j->gpu_mask);
        sqlite3_bind_int64(st, 6, j->start_time);
        sqlite3_bind_int64(st, 7, j->end_time);
        sqlite3_bind_int(st, 8, j->has_exit);
        sqlite3_bind_int(st, 9, j->exit_code);
        sqlite3_bind_int(st, 10, j->signal);
        sqlite3_bind_int(st, 11, j->attempt);
        sqlite3_bind_int64(st, 12, j->pid);
        sqlite3_bind_int64(st, 13, j->shim_pid);
        sqlite3_bind_int64(st, 14, (sqlite3_int64) j->pid_start);
        sqlite3_bind_int64(st, 15, (sqlite3_int64) j->shim_start);
        gw_store_bind_text(st, 16, j->cgroup);
        gw_store_bind_text(st, 17, j->log_path);
        sqlite3_bind_int(st, 18, j->priority);
        gw_store_bind_text(st, 19, j->telemetry);
        sqlite3_bind_int64(st, 20, j->not_before);
        gw_store_bind_text(st, 21, j->resume_from);
        gw_store_bind_text(st, 22, j->idle_policy);
        sqlite3_bind_int(st, 23, j->stop_state);
        gw_store_bind_text(st, 24, j->stop_reason);
        sqlite3_bind_int64(st, 25, j->resume_epoch > 0 ? j->resume_epoch : 0);
        gw_store_bind_text(st, 26, j->mig_slices);
        sqlite3_bind_double(st, 27, j->mig_share);
        int rc = sqlite3_step(st);
        (void) sqlite3_reset(st);
        if (rc != SQLITE_DONE) {
                r = sql_err(s);
                goto fail;
        }
        if (kind) {
                r = event_insert(s, j->id, j->state, kind, message);
                if (r < 0)
                        goto fail;
        }
        if ((r = gw_store_commit(s)) < 0)
                return r;
        tell_job(s, j->id, j, j->state, kind, message);
        return 0;
fail:
        (void) gw_store_rollback(s);
        return r;
}

int gw_store_job_scratch_name(struct gw_store *s, int64_t id, const char *name) {
        return gw_store_exec(s, "UPDATE jobs SET scratch_name = ?2 WHERE id = ?1", "is", id, name);
}

int gw_store_job_event(struct gw_store *s, int64_t id, enum gw_job_state state, const char *kind, const char *message) {
        int r = event_insert(s, id, state, kind, message);
        if (r == 0)
                tell_job(s, id, NULL, state, kind, message);
        return r;
}

static char *col_text(sqlite3_stmt *st, int i) {
        const unsigned char *t = sqlite3_column_text(st, i);
        return t ? gw_xstrdup((const char *) t) : NULL;
}

static char **col_strv(sqlite3_stmt *st, int i) {
        if (sqlite3_column_type(st, i) == SQLITE_NULL)
                return NULL;
        const void *b = sqlite3_column_blob(st, i);
        int len = sqlite3_column_bytes(st, i);
        return gw_strv_unpack(b ? b : "", (size_t) len);
}

static struct gw_job *job_from_row(sqlite3_stmt *st) {
        struct gw_job *j = gw_xcalloc(1, sizeof *j);
        int c = 0;
        j->id = sqlite3_column_int64(st, c++);
        j->name = col_text(st, c++);
        j->uid = (uint32_t) sqlite3_column_int64(st, c++);
        j->gid = (uint32_t) sqlite3_column_int64(st, c++);
        j->user = col_text(st, c++);
        j->state = sqlite3_column_int(st, c++);
        j->wait_reason = sqlite3_column_int(st, c++);
        j->end_reason = col_text(st, c++);
        j->priority = sqlite3_column_int(st, c++);
        j->ngpus = sqlite3_column_int(st, c++);
        j->gpu_mem = (uint64_t) sqlite3_column_int64(st, c++);
        j->time_limit = sqlite3_column_int64(st, c++);
        j->after_job = sqlite3_column_int64(st, c++);
        j->after_kind = sqlite3_column_int(st, c++);
        j->argv = col_strv(st, c++);
        j->env = col_strv(st, c++);
        j->env_extra = col_strv(st, c++);
        j->cwd = col_text(st, c++);
        j->output = col_text(st, c++);
        j->log_path = col_text(st, c++);
        j->gpu_mask = (uint64_t) sqlite3_column_int64(st, c++);
        j->submit_time = sqlite3_column_int64(st, c++);
        j->start_time = sqlite3_column_int64(st, c++);
        j->end_time = sqlite3_column_int64(st, c++);
        j->has_exit = sqlite3_column_int(st, c++);
        j->exit_code = sqlite3_column_int(st, c++);
        j->signal = sqlite3_column_int(st, c++);
        j->attempt = sqlite3_column_int(st, c++);
        j->pid = (pid_t) sqlite3_column_int64(st, c++);
        j->shim_pid = (pid_t) sqlite3_column_int64(st, c++);
        j->pid_start = (uint64_t) sqlite3_column_int64(st, c++);
        j->shim_start = (uint64_t) sqlite3_column_int64(st, c++);
        j->cgroup = col_text(st, c++);
        j->telemetry = col_text(st, c++);
        j->retries = sqlite3_column_int(st, c++);
        j->retry_on = col_text(st, c++);
        j->yolo = sqlite3_column_int(st, c++);
        j->checkpoint = col_text(st, c++);
        j->resume_cmd = col_text(st, c++);
        j->not_before = sqlite3_column_int64(st, c++);
        j->resume_from = col_text(st, c++);
        j->idle_policy = col_text(st, c++);
        j->progress_file = col_text(st, c++);
        j->health_url = col_text(st, c++);
        j->booking_id = sqlite3_column_int64(st, c++);
        j->leak_policy = col_text(st, c++);
        j->stop_state = sqlite3_column_int(st, c++);
        j->stop_reason = col_text(st, c++);
        j->warn_signal = sqlite3_column_int(st, c++);
        j->warn_before = sqlite3_column_int64(st, c++);
        j->interactive = sqlite3_column_int(st, c++) != 0;
        j->array_spec = col_text(st, c++);
        j->array_next = (uint32_t) sqlite3_column_int64(st, c++);
        j->array_job = sqlite3_column_int64(st, c++);
        j->array_index = sqlite3_column_int64(st, c++);
        j->preemptible = sqlite3_column_int(st, c++) != 0;
        j->resume_epoch = (long) sqlite3_column_int64(st, c++);
        j->dataset = col_text(st, c++);
        j->publish = col_text(st, c++);
        j->publish_metric = col_text(st, c++);
        j->mig_profile = col_text(st, c++);
        j->mig_count = sqlite3_column_int(st, c++);
        j->mig_slices = col_text(st, c++);
        j->mig_share = sqlite3_column_double(st, c++);
        j->scratch = sqlite3_column_int(st, c++) != 0;
        j->scratch_name = col_text(st, c++);
        if (!j->argv)
                j->argv = gw_xcalloc(1, sizeof(char *));
        if ((unsigned) j->state >= _GW_JOB_STATE_MAX)
                j->state = GW_JOB_FAILED;
        if (!gw_job_state_is_final(j->stop_state))
                j->stop_state = GW_JOB_PENDING;
        return j;
}

int gw_store_job_get(struct gw_store *s, int64_t id, struct gw_job **ret) {
        sqlite3_stmt *st = stmt_get(s, ST_JOB_GET);
        sqlite3_bind_int64(st, 1, id);
        int rc = sqlite3_step(st);
        int r = 0;
        if (rc == SQLITE_ROW)
                *ret = job_from_row(st);
        else
                r = rc == SQLITE_DONE ? -ENOENT : sql_err(s);
        (void) sqlite3_reset(st);
        return r;
}

int gw_store_job_state(struct gw_store *s, int64_t id, enum gw_job_state *ret) {
        sqlite3_stmt *st = stmt_get(s, ST_JOB_STATE);
        sqlite3_bind_int64(st, 1, id);
        int rc = sqlite3_step(st), r = 0;
        if (rc == SQLITE_ROW)
                *ret = sqlite3_column_int(st, 0);
        else
                r = rc == SQLITE_DONE ? -ENOENT : sql_err(s);
        (void) sqlite3_reset(st);
        return r;
}

static int job_events(struct gw_store *s, enum stmt_id which, int64_t id, struct gw_job_event **ret, size_t *ret_n) {
        sqlite3_stmt *st = stmt_get(s, which);
        sqlite3_bind_int64(st, 1, id);
        struct gw_job_event *ev = NULL;
        size_t n = 0, cap = 0;
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                if (n == cap) {
                        cap = cap ? cap * 2 : 8;
                        ev = gw_xrealloc(ev, cap * sizeof *ev);
                }
                ev[n].time = sqlite3_column_int64(st, 0);
                ev[n].state = sqlite3_column_int(st, 1);
                ev[n].kind = col_text(st, 2);
                ev[n].message = col_text(st, 3);
                n++;
        }
        (void) sqlite3_reset(st);
        if (rc != SQLITE_DONE) {
                gw_job_events_free(ev, n);
                return sql_err(s);
        }
        *ret = ev;
        *ret_n = n;
        return 0;
}

int gw_store_job_events(struct gw_store *s, int64_t id, struct gw_job_event **ret, size_t *ret_n) {
        return job_events(s, ST_JOB_EVENTS, id, ret, ret_n);
}

int gw_store_job_attempt_events(struct gw_store *s, int64_t id, struct gw_job_event **ret, size_t *ret_n) {
        return job_events(s, ST_ATTEMPT_EVENTS, id, ret, ret_n);
}

static int each_row(struct gw_store *s, sqlite3_stmt *st, gw_store_job_cb cb, void *userdata) {
        int rc, r = 0;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                r = cb(job_from_row(st), userdata);
                if (r < 0)
                        break;
        }
        if (r >= 0 && rc != SQLITE_DONE && rc != SQLITE_ROW)
                r = sql_err(s);
        (void) sqlite3_reset(st);
        return r < 0 ? r : 0;
}

int gw_store_jobs_active(struct gw_store *s, gw_store_job_cb cb, void *userdata) {
        return each_row(s, stmt_get(s, ST_JOBS_ACTIVE), cb, userdata);
}

int gw_store_jobs_list(struct gw_store *s, const struct gw_store_filter *f, gw_store_job_cb cb, void *userdata) {
        char sql[1024], states[128] = "";
        size_t used = 0;
        for (int i = 0; i < _GW_JOB_STATE_MAX; i++)
                if (f->state_mask & (1u << i))
                        used += (size_t) snprintf(states + used, sizeof states - used, "%s%d", used ? "," : "", i);
        snprintf(sql, sizeof sql, "SELECT " JOB_COLUMNS " FROM jobs WHERE 1 %s%s%s %s %s ORDER BY id DESC LIMIT ?3",
                 used ? "AND state IN (" : "", states, used ? ")" : "", f->by_uid ? "AND uid = ?1" : "",
                 f->before_id > 0 ? "AND id < ?2" : "");
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
                return sql_err(s);
        if (f->by_uid)
                sqlite3_bind_int64(st, 1, f->uid);
        if (f->before_id > 0)
                sqlite3_bind_int64(st, 2, f->before_id);
        sqlite3_bind_int64(st, 3, f->limit ? f->limit : 100);
        int r = each_row(s, st, cb, userdata);
        sqlite3_finalize(st);
        return r;
}

int gw_store_gpu_upsert(struct gw_store *s, const struct gw_store_gpu *g) {
        sqlite3_stmt *st = stmt_get(s, ST_GPU_UPSERT);
        sqlite3_bind_int(st, 1, (int) g->index);
        gw_store_bind_text(st, 2, g->uuid);
        gw_store_bind_text(st, 3, g->name);
        sqlite3_bind_int64(st, 4, (sqlite3_int64) g->mem_total);
        sqlite3_bind_int(st, 5, g->drained);
        gw_store_bind_text(st, 6, g->drain_reason[0] ? g->drain_reason : NULL);
        int rc = sqlite3_step(st);
        (void) sqlite3_reset(st);
        return rc == SQLITE_DONE ? 0 : sql_err(s);
}

int gw_store_gpu_get(struct gw_store *s, unsigned index, struct gw_store_gpu *ret) {
        sqlite3_stmt *st = stmt_get(s, ST_GPU_GET);
        sqlite3_bind_int(st, 1, (int) index);
        int rc = sqlite3_step(st), r = 0;
        if (rc == SQLITE_ROW) {
                memset(ret, 0, sizeof *ret);
                ret->index = (unsigned) sqlite3_column_int(st, 0);
                gw_store_column_text(st, 1, ret->uuid, sizeof ret->uuid);
                gw_store_column_text(st, 2, ret->name, sizeof ret->name);
                ret->mem_total = (uint64_t) sqlite3_column_int64(st, 3);
                ret->drained = sqlite3_column_int(st, 4);
                const unsigned char *dr = sqlite3_column_text(st, 5);
                snprintf(ret->drain_reason, sizeof ret->drain_reason, "%s", dr ? (const char *) dr : "");
        } else
                r = rc == SQLITE_DONE ? -ENOENT : sql_err(s);
        (void) sqlite3_reset(st);
        return r;
}

int gw_store_series_add(struct gw_store *s, int64_t job_id, unsigned gpu, const struct gw_store_series_row *row) {
        sqlite3_stmt *st = stmt_get(s, ST_SERIES_ADD);
        sqlite3_bind_int64(st, 1, job_id);
        sqlite3_bind_int(st, 2, (int) gpu);
        sqlite3_bind_int64(st, 3, row->t);
        sqlite3_bind_int(st, 4, (int) row->util_min);
        sqlite3_bind_double(st, 5, row->util_mean);
        sqlite3_bind_int(st, 6, (int) row->util_max);
        sqlite3_bind_int64(st, 7, (sqlite3_int64) row->mem_min);
        sqlite3_bind_int64(st, 8, (sqlite3_int64) row->mem_mean);
        sqlite3_bind_int64(st, 9, (sqlite3_int64) row->mem_max);
        int rc = sqlite3_step(st);
        (void) sqlite3_reset(st);
        return rc == SQLITE_DONE ? 0 : sql_err(s);
}

int gw_store_series_get(struct gw_store *s, int64_t job_id, gw_usec_t since, gw_store_series_cb cb, void *userdata) {
        sqlite3_stmt *st = stmt_get(s, ST_SERIES_GET);
        sqlite3_bind_int64(st, 1, job_id);
        sqlite3_bind_int64(st, 2, since);
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                struct gw_store_series_row row = {
                        .t = sqlite3_column_int64(st, 1),
                        .util_min = (unsigned) sqlite3_column_int(st, 2),
                        .util_mean = sqlite3_column_double(st, 3),
                        .util_max = (unsigned) sqlite3_column_int(st, 4),
                        .mem_min = (uint64_t) sqlite3_column_int64(st, 5),
                        .mem_mean = (uint64_t) sqlite3_column_int64(st, 6),
                        .mem_max = (uint64_t) sqlite3_column_int64(st, 7),
                };
                cb((unsigned) sqlite3_column_int(st, 0), &row, userdata);
        }
        (void) sqlite3_reset(st);
        return rc == SQLITE_DONE ? 0 : sql_err(s);
}

int gw_store_state_counts(struct gw_store *s, uint64_t counts[_GW_JOB_STATE_MAX]) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(s->db, "SELECT state, count(*) FROM jobs GROUP BY state", -1, &st, NULL) != SQLITE_OK)
                return sql_err(s);
        memset(counts, 0, sizeof(uint64_t) * _GW_JOB_STATE_MAX);
        while (sqlite3_step(st) == SQLITE_ROW) {
                int state = sqlite3_column_int(st, 0);
                if (state >= 0 && state < _GW_JOB_STATE_MAX)
                        counts[state] = (uint64_t) sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
        return 0;
}

int gw_store_attempt_add(struct gw_store *s, int64_t job_id, const struct gw_job_attempt *a) {
        sqlite3_stmt *st = stmt_get(s, ST_ATTEMPT_ADD);
        sqlite3_bind_int64(st, 1, job_id);
        sqlite3_bind_int(st, 2, a->attempt);
        sqlite3_bind_int64(st, 3, (sqlite3_int64) a->gpu_mask);
        sqlite3_bind_int64(st, 4, a->start_time);
        sqlite3_bind_int64(st, 5, a->end_time);
        sqlite3_bind_int(st, 6, a->has_exit);
        sqlite3_bind_int(st, 7, a->exit_code);
        sqlite3_bind_int(st, 8, a->signal);
        gw_store_bind_text(st, 9, a->class_name ? a->class_name : "");
        gw_store_bind_text(st, 10, a->evidence ? a->evidence : "");
        gw_store_bind_text(st, 11, a->resumed_from);
        sqlite3_bind_int(st, 12, a->epoch);
        gw_store_bind_text(st, 13, a->log_path);
        gw_store_bind_text(st, 14, a->ckpt_id);
        sqlite3_bind_int64(st, 15, a->ckpt_epoch > 0 ? a->ckpt_epoch : 0);
        int rc = sqlite3_step(st);
        (void) sqlite3_reset(st);
        return rc == SQLITE_DONE ? 0 : sql_err(s);
}

int gw_store_attempts(struct gw_store *s, int64_t job_id, struct gw_job_attempt **ret, size_t *ret_n) {
        sqlite3_stmt *st = stmt_get(s, ST_ATTEMPTS_GET);
        sqlite3_bind_int64(st, 1, job_id);
        struct gw_job_attempt *v = NULL;
        size_t n = 0, cap = 0;
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                if (n == cap) {
                        cap = cap ? cap * 2 : 4;
                        v = gw_xrealloc(v, cap * sizeof *v);
                }
                v[n++] = (struct gw_job_attempt){
                        .attempt = sqlite3_column_int(st, 0),
                        .gpu_mask = (uint64_t) sqlite3_column_int64(st, 1),
                        .start_time = sqlite3_column_int64(st, 2),
                        .end_time = sqlite3_column_int64(st, 3),
                        .has_exit = sqlite3_column_int(st, 4),
                        .exit_code = sqlite3_column_int(st, 5),
                        .signal = sqlite3_column_int(st, 6),
                        .class_name = col_text(st, 7),
                        .evidence = col_text(st, 8),
                        .resumed_from = col_text(st, 9),
                        .epoch = sqlite3_column_int(st, 10),
                        .log_path = col_text(st, 11),
                        .ckpt_id = col_text(st, 12),
                        .ckpt_epoch = (long) sqlite3_column_int64(st, 13),
                };
        }
        (void) sqlite3_reset(st);
        if (rc != SQLITE_DONE) {
                gw_job_attempts_free(v, n);
                return sql_err(s);
        }
        *ret = v;
        *ret_n = n;
        return 0;
}
