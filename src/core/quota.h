/* Quotas: per user, per Unix group and a default.  Pure: the caller passes the limits
 * (from the config and `gpuward admin quota set`), the user's usage and now.
 *
 * A quota entry sets some keys and leaves the rest GW_QUOTA_UNSET.  Resolution is per
 * key: the user's own entry if it sets the key; otherwise the most permissive value
 * among the entries of the user's groups that set it (a user in @students (2 GPUs) and
 * @lab (4 GPUs) gets 4 — membership of a group can only add rights, never take them
 * away); otherwise the default entry; otherwise the built-in default: 30 days for
 * booking_horizon_hours (a booking far ahead holds GPUs from everyone's plans; an admin
 * sets "unlimited" to lift it); otherwise unlimited, or the role's value where the daemon
 * gives one (gw_quota_role_fill: users' max_priority and max_pending_jobs are never
 * unlimited).  The order of the groups does not matter.
 *
 * Units of the stored values (int64_t):
 *   max_gpus, max_pending_jobs, max_booking_gpus     counts
 *   max_priority                                      a job priority, 0..GW_PRIORITY_MAX
 *   max_time_limit, max_booking_hours,
 *   booking_horizon_hours                             gw_usec_t durations
 *   max_gpu_hours_7d                                  GPU-time in gw_usec_t (1 GPU-hour =
 *                                                     3600 s of one GPU)
 * GW_QUOTA_UNLIMITED is the largest value and the most permissive. */
#pragma once
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"

#define GW_QUOTA_UNSET ((int64_t) -1)
#define GW_QUOTA_UNLIMITED INT64_MAX
#define GW_QUOTA_WINDOW_7D ((gw_usec_t) 7 * 24 * 3600 * GW_USEC_PER_SEC)
#define GW_QUOTA_MSG_SIZE 192
#define GW_QUOTA_BOOKING_HORIZON_BUILTIN ((int64_t) 30 * 24 * 3600 * GW_USEC_PER_SEC)

/* A job's priority is one of these; anything below 0 is always the user's to choose. */
#define GW_PRIORITY_MIN (-1000)
#define GW_PRIORITY_MAX 1000

enum gw_quota_key {
        GW_QUOTA_MAX_GPUS,
        GW_QUOTA_MAX_PENDING_JOBS,
        GW_QUOTA_MAX_TIME_LIMIT,
        GW_QUOTA_MAX_GPU_HOURS_7D,
        GW_QUOTA_MAX_BOOKING_HOURS,
        GW_QUOTA_MAX_BOOKING_GPUS,
        GW_QUOTA_BOOKING_HORIZON_HOURS,
        GW_QUOTA_MAX_PRIORITY,
        _GW_QUOTA_KEY_MAX,
        _GW_QUOTA_KEY_INVALID = -EINVAL,
};

struct gw_quota {
        int64_t v[_GW_QUOTA_KEY_MAX]; /* GW_QUOTA_UNSET, a value, or GW_QUOTA_UNLIMITED */
};

/* Where a resolved value came from, for `gpuward quota`. */
enum gw_quota_source {
        GW_QUOTA_FROM_NONE, /* set nowhere, no built-in default: unlimited */
        GW_QUOTA_FROM_USER,
        GW_QUOTA_FROM_GROUP,
        GW_QUOTA_FROM_DEFAULT,
        GW_QUOTA_FROM_ROLE, /* set nowhere: the role's value (gw_quota_role_fill) */
        GW_QUOTA_FROM_BUILTIN, /* set nowhere: the built-in default */
};

const char *gw_quota_key_name(enum gw_quota_key k); /* "max_gpus"; NULL if out of range */
enum gw_quota_key gw_quota_key_from_name(const char *name); /* exact, lower case */

/* Every key GW_QUOTA_UNSET. */
void gw_quota_init(struct gw_quota *q);

/* Applies one "KEY=VALUE" setting to q.  Values:
 *   max_gpus, max_pending_jobs, max_booking_gpus   a count >= 0 ("0" forbids)
 *   max_time_limit                                 a duration as --time takes it ("2d",
 *                                                  "90m", "1-12:00:00"; bare = minutes)
 *   max_booking_hours, booking_horizon_hours       hours ("4", bare = hours) or a duration
 *                                                  with units ("90m", "2d")
 *   max_gpu_hours_7d                               GPU-hours, a whole number ("100")
 *   max_priority                                   0..GW_PRIORITY_MAX ("unlimited" is
 *                                                  GW_PRIORITY_MAX)
 *   any key                                        "unlimited" (or "none"); "unset" or
 *                                                  "inherit" to clear it (fall through to
 *                                                  groups and the default)
 * Returns 0, or -EINVAL with a one-line message in msg ("unknown quota key 'max_gpu'
 * (known: max_gpus, ...)", "max_gpus: '4x' is not a whole number >= 0"); q is changed
 * only on success.  msg may be NULL. */
int gw_quota_parse_setting(struct gw_quota *q, const char *setting, char *msg, size_t msg_size);

/* The value half alone, for config files that split KEY and VALUE themselves: writes the
 * stored value (GW_QUOTA_UNSET for "unset") to *ret.  Same rules and messages. */
int gw_quota_parse_value(enum gw_quota_key k, const char *value, int64_t *ret, char *msg, size_t msg_size);

/* A value as a user reads it: "4", "2d", "100 GPU-h", "unlimited", "unset". */
char *gw_quota_format_value(enum gw_quota_key k, int64_t v, char *buf, size_t n);

/* Resolves the limits for one user (see above).  user and deflt may be NULL; groups holds
 * n_groups pointers (entries for the user's groups; NULL entries are skipped).  ret_src,
 * if not NULL, receives where each key came from.  Never leaves a key UNSET: unset
 * everywhere means the built-in default, or GW_QUOTA_UNLIMITED. */
void gw_quota_resolve(const struct gw_quota *user, const struct gw_quota *const *groups, size_t n_groups,
                      const struct gw_quota *deflt, struct gw_quota *ret,
                      enum gw_quota_source ret_src[_GW_QUOTA_KEY_MAX]);

/* Keys set in no entry (ret_src GW_QUOTA_FROM_NONE after gw_quota_resolve) take role's
 * value where role sets it (not GW_QUOTA_UNSET), and come from GW_QUOTA_FROM_ROLE: what a
 * user gets that no admin wrote down, e.g. users' max_priority 0 where admins' is the most.
 * role may be NULL (nothing changes). */
void gw_quota_role_fill(struct gw_quota *lim, enum gw_quota_source src[_GW_QUOTA_KEY_MAX], const struct gw_quota *role);

/* What the daemon counts for the user, now. */
struct gw_quota_usage {
        int64_t gpus_running; /* GPUs held by the user's RUNNING jobs */
        int64_t pending_jobs; /* the user's PENDING and HELD jobs (an array: its tasks not
                                * started yet), the checked one excluded */
        gw_usec_t gpu_time_7d; /* GPU-time of the user's jobs in the last 7 days (running
                                * jobs counted up to now): gw_quota_gpu_time() */
        int64_t adds_jobs; /* at submit: the jobs the checked one adds (an array's tasks);
                                * 0 is read as 1 */
};

/* One job's use of GPUs, for the rolling window: start, end (0 while it runs), ngpus. */
struct gw_quota_interval {
        gw_usec_t start, end;
        int64_t ngpus;
};

/* GPU-time of these intervals inside [now - window, now].  Saturates at INT64_MAX. */
gw_usec_t gw_quota_gpu_time(const struct gw_quota_interval *iv, size_t n, gw_usec_t now, gw_usec_t window);

enum gw_quota_verdict {
        GW_QUOTA_OK,
        GW_QUOTA_WAIT, /* job stays PENDING, reason Quota, until usage drops */
        GW_QUOTA_REFUSE, /* submit refused (CLI error, HTTP 403/422) */
        _GW_QUOTA_VERDICT_MAX,
        _GW_QUOTA_VERDICT_INVALID = -EINVAL,
};

/* At submit.  Hard (REFUSE): max_time_limit exceeded; max_pending_jobs passed (pending_jobs
 * plus adds_jobs, so that an array is refused whole); the job
 * alone asks more than max_gpus (it could never start).  Wait-type (WAIT): the GPUs
 * running plus this job's pass max_gpus; gpu_time_7d has reached max_gpu_hours_7d.
 * Hard limits are checked first.  A message naming the limit, its value and the usage is
 * written to msg for WAIT and REFUSE ("" for OK).  limits must be resolved.  Returns the
 * verdict, or -EINVAL for bad arguments (ngpus < 1, time_limit <= 0). */
int gw_quota_check_submit(const struct gw_quota *limits, const struct gw_quota_usage *u, int64_t ngpus,
                          gw_usec_t time_limit, char *msg, size_t msg_size);

/* Before each scheduling pass, per pending job: only the wait-type limits (OK or WAIT).
 * If the daemon starts several of one user's jobs in one pass it must add each start to
 * gpus_running before checking the next. */
int gw_quota_check_start(const struct gw_quota *limits, const struct gw_quota_usage *u, int64_t ngpus, char *msg,
                         size_t msg_size);

/* How many of the user's jobs gw_quota_wait_reason names. */
#define GW_QUOTA_HOLDERS_SHOWN 4

/* Why a job waits on its user's quota, for the job's reason: the limit, the usage and the
 * jobs that hold it.  "Quota: max_gpus=1, 1 in use by job 24", "Quota: max_gpus=4, 3 in use
 * by jobs 24, 25; the job asks 2", or check_start's words for max_gpu_hours_7d.  holders:
 * the ids of the user's jobs holding GPUs, n_holders of them (the first
 * GW_QUOTA_HOLDERS_SHOWN are named, then "..."); may be NULL with 0.  Returns GW_QUOTA_WAIT
 * with buf written, GW_QUOTA_OK (buf "") when no wait-type limit is reached, or -EINVAL. */
int gw_quota_wait_reason(const struct gw_quota *limits, const struct gw_quota_usage *u, int64_t ngpus,
                         const int64_t *holders, size_t n_holders, char *buf, size_t n);

/* Whose word a job's maximum priority is (gw_quota_max_priority). */
enum gw_prio_source {
        GW_PRIO_FROM_ADMIN, /* the submitter is an admin: GW_PRIORITY_MAX */
        GW_PRIO_FROM_QUOTA, /* max_priority resolved for the user; quota_from says where */
        GW_PRIO_FROM_PROFILE, /* the idle profile's [policy.NAME] max_priority */
};

/* What grants a submission its priority, as Slurm's QOS does: the submitter's role, their
 * max_priority (resolved and role-filled: never unlimited for a user) and the profile the job
 * runs under. */
struct gw_prio_grant {
        bool admin; /* admins may use any priority */
        int64_t quota; /* max_priority; GW_QUOTA_UNLIMITED = GW_PRIORITY_MAX */
        enum gw_quota_source quota_from; /* GW_QUOTA_FROM_ROLE: users' default */
        int64_t profile; /* the profile's max_priority; < 0 = it grants none */
        const char *profile_name; /* borrowed; may be NULL when profile < 0 */
        const char *user; /* for the message: how an admin grants more */
};

/* The largest maximum that applies, GW_PRIORITY_MAX at most; *ret_from (may be NULL) says
 * whose it is (the quota's when the profile grants the same). */
int64_t gw_quota_max_priority(const struct gw_prio_grant *g, enum gw_prio_source *ret_from);

/* GW_QUOTA_OK when priority is at most the maximum (a priority <= 0 always is: lowering one's
 * own is everyone's right), else GW_QUOTA_REFUSE with msg naming the maximum, where it comes
 * from and how an admin grants more: "priority 1000 is above your maximum 0 (users' default;
 * an admin grants more: gpuward admin quota set alice max_priority=N)".  -EINVAL for bad
 * arguments. */
int gw_quota_check_priority(const struct gw_prio_grant *g, int64_t priority, char *msg, size_t msg_size);

enum gw_quota_booking_verdict {
        GW_QUOTA_BOOKING_APPROVE,
        GW_QUOTA_BOOKING_NEEDS_APPROVAL, /* PENDING_APPROVAL: above max_booking_hours/_gpus */
        GW_QUOTA_BOOKING_REFUSE, /* starts beyond booking_horizon_hours */
        _GW_QUOTA_BOOKING_VERDICT_MAX,
        _GW_QUOTA_BOOKING_VERDICT_INVALID = -EINVAL,
};

/* A booking of ngpus over [start, end) by a user who already holds booked_gpus GPUs in
 * other bookings overlapping it (the most at any one instant:
 * gw_calendar_user_booked_gpus()).  REFUSE when start > now + booking_horizon_hours;
 * NEEDS_APPROVAL when end - start > max_booking_hours or booked_gpus + ngpus >
 * max_booking_gpus.  Capacity is the calendar's business, not this.  Returns the verdict
 * (message in msg for the last two), or -EINVAL for ngpus < 1 or end <= start. */
int gw_quota_check_booking(const struct gw_quota *limits, int64_t booked_gpus, int64_t ngpus, gw_usec_t start,
                           gw_usec_t end, gw_usec_t now, char *msg, size_t msg_size);
