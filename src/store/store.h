/* State in SQLite: jobs, their events, GPUs.  WAL, synchronous=NORMAL: a committed row
 * survives kill -9 of the daemon (not a power cut between checkpoints). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/jobrec.h"
#include "core/sharerec.h"

struct gw_store;
struct gw_store_booking;

/* Opens (creating) DIR/gpuward.db and applies the numbered migrations. */
int gw_store_open(const char *dir, struct gw_store **ret, char *err, size_t errlen);
struct gw_store *gw_store_close(struct gw_store *s);
/* Moves WAL checkpoints (copy into the database, two syncs) out of the commits into a thread
 * of the store's own, so that no commit waits for the disk (store/checkpoint.c). */
int gw_store_checkpoint_in_background(struct gw_store *s, char *err, size_t errlen);
/* The schema version this build migrates to (the number of migrations). */
int gw_store_schema_version(void);
/* Why the last call failed (SQLite's message, or the one recorded at the failure when a
 * rollback since has reset SQLite's). */
const char *gw_store_errmsg(struct gw_store *s);
/* The kind of the last failure as a negative errno: -ENOSPC (SQLITE_FULL), -EROFS
 * (SQLITE_READONLY, or an I/O error with errno EROFS), -EIO (other I/O errors), -EBUSY,
 * -ENOMEM, -EEXIST; 0 before any.  What the API maps to 507 or 503. */
int gw_store_error_kind(const struct gw_store *s);
/* Records a failure its caller found in what the store holds (it does not match the world):
 * gw_store_errmsg says msg (copied, cut to fit) and gw_store_error_kind err until the next
 * failure, for the caller that reports it.  Returns err. */
int gw_store_set_error(struct gw_store *s, int err, const char *msg);
/* How many writes have failed for want of space, a read-only file system or an I/O error:
 * a caller compares it before and after a call that swallows store errors. */
unsigned long gw_store_write_failures(const struct gw_store *s);

int gw_store_begin(struct gw_store *s);
int gw_store_commit(struct gw_store *s);
int gw_store_rollback(struct gw_store *s);

/* Inserts j (j->id ignored) with its "submit" event; writes the new id to j->id. */
int gw_store_job_insert(struct gw_store *s, struct gw_job *j, const char *message);
/* Writes j's mutable columns (state, reasons, gpus, times, exit, pids, attempt, log path,
 * cgroup) and appends an event (kind, message) in one transaction (unless one is open). */
int gw_store_job_update(struct gw_store *s, const struct gw_job *j, const char *kind, const char *message);
/* Writes the name of the --scratch folder of the job's current attempt (NULL: none kept), in
 * the transaction open if any: the attempt's start's, so that both or neither are kept.
 * 0 or -errno. */
int gw_store_job_scratch_name(struct gw_store *s, int64_t id, const char *name);
/* Appends an event without changing the job. */
int gw_store_job_event(struct gw_store *s, int64_t id, enum gw_job_state state, const char *kind, const char *message);

/* Told after each job insert, job update, job event and booking save that succeeded (the
 * daemon's event stream).  j is NULL for an event that does not change the job.  Copies o. */
struct gw_store_observer {
        void (*job)(void *userdata, int64_t id, const struct gw_job *j, enum gw_job_state state, const char *kind,
                    const char *message);
        void (*booking)(void *userdata, const struct gw_store_booking *b);
        void *userdata;
};
void gw_store_set_observer(struct gw_store *s, const struct gw_store_observer *o);

/* The job with that id (-ENOENT if none).  Caller frees with gw_job_free. */
int gw_store_job_get(struct gw_store *s, int64_t id, struct gw_job **ret);
/* Its state only, cheap (-ENOENT if none). */
int gw_store_job_state(struct gw_store *s, int64_t id, enum gw_job_state *ret);
int gw_store_job_events(struct gw_store *s, int64_t id, struct gw_job_event **ret, size_t *ret_n);
/* The events of the job's current attempt, oldest first: from its newest "start" event on (all of
 * them when it never started).  What a restarted daemon knows of the attempt it re-adopts.
 * Caller frees with gw_job_events_free. */
int gw_store_job_attempt_events(struct gw_store *s, int64_t id, struct gw_job_event **ret, size_t *ret_n);

typedef int (*gw_store_job_cb)(struct gw_job *j, void *userdata); /* takes ownership of j */

/* Every job in PENDING, HELD or RUNNING, by id. */
int gw_store_jobs_active(struct gw_store *s, gw_store_job_cb cb, void *userdata);

struct gw_store_filter {
        unsigned state_mask; /* 1 << state; 0 = any */
        bool by_uid;
        uint32_t uid;
        int64_t before_id; /* 0 = no bound */
        unsigned limit;
};
/* Jobs matching f, newest first. */
int gw_store_jobs_list(struct gw_store *s, const struct gw_store_filter *f, gw_store_job_cb cb, void *userdata);

struct gw_store_gpu {
        unsigned index;
        char uuid[96];
        char name[96];
        uint64_t mem_total;
        bool drained;
        char drain_reason[256];
};
int gw_store_gpu_upsert(struct gw_store *s, const struct gw_store_gpu *g);
int gw_store_gpu_get(struct gw_store *s, unsigned index, struct gw_store_gpu *ret);

/* Per-minute telemetry of a job's GPU, persisted for the job's whole life. */
struct gw_store_series_row {
        gw_usec_t t; /* start of the minute, wall clock */
        unsigned util_min, util_max;
        double util_mean;
        uint64_t mem_min, mem_mean, mem_max;
};
int gw_store_series_add(struct gw_store *s, int64_t job_id, unsigned gpu, const struct gw_store_series_row *row);
typedef void (*gw_store_series_cb)(unsigned gpu, const struct gw_store_series_row *row, void *userdata);
/* Rows with t >= since, by GPU then time. */
int gw_store_series_get(struct gw_store *s, int64_t job_id, gw_usec_t since, gw_store_series_cb cb, void *userdata);

/* Number of jobs in each state. */
int gw_store_state_counts(struct gw_store *s, uint64_t counts[_GW_JOB_STATE_MAX]);

/* One finished attempt of a job (its id never changes across attempts). */
int gw_store_attempt_add(struct gw_store *s, int64_t job_id, const struct gw_job_attempt *a);
/* All recorded attempts, oldest first; caller frees with gw_job_attempts_free. */
int gw_store_attempts(struct gw_store *s, int64_t job_id, struct gw_job_attempt **ret, size_t *ret_n);

/* Bookings (struct gw_store_booking: core/sharerec.h). */
int gw_store_booking_save(struct gw_store *s, struct gw_store_booking *b);
typedef void (*gw_store_booking_cb)(const struct gw_store_booking *b, void *userdata);
/* Booking id's Slurm reservation is gone: resv_drop cleared. */
int gw_store_booking_resv_dropped(struct gw_store *s, int64_t id);
enum gw_store_bookings_which {
        GW_STORE_BOOKINGS_OPEN, /* PENDING_APPROVAL, APPROVED, ACTIVE, by start */
        GW_STORE_BOOKINGS_RECENT, /* the latest 1000 */
        GW_STORE_BOOKINGS_RESV_DROP, /* those whose Slurm reservation is still to delete */
};
/* Calls cb with each booking of which; 0, or -errno.  An insert by gw_store_booking_save
 * sets b->created (when 0) and b->id. */
int gw_store_bookings(struct gw_store *s, enum gw_store_bookings_which which, gw_store_booking_cb cb, void *userdata);

/* Quota settings: subject "default", "user:NAME" or "group:NAME"; value -1 deletes. */
int gw_store_quota_set(struct gw_store *s, const char *subject, const char *key, int64_t value);
typedef void (*gw_store_quota_cb)(const char *subject, const char *key, int64_t value, void *userdata);
int gw_store_quotas(struct gw_store *s, gw_store_quota_cb cb, void *userdata);
/* GPU-time (GPUs x microseconds) inside [since, now] of uid's jobs that ended (a running job's
 * is the daemon's to add: its runtime is on the monotonic clock). */
int gw_store_gpu_time_since(struct gw_store *s, uint32_t uid, gw_usec_t since, gw_usec_t now, gw_usec_t *ret);

/* API tokens, stored as their SHA-256 (struct gw_store_token: core/sharerec.h). */
/* scope: "" (the account's whole rights) or GW_TOKEN_SCOPE_AGENT (core/token.h); node: the
 * node an agent's token may post for (NULL or "" for none). */
int gw_store_token_add(struct gw_store *s, uint32_t uid, const char *user, const char *name, const char *hash,
                       gw_usec_t expires, const char *scope, const char *node, int64_t *ret_id);
/* The token with this hash, revoked or not, so that the caller can say which. -ENOENT */
int gw_store_token_find(struct gw_store *s, const char *hash, struct gw_store_token *ret);
typedef void (*gw_store_token_cb)(const struct gw_store_token *t, void *userdata);
int gw_store_tokens(struct gw_store *s, bool by_uid, uint32_t uid, gw_store_token_cb cb, void *userdata);
int gw_store_token_revoke(struct gw_store *s, int64_t id, bool by_uid, uint32_t uid); /* -ENOENT */
int gw_store_token_used(struct gw_store *s, int64_t id);
