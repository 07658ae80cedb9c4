/* A running attempt's monotonic start (see jobclock.h), in the job's row, replaced at each
 * attempt's start.  The write is on every start's way and is kept prepared (parsing it took
 * about 2.5% of the daemon's CPU per job on a busy queue); the read, at a restart, is not. */
#include "store/jobclock.h"

#include <errno.h>
#include <string.h>

#include "store/store_internal.h"

int gw_store_job_clock_put(struct gw_store *s, int64_t job_id, int attempt, const char *boot_id, gw_usec_t start_mono) {
        sqlite3_stmt *st;
        int r = gw_store_prepare_kept(s, GW_KEPT_JOB_CLOCK_PUT,
                                      "UPDATE jobs SET clock_attempt = ?2, clock_boot = ?3, clock_mono = ?4 "
                                      "WHERE id = ?1",
                                      &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, job_id);
        sqlite3_bind_int64(st, 2, attempt);
        gw_store_bind_text(st, 3, boot_id);
        sqlite3_bind_int64(st, 4, start_mono);
        r = sqlite3_step(st) == SQLITE_DONE ? 0 : gw_store_sql_err(s);
        gw_store_kept_done(st);
        return r == 0 && sqlite3_changes(gw_store_db(s)) == 0 ? -ENOENT : r;
}

int gw_store_job_clock_get(struct gw_store *s, int64_t job_id, int attempt, const char *boot_id, gw_usec_t *ret) {
        sqlite3_stmt *st;
        int r = gw_store_query(s,
                               "SELECT clock_mono FROM jobs WHERE id = ?1 AND clock_attempt = ?2 AND clock_boot = ?3",
                               &st, "iis", job_id, (int64_t) attempt, boot_id);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        r = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : gw_store_sql_err(s);
        if (r == 0)
                *ret = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        return r;
}
