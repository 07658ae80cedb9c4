/* Checkpoint snapshot rows (see snapshots.h).  Written a few times per epoch at most: plain
 * statements prepared per call. */
#include "store/snapshots.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "store/store_internal.h"

/* The job's owner with each row: the per-user snapshot cap counts by it. */
#define SNAP_COLUMNS                                                                                  \
        "id, job_id, seq, kind, epoch, metric, sha256, size, time, src_mtime, path, source, pruned, " \
        "(SELECT uid FROM jobs WHERE jobs.id = snapshots.job_id)"

static void snap_from_row(sqlite3_stmt *st, struct gw_store_snapshot *r) {
        memset(r, 0, sizeof *r);
        r->id = sqlite3_column_int64(st, 0);
        r->job_id = sqlite3_column_int64(st, 1);
        r->seq = sqlite3_column_int(st, 2);
        gw_store_column_text(st, 3, r->kind, sizeof r->kind);
        r->epoch = (long) sqlite3_column_int64(st, 4);
        r->metric = sqlite3_column_type(st, 5) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 5);
        gw_store_column_text(st, 6, r->sha256, sizeof r->sha256);
        r->size = (uint64_t) sqlite3_column_int64(st, 7);
        r->time = sqlite3_column_int64(st, 8);
        r->src_mtime = sqlite3_column_int64(st, 9);
        gw_store_column_text(st, 10, r->path, sizeof r->path);
        gw_store_column_text(st, 11, r->source, sizeof r->source);
        r->pruned = sqlite3_column_int(st, 12) != 0;
        r->uid = sqlite3_column_type(st, 13) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 13);
}

int gw_store_snapshot_add(struct gw_store *s, struct gw_store_snapshot *snap) {
        sqlite3 *db = gw_store_db(s);
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(
                    db,
                    "INSERT INTO snapshots (job_id, seq, kind, epoch, metric, sha256, size, time, src_mtime, "
                    "path, source) SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10 "
                    "FROM snapshots WHERE job_id = ?1 RETURNING id, seq",
                    -1, &st, NULL) != SQLITE_OK)
                return gw_store_sql_err(s);
        sqlite3_bind_int64(st, 1, snap->job_id);
        sqlite3_bind_text(st, 2, snap->kind, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 3, snap->epoch);
        if (isfinite(snap->metric))
                sqlite3_bind_double(st, 4, snap->metric);
        else
                sqlite3_bind_null(st, 4);
        sqlite3_bind_text(st, 5, snap->sha256, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 6, (sqlite3_int64) snap->size);
        sqlite3_bind_int64(st, 7, snap->time);
        sqlite3_bind_int64(st, 8, snap->src_mtime);
        sqlite3_bind_text(st, 9, snap->path, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 10, snap->source, -1, SQLITE_TRANSIENT);
        int rc = sqlite3_step(st), r = 0;
        if (rc == SQLITE_ROW) {
                snap->id = sqlite3_column_int64(st, 0);
                snap->seq = sqlite3_column_int(st, 1);
                rc = sqlite3_step(st);
        }
        if (rc != SQLITE_DONE)
                r = gw_store_sql_err(s);
        sqlite3_finalize(st);
        return r;
}

static int each_snapshot(struct gw_store *s, const char *sql, int64_t job_id, gw_store_snapshot_cb cb, void *userdata) {
        sqlite3_stmt *st;
        int r = gw_store_prepare(s, sql, &st);
        if (r < 0)
                return r;
        if (job_id)
                sqlite3_bind_int64(st, 1, job_id);
        int rc;
        struct gw_store_snapshot row;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                snap_from_row(st, &row);
                cb(&row, userdata);
        }
        return gw_store_rows_end(s, st, rc);
}

int gw_store_snapshots(struct gw_store *s, int64_t job_id, gw_store_snapshot_cb cb, void *userdata) {
        return each_snapshot(s, "SELECT " SNAP_COLUMNS " FROM snapshots WHERE job_id = ?1 ORDER BY seq", job_id, cb,
                             userdata);
}

int gw_store_snapshots_kept(struct gw_store *s, gw_store_snapshot_cb cb, void *userdata) {
        return each_snapshot(s, "SELECT " SNAP_COLUMNS " FROM snapshots WHERE pruned = 0 ORDER BY time, id", 0, cb,
                             userdata);
}

int gw_store_snapshot_get(struct gw_store *s, int64_t job_id, int seq, struct gw_store_snapshot *ret) {
        sqlite3_stmt *st;
        int r = gw_store_prepare(s, "SELECT " SNAP_COLUMNS " FROM snapshots WHERE job_id = ?1 AND seq = ?2", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, job_id);
        sqlite3_bind_int(st, 2, seq);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                snap_from_row(st, ret);
        else
                r = rc == SQLITE_DONE ? -ENOENT : gw_store_sql_err(s);
        sqlite3_finalize(st);
        return r;
}

int gw_store_snapshot_set_pruned(struct gw_store *s, int64_t id) {
        sqlite3_stmt *st;
        int r = gw_store_prepare(s, "UPDATE snapshots SET pruned = 1 WHERE id = ?1", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, id);
        return gw_store_run(s, st);
}
