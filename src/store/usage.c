/* Ended jobs for accounting (see usage.h). */
#include "store/usage.h"

#include <sqlite3.h>

#include "core/job.h"
#include "store/store_internal.h"

int gw_store_usage_rows(struct gw_store *s, gw_usec_t ended_since, gw_store_usage_cb cb, void *userdata) {
        sqlite3_stmt *st;
        _Static_assert(GW_JOB_RECLAIMED - GW_JOB_COMPLETED == 4, "the final states are COMPLETED to RECLAIMED");
        /* end_time > 0 (every final job's): jobs_end holds only those rows, and SQLite reads a
         * partial index only for a WHERE that repeats its term.  +state: without statistics
         * SQLite prefers the two-sided range on jobs_state (every job ever ended) to the
         * window's range on jobs_end; the + leaves state's index out of its choice. */
        int r = gw_store_query(s,
                               "SELECT uid, user, state, ngpus, start_time, end_time, telemetry, mig_share FROM jobs "
                               "WHERE end_time > 0 AND end_time >= ?1 AND +state BETWEEN ?2 AND ?3",
                               &st, "iii", ended_since, (int64_t) GW_JOB_COMPLETED, (int64_t) GW_JOB_RECLAIMED);
        if (r < 0)
                return r;
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                struct gw_store_usage_row row = {
                        .uid = (uint32_t) sqlite3_column_int64(st, 0),
                        .user = (const char *) sqlite3_column_text(st, 1),
                        .state = sqlite3_column_int(st, 2),
                        .ngpus = sqlite3_column_int(st, 3),
                        .start = sqlite3_column_int64(st, 4),
                        .end = sqlite3_column_int64(st, 5),
                        .telemetry = (const char *) sqlite3_column_text(st, 6),
                        .mig_share = sqlite3_column_double(st, 7),
                };
                cb(&row, userdata);
        }
        return gw_store_rows_end(s, st, rc);
}

int gw_store_attempt_uses(struct gw_store *s, gw_usec_t ended_since, gw_store_attempt_use_cb cb, void *userdata) {
        sqlite3_stmt *st;
        int r = gw_store_query(s,
                               "SELECT j.uid, j.user, a.gpu_mask, a.start_time, a.end_time FROM job_attempts a "
                               "JOIN jobs j ON j.id = a.job_id WHERE a.end_time >= ?1 ORDER BY a.end_time",
                               &st, "i", ended_since);
        if (r < 0)
                return r;
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                struct gw_store_attempt_use use = {
                        .uid = (uint32_t) sqlite3_column_int64(st, 0),
                        .user = (const char *) sqlite3_column_text(st, 1),
                        .gpu_mask = (uint64_t) sqlite3_column_int64(st, 2),
                        .start = sqlite3_column_int64(st, 3),
                        .end = sqlite3_column_int64(st, 4),
                };
                cb(&use, userdata);
        }
        return gw_store_rows_end(s, st, rc);
}
