/* Epoch end times and per-GPU memory (see epochs.h).  Written once per epoch of a running
 * training job: plain statements prepared per call. */
#include "store/epochs.h"

#include <errno.h>

#include "store/store_internal.h"

int gw_store_epoch_put(struct gw_store *s, int64_t job_id, int attempt, const struct gw_store_epoch *e) {
        sqlite3_stmt *st;
        int r = gw_store_prepare(s, "INSERT OR REPLACE INTO job_epochs (job_id, attempt, epoch, start_time, end_time, "
                                 "startup, exact) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, job_id);
        sqlite3_bind_int(st, 2, attempt);
        sqlite3_bind_int64(st, 3, e->epoch);
        sqlite3_bind_int64(st, 4, e->start);
        sqlite3_bind_int64(st, 5, e->end);
        sqlite3_bind_int(st, 6, e->startup);
        sqlite3_bind_int(st, 7, e->exact);
        return gw_store_run(s, st);
}

static int drop_from(struct gw_store *s, const char *sql, int64_t job_id, int attempt) {
        sqlite3_stmt *st;
        int r = gw_store_prepare(s, sql, &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, job_id);
        sqlite3_bind_int(st, 2, attempt);
        return gw_store_run(s, st);
}

int gw_store_epochs_drop(struct gw_store *s, int64_t job_id, int attempt) {
        int r = drop_from(s, "DELETE FROM job_epochs WHERE job_id = ?1 AND attempt = ?2", job_id, attempt);
        return r < 0 ? r : drop_from(s, "DELETE FROM job_epoch_mem WHERE job_id = ?1 AND attempt = ?2", job_id, attempt);
}

int gw_store_epochs(struct gw_store *s, int64_t job_id, int attempt, struct gw_store_epoch *ret, size_t max) {
        if (max > INT32_MAX)
                return -EINVAL;
        sqlite3_stmt *st;
        /* The newest max by epoch, then turned around: oldest first. */
        int r = gw_store_prepare(s, "SELECT epoch, start_time, end_time, startup, exact FROM job_epochs "
                                 "WHERE job_id = ?1 AND attempt = ?2 ORDER BY epoch DESC LIMIT ?3", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, job_id);
        sqlite3_bind_int(st, 2, attempt);
        sqlite3_bind_int64(st, 3, (sqlite3_int64) max);
        size_t n = 0;
        int rc = SQLITE_DONE;
        while (n < max && (rc = sqlite3_step(st)) == SQLITE_ROW)
                ret[n++] = (struct gw_store_epoch) { .epoch = (long) sqlite3_column_int64(st, 0),
                                                     .start = sqlite3_column_int64(st, 1),
                                                     .end = sqlite3_column_int64(st, 2),
                                                     .startup = sqlite3_column_int(st, 3) != 0,
                                                     .exact = sqlite3_column_int(st, 4) != 0 };
        if (n < max && rc != SQLITE_DONE) {
                r = gw_store_sql_err(s);
                sqlite3_finalize(st);
                return r;
        }
        sqlite3_finalize(st);
        for (size_t i = 0; i < n / 2; i++) {
                struct gw_store_epoch tmp = ret[i];
                ret[i] = ret[n - 1 - i];
                ret[n - 1 - i] = tmp;
        }
        return (int) n;
}

int gw_store_epoch_mem_put(struct gw_store *s, int64_t job_id, int attempt, const struct gw_store_epoch_mem *m) {
        sqlite3_stmt *st;
        int r = gw_store_prepare(s, "INSERT OR REPLACE INTO job_epoch_mem (job_id, attempt, gpu, epoch, low, peak) "
                                 "VALUES (?1, ?2, ?3, ?4, ?5, ?6)", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, job_id);
        sqlite3_bind_int(st, 2, attempt);
        sqlite3_bind_int64(st, 3, m->gpu);
        sqlite3_bind_int64(st, 4, m->epoch);
        sqlite3_bind_double(st, 5, m->low);
        sqlite3_bind_double(st, 6, m->peak);
        return gw_store_run(s, st);
}

int gw_store_epoch_mems(struct gw_store *s, int64_t job_id, int attempt, size_t per_gpu, gw_store_epoch_mem_cb cb,
                        void *userdata) {
        if (per_gpu > INT32_MAX)
                return -EINVAL;
        sqlite3_stmt *st;
        /* Numbered newest first within each GPU: the rows a detector that keeps the newest holds. */
        int r = gw_store_prepare(s,
                                 "SELECT gpu, epoch, low, peak FROM (SELECT gpu, epoch, low, peak, row_number() OVER "
                                 "(PARTITION BY gpu ORDER BY epoch DESC) AS k FROM job_epoch_mem "
                                 "WHERE job_id = ?1 AND attempt = ?2) WHERE k <= ?3 ORDER BY gpu, epoch", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, job_id);
        sqlite3_bind_int(st, 2, attempt);
        sqlite3_bind_int64(st, 3, (sqlite3_int64) per_gpu);
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                sqlite3_int64 gpu = sqlite3_column_int64(st, 0);
                if (gpu < 0 || gpu > UINT32_MAX)
                        continue; /* not a row this daemon wrote */
                struct gw_store_epoch_mem m = { .gpu = (unsigned) gpu, .epoch = (long) sqlite3_column_int64(st, 1),
                                                .low = sqlite3_column_double(st, 2),
                                                .peak = sqlite3_column_double(st, 3) };
                cb(&m, userdata);
        }
        r = rc == SQLITE_DONE ? 0 : gw_store_sql_err(s);
        sqlite3_finalize(st);
        return r;
}
