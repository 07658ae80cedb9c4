/* Job arrays in the store (jobarray.h). */
#include "store/jobarray.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>

#include "store/store_internal.h"

int gw_store_array_next_set(struct gw_store *s, int64_t id, uint32_t next) {
        return gw_store_exec(s, "UPDATE jobs SET array_next = ?2 WHERE id = ?1", "ii", id, (int64_t) next);
}

int gw_store_array_task(struct gw_store *s, int64_t array_job, int64_t index, int64_t *ret_id) {
        sqlite3_stmt *st;
        int r = gw_store_query(s, "SELECT id FROM jobs WHERE array_job = ?1 AND array_index = ?2", &st, "ii", array_job,
                               index);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                *ret_id = sqlite3_column_int64(st, 0);
        r = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : gw_store_sql_err(s);
        sqlite3_finalize(st);
        return r;
}

int gw_store_array_tasks(struct gw_store *s, int64_t array_job, gw_store_array_task_cb cb, void *userdata) {
        sqlite3_stmt *st;
        int r = gw_store_query(s,
                               "SELECT id, array_index, state, telemetry FROM jobs WHERE array_job = ?1 "
                               "ORDER BY array_index",
                               &st, "i", array_job);
        if (r < 0)
                return r;
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                struct gw_store_array_task t = {
                        .id = sqlite3_column_int64(st, 0),
                        .index = sqlite3_column_int64(st, 1),
                        .state = sqlite3_column_int(st, 2),
                        .telemetry = (const char *) sqlite3_column_text(st, 3),
                };
                cb(&t, userdata);
        }
        return gw_store_rows_end(s, st, rc);
}

int gw_store_array_best(struct gw_store *s, int64_t array_job, struct gw_store_array_best *ret) {
        sqlite3_stmt *st;
        int r = gw_store_query(s,
                               "SELECT j.array_index, e.message FROM jobs j JOIN job_events e ON e.job_id = j.id "
                               "WHERE j.array_job = ?1 AND e.kind = 'best' ORDER BY j.array_index",
                               &st, "i", array_job);
        if (r < 0)
                return r;
        struct gw_store_array_best best = { .index = -1 };
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                const char *msg = (const char *) sqlite3_column_text(st, 1);
                double v;
                long epoch;
                if (msg && sscanf(msg, "mAP50-95 %lf at epoch %ld", &v, &epoch) == 2 &&
                    (best.index < 0 || v > best.map50_95))
                        best = (struct gw_store_array_best){ sqlite3_column_int64(st, 0), v, epoch };
        }
        r = gw_store_rows_end(s, st, rc);
        if (r == 0)
                *ret = best;
        return r;
}
