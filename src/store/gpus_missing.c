/* GPUs missing from NVML's devices (see gpus_missing.h).  Used at start only: plain
 * statements prepared per call. */
#include "store/gpus_missing.h"

#include <errno.h>
#include <stdio.h>

#include "store/store_internal.h"

static int run_on_uuid(struct gw_store *s, const char *sql, const char *uuid, const char *reason) {
        sqlite3_stmt *st;
        int r = gw_store_prepare(s, sql, &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
        if (reason)
                sqlite3_bind_text(st, 2, reason, -1, SQLITE_STATIC);
        return gw_store_run(s, st);
}

int gw_store_gpu_missing_add(struct gw_store *s, const char *uuid, const char *reason) {
        return run_on_uuid(s, "INSERT OR IGNORE INTO gpus_missing (uuid, reason) VALUES (?1, ?2)", uuid, reason);
}

int gw_store_gpu_missing_take(struct gw_store *s, const char *uuid, char *ret, size_t n) {
        sqlite3_stmt *st;
        int r = gw_store_prepare(s, "SELECT reason FROM gpus_missing WHERE uuid = ?1", &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                snprintf(ret, n, "%s", (const char *) sqlite3_column_text(st, 0));
        r = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : gw_store_sql_err(s);
        sqlite3_finalize(st);
        return r < 0 ? r : run_on_uuid(s, "DELETE FROM gpus_missing WHERE uuid = ?1", uuid, NULL);
}
