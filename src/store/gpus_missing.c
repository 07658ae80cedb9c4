/* GPUs missing from NVML's devices (see gpus_missing.h).  Used at start only: plain
 * statements prepared per call. */
#include "store/gpus_missing.h"

#include <errno.h>
#include <stdio.h>

#include "store/store_internal.h"

int gw_store_gpu_missing_add(struct gw_store *s, const char *uuid, const char *reason) {
        return gw_store_exec(s, "INSERT OR IGNORE INTO gpus_missing (uuid, reason) VALUES (?1, ?2)", "ss", uuid,
                             reason);
}

int gw_store_gpu_missing_take(struct gw_store *s, const char *uuid, char *ret, size_t n) {
        sqlite3_stmt *st;
        int r = gw_store_query(s, "SELECT reason FROM gpus_missing WHERE uuid = ?1", &st, "s", uuid);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                gw_store_column_text(st, 0, ret, n);
        r = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : gw_store_sql_err(s);
        sqlite3_finalize(st);
        return r < 0 ? r : gw_store_exec(s, "DELETE FROM gpus_missing WHERE uuid = ?1", "s", uuid);
}
