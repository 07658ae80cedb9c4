/* The GPUs' events (see gpu_events.h).  Rare, and read on request only, not in the loop's
 * hot path: the statements are prepared per call. */
#include "store/gpu_events.h"

#include <errno.h>

#include "base/time.h"
#include "store/store_internal.h"

int gw_store_gpu_events(struct gw_store *s, int gpu, gw_usec_t since, size_t limit, gw_store_gpu_event_cb cb,
                        void *userdata) {
        /* Two statements rather than "?1 < 0 OR gpu = ?1", which SQLite cannot plan onto an
         * index: each of these is a range of gpu_events_gpu or gpu_events_time read
         * backwards, and stops after limit rows however long the table is.
         * One GPU's are this host's: a cluster node's GPU 1 is not this host's GPU 1. */
        const char *sql =
                gpu == GW_GPU_EVENTS_ALL
                        ? "SELECT time, gpu, kind, xid, job_id, message, node FROM gpu_events WHERE time >= ?2 "
                          "ORDER BY time DESC, id DESC LIMIT ?3"
                        : "SELECT time, gpu, kind, xid, job_id, message, node FROM gpu_events WHERE gpu = ?1 "
                          "AND node IS NULL AND time >= ?2 ORDER BY time DESC, id DESC LIMIT ?3";
        sqlite3_stmt *st;
        int r = gw_store_prepare(s, sql, &st);
        if (r < 0)
                return r;
        if (gpu != GW_GPU_EVENTS_ALL)
                sqlite3_bind_int(st, 1, gpu);
        sqlite3_bind_int64(st, 2, since);
        sqlite3_bind_int64(st, 3, (sqlite3_int64) limit);
        int rc, n = 0;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                const char *kind = (const char *) sqlite3_column_text(st, 2);
                const char *msg = (const char *) sqlite3_column_text(st, 5);
                struct gw_gpu_event_rec e = {
                        .time = sqlite3_column_int64(st, 0),
                        .node = (const char *) sqlite3_column_text(st, 6),
                        .gpu = (unsigned) sqlite3_column_int(st, 1),
                        .kind = kind ? kind : "",
                        .xid = sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 3),
                        .job_id = sqlite3_column_int64(st, 4),
                        .message = msg ? msg : "",
                };
                cb(&e, userdata);
                n++;
        }
        r = rc == SQLITE_DONE ? n : gw_store_sql_err(s);
        sqlite3_finalize(st);
        return r;
}

int gw_store_gpu_event(struct gw_store *s, const char *node, unsigned gpu, const char *kind, long long xid,
                       int64_t job_id, const char *message) {
        sqlite3_stmt *st;
        int r = gw_store_prepare(s,
                                 "INSERT INTO gpu_events (time, gpu, kind, xid, job_id, message, node) "
                                 "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                                 &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, gw_now_wall());
        sqlite3_bind_int(st, 2, (int) gpu);
        gw_store_bind_text(st, 3, kind);
        if (xid >= 0)
                sqlite3_bind_int64(st, 4, xid);
        if (job_id > 0)
                sqlite3_bind_int64(st, 5, job_id);
        gw_store_bind_text(st, 6, message);
        gw_store_bind_text(st, 7, node);
        return gw_store_run(s, st);
}
