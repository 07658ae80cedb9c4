/* Epoch end times and per-GPU memory (see epochs.h).  Written once per epoch of a running
 * training job: plain statements prepared per call. */
#include "store/epochs.h"

#include <errno.h>

#include "store/store_internal.h"

int gw_store_epoch_put(struct gw_store *s, int64_t job_id, int attempt, const struct gw_store_epoch *e) {
        return gw_store_exec(s,
                             "INSERT OR REPLACE INTO job_epochs (job_id, attempt, epoch, start_time, end_time, "
                             "startup, exact) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                             "iiiiiii", job_id, (int64_t) attempt, (int64_t) e->epoch, e->start, e->end,
                             (int64_t) e->startup, (int64_t) e->exact);
}

int gw_store_epochs_drop(struct gw_store *s, int64_t job_id, int attempt) {
        int r = gw_store_exec(s, "DELETE FROM job_epochs WHERE job_id = ?1 AND attempt = ?2", "ii", job_id,
                              (int64_t) attempt);
        return r < 0 ? r
                     : gw_store_exec(s, "DELETE FROM job_epoch_mem WHERE job_id = ?1 AND attempt = ?2", "ii", job_id,
                                     (int64_t) attempt);
}

int gw_store_epochs(struct gw_store *s, int64_t job_id, int attempt, struct gw_store_epoch *ret, size_t max) {
        if (max > INT32_MAX)
                return -EINVAL;
        sqlite3_stmt *st;
        /* The newest max by epoch, then turned around: oldest first. */
        int r = gw_store_query(s,
                               "SELECT epoch, start_time, end_time, startup, exact FROM job_epochs "
                               "WHERE job_id = ?1 AND attempt = ?2 ORDER BY epoch DESC LIMIT ?3",
                               &st, "iii", job_id, (int64_t) attempt, (int64_t) max);
        if (r < 0)
                return r;
        size_t n = 0;
        int rc = SQLITE_DONE;
        while (n < max && (rc = sqlite3_step(st)) == SQLITE_ROW)
                ret[n++] = (struct gw_store_epoch){ .epoch = (long) sqlite3_column_int64(st, 0),
                                                    .start = sqlite3_column_int64(st, 1),
                                                    .end = sqlite3_column_int64(st, 2),
                                                    .startup = sqlite3_column_int(st, 3) != 0,
                                                    .exact = sqlite3_column_int(st, 4) != 0 };
        r = gw_store_rows_end(s, st, n < max ? rc : SQLITE_DONE);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n / 2; i++) {
                struct gw_store_epoch tmp = ret[i];
                ret[i] = ret[n - 1 - i];
                ret[n - 1 - i] = tmp;
        }
        return (int) n;
}

int gw_store_epoch_mem_put(struct gw_store *s, int64_t job_id, int attempt, const struct gw_store_epoch_mem *m) {
        return gw_store_exec(s,
                             "INSERT OR REPLACE INTO job_epoch_mem (job_id, attempt, gpu, epoch, low, peak) "
                             "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                             "iiiidd", job_id, (int64_t) attempt, (int64_t) m->gpu, (int64_t) m->epoch, m->low,
                             m->peak);
}

int gw_store_epoch_mems(struct gw_store *s, int64_t job_id, int attempt, size_t per_gpu, gw_store_epoch_mem_cb cb,
                        void *userdata) {
        if (per_gpu > INT32_MAX)
                return -EINVAL;
        sqlite3_stmt *st;
        /* Numbered newest first within each GPU: the rows a detector that keeps the newest holds. */
        int r = gw_store_query(s,
                               "SELECT gpu, epoch, low, peak FROM (SELECT gpu, epoch, low, peak, row_number() OVER "
                               "(PARTITION BY gpu ORDER BY epoch DESC) AS k FROM job_epoch_mem "
                               "WHERE job_id = ?1 AND attempt = ?2) WHERE k <= ?3 ORDER BY gpu, epoch",
                               &st, "iii", job_id, (int64_t) attempt, (int64_t) per_gpu);
        if (r < 0)
                return r;
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                sqlite3_int64 gpu = sqlite3_column_int64(st, 0);
                if (gpu < 0 || gpu > UINT32_MAX)
                        continue; /* not a row this daemon wrote */
                struct gw_store_epoch_mem m = { .gpu = (unsigned) gpu,
                                                .epoch = (long) sqlite3_column_int64(st, 1),
                                                .low = sqlite3_column_double(st, 2),
                                                .peak = sqlite3_column_double(st, 3) };
                cb(&m, userdata);
        }
        return gw_store_rows_end(s, st, rc);
}
