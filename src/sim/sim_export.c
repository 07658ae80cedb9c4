/* The exporter: gpuwardd's own job history (STATE_DIR/gpuward.db, opened read-only) as a
 * simulator trace, so that a lab can replay its month under other policies.
 *
 * What the history says and the trace takes (docs/SIMULATOR.md, "Replaying your own history"):
 * every job that ended after it started, in submission order; times relative to the first
 * submission; users numbered in order of appearance; the GPUs, priority and time limit it
 * asked for; and what happened to it:
 *   COMPLETED  runtime = the attempts' run time added up (an upper bound of its work when a
 *              retry redid work since a checkpoint);
 *   FAILED     crashes at the last attempt's run time with its class, on every attempt
 *              (fail_repeat 1: it failed for good in reality); runtime unknown (inf);
 *   CANCELLED  cancelled that long after its first start; runtime inf;
 *   TIMEOUT    runs until its time limit (runtime inf);
 *   RECLAIMED  hangs at the last attempt's run time less the default profile's idle timeout
 *              (when it went idle is not recorded: an estimate); runtime inf.
 * Jobs still pending or running, and jobs that ended before they started (cancelled while
 * queued), are left out and counted in a comment line.  Nothing is known of checkpoints,
 * 0% samples or leaks: those columns keep their defaults. */
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/job.h"
#include "sim/sim.h"

struct export {
        sqlite3 *db;
        sqlite3_stmt *jobs, *attempts;
        FILE *out;
        int64_t t0;
        int64_t *uids;
        size_t n_uids, cap_uids;
        size_t written, skipped_live, skipped_unstarted;
};

static int user_index(struct export *x, int64_t uid) {
        for (size_t i = 0; i < x->n_uids; i++)
                if (x->uids[i] == uid)
                        return (int) i;
        if (x->n_uids == x->cap_uids) {
                x->cap_uids = x->cap_uids ? x->cap_uids * 2 : 32;
                x->uids = gw_xrealloc(x->uids, x->cap_uids * sizeof(*x->uids));
        }
        x->uids[x->n_uids] = uid;
        return (int) x->n_uids++;
}

static void secs(FILE *f, int64_t us) {
        if (us < 0)
                fputs("-1", f);
        else
                fprintf(f, "%" PRId64 ".%06" PRId64, us / GW_SIM_SEC, us % GW_SIM_SEC);
}

/* The attempts' run time added up, the last one's run time and class, the first start. */
struct attempts {
        int64_t total, last, first_start;
        char cls[32];
        size_t n;
};

static int read_attempts(struct export *x, int64_t id, int64_t start, int64_t end, struct attempts *a) {
        int rc;

        *a = (struct attempts){ .first_start = start };
        sqlite3_reset(x->attempts);
        sqlite3_bind_int64(x->attempts, 1, id);
        while ((rc = sqlite3_step(x->attempts)) == SQLITE_ROW) {
                int64_t s = sqlite3_column_int64(x->attempts, 0), e = sqlite3_column_int64(x->attempts, 1);
                const unsigned char *c = sqlite3_column_text(x->attempts, 2);
                if (s <= 0 || e < s)
                        continue;
                if (!a->n || s < a->first_start)
                        a->first_start = s;
                a->total += e - s;
                a->last = e - s;
                snprintf(a->cls, sizeof(a->cls), "%s", c ? (const char *) c : "");
                a->n++;
        }
        if (rc != SQLITE_DONE)
                return -EIO;
        if (!a->n && start > 0 && end >= start) { /* no attempt recorded: the job row itself */
                a->total = a->last = end - start;
                a->n = 1;
        }
        return 0;
}

static void write_outcome(FILE *f, int state, const struct attempts *a) {
        enum gw_failure_class cls = gw_failure_class_from_name(a->cls);
        const struct gw_reclaim_policy *p = gw_reclaim_policy_find(NULL, 0, "default");
        int64_t none = -1, stall = none, cancel = none, fail = none;

        switch (state) {
        case GW_JOB_FAILED:
                fail = a->last;
                if (cls < 0 || cls == GW_FAILURE_OK || cls == GW_FAILURE_CANCELLED || cls == GW_FAILURE_TIMEOUT ||
                    cls == GW_FAILURE_RECLAIMED)
                        cls = GW_FAILURE_USER_ERROR;
                break;
        case GW_JOB_CANCELLED:
                cancel = a->total;
                break;
        case GW_JOB_RECLAIMED:
                stall = p && a->last > p->idle_timeout ? a->last - p->idle_timeout : 0;
                break;
        default:
                break;
        }
        if (state == GW_JOB_COMPLETED)
                secs(f, a->total);
        else
                fputs("inf", f);
        fputc(',', f);
        secs(f, fail);
        fprintf(f, ",%s,%d,", fail >= 0 ? gw_failure_class_name(cls) : "", fail >= 0);
        secs(f, cancel);
        fputc(',', f);
        secs(f, stall);
        fputc('\n', f);
}

static int export_rows(struct export *x) {
        int rc;

        fprintf(x->out, "submit_s,user,gpus,priority,time_limit_s,runtime_s,fail_at_s,fail_class,fail_repeat,"
                        "cancel_at_s,stall_at_s\n");
        while ((rc = sqlite3_step(x->jobs)) == SQLITE_ROW) {
                int64_t id = sqlite3_column_int64(x->jobs, 0), uid = sqlite3_column_int64(x->jobs, 1);
                int ngpus = sqlite3_column_int(x->jobs, 2), prio = sqlite3_column_int(x->jobs, 3);
                int64_t limit = sqlite3_column_int64(x->jobs, 4), submit = sqlite3_column_int64(x->jobs, 5);
                int64_t start = sqlite3_column_int64(x->jobs, 6), end = sqlite3_column_int64(x->jobs, 7);
                int state = sqlite3_column_int(x->jobs, 8);
                struct attempts a;

                if (!x->written && !x->skipped_live && !x->skipped_unstarted)
                        x->t0 = submit;
                if (state < GW_JOB_COMPLETED || state >= _GW_JOB_STATE_MAX) {
                        x->skipped_live++;
                        continue;
                }
                if (read_attempts(x, id, start, end, &a) < 0)
                        return -EIO;
                if (!a.n || ngpus < 1 || ngpus > 64) {
                        x->skipped_unstarted++;
                        continue;
                }
                secs(x->out, submit - x->t0);
                fprintf(x->out, ",%d,%d,%d,", user_index(x, uid), ngpus, prio);
                secs(x->out, limit > 0 ? limit : 24 * GW_SIM_HOUR);
                fputc(',', x->out);
                write_outcome(x->out, state, &a);
                x->written++;
        }
        if (rc != SQLITE_DONE)
                return -EIO;
        fprintf(x->out, "# %zu jobs exported; left out: %zu pending or running, %zu ended before they started\n",
                x->written, x->skipped_live, x->skipped_unstarted);
        return ferror(x->out) ? -EIO : 0;
}

int gw_sim_export_state(const char *state_dir, FILE *out, char *msg, size_t msg_size) {
        struct export x = { .out = out };
        char path[4096];
        int k;

        if ((size_t) snprintf(path, sizeof(path), "%s/gpuward.db", state_dir) >= sizeof(path)) {
                snprintf(msg, msg_size, "%s: path too long", state_dir);
                return -ENAMETOOLONG;
        }
        /* Read-only: a running daemon keeps writing; we never change its state. */
        int rc = sqlite3_open_v2(path, &x.db, SQLITE_OPEN_READONLY, NULL);
        if (rc == SQLITE_OK)
                (void) sqlite3_busy_timeout(x.db, 5000);
        if (rc != SQLITE_OK ||
            sqlite3_prepare_v2(x.db,
                               "SELECT id, uid, ngpus, priority, time_limit, submit_time, start_time, end_time, state "
                               "FROM jobs ORDER BY submit_time, id",
                               -1, &x.jobs, NULL) != SQLITE_OK ||
            sqlite3_prepare_v2(
                    x.db, "SELECT start_time, end_time, class FROM job_attempts WHERE job_id = ?1 ORDER BY attempt", -1,
                    &x.attempts, NULL) != SQLITE_OK) {
                snprintf(msg, msg_size, "%s: %s", path, x.db ? sqlite3_errmsg(x.db) : "cannot open");
                k = -EIO;
        } else {
                k = export_rows(&x);
                if (k < 0)
                        snprintf(msg, msg_size, "%s: %s", path, sqlite3_errmsg(x.db));
        }
        sqlite3_finalize(x.jobs);
        sqlite3_finalize(x.attempts);
        sqlite3_close(x.db);
        free(x.uids);
        return k;
}
