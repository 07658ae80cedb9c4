/* Sharing the GPUs fairly: bookings (the calendar), quotas, rate limits and API tokens.
 * The decisions are in core/calendar, core/quota, core/ratelimit and core/token; this is
 * their state in the daemon and its persistence. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/calendar.h"
#include "core/quota.h"
#include "core/ratelimit.h"
#include "daemon/daemon.h"

#define GW_SHARING_MAX_SUBJECTS 256

struct gw_quota_subject {
        char name[80]; /* "default", "user:alice", "group:lab" */
        struct gw_quota q;
};

struct gw_sharing {
        struct gw_store_booking *bookings; /* open ones: PENDING_APPROVAL, APPROVED, ACTIVE */
        size_t n_bookings, cap_bookings;
        struct gw_quota_subject subjects[GW_SHARING_MAX_SUBJECTS];
        size_t n_subjects;
        struct gw_ratelimit *limits; /* per uid: submissions and bookings */
        gw_usec_t next_tick; /* monotonic */
        gw_usec_t no_show, warn_before_end;
};

/* The calendar's view of now: GPUs, bookings, running and pending jobs.  The arrays are
 * allocated; free with gw_calendar_view_free.  What training knows (ETAs, expected run
 * times, dependencies, memory needs) is not in it: the bookings' decisions do not read it;
 * the schedule's layout and the predictions add it with gw_training_fill_view. */
struct calendar_view {
        struct gw_calendar_input in;
        struct gw_sched_gpu gpus[GW_SCHED_MAX_GPUS];
        struct gw_booking *bookings;
        struct gw_cal_job *running;
        struct gw_cal_pending *pending;
};
void gw_calendar_view(struct gw_daemon *d, struct calendar_view *v);
void gw_calendar_view_free(struct calendar_view *v);
struct gw_store_booking *gw_sharing_booking(struct gw_daemon *d, int64_t id);
/* Where the backend holds bookings (executor.h's book): whether it holds booking now; and
 * booking b, over and recorded so, is to be let go.  Where the calendar holds them: false,
 * and nothing to let go. */
bool gw_sharing_book_held(struct gw_daemon *d, int64_t booking);
void gw_sharing_book_drop(struct gw_daemon *d, const struct gw_store_booking *b);
/* When dj's running attempt must stop (dj->limit_at, monotonic; dj->limit_by_booking): its time
 * limit counted from its recorded start, or its booking's end if that comes first.  The one
 * rule for a start and for a re-adoption after a restart, which therefore moves neither. */
void gw_sharing_job_limit(struct gw_daemon *d, struct gw_djob *dj);
/* Frees what sharing keeps of dj (GW_HOOK_JOB_FREED). */
void gw_sharing_forget(struct gw_daemon *d, struct gw_djob *dj);
/* Whether the job's current attempt was already warned that its booking ends soon, from
 * the attempt's events (ev, n; gw_store_job_attempt_events): a restarted daemon that
 * re-adopts it inside the warning window warns it once, not twice. */
void gw_sharing_warned_restore(struct gw_daemon *d, struct gw_djob *dj, const struct gw_job_event *ev, size_t n);
/* A booking was just made final by a person (released, denied), already recorded and still in
 * the open list: the calendar's rule for a booking that is over stops its running jobs now
 * (SIGTERM, grace, SIGKILL; TIMEOUT "its booking ended early: released by USER"), then it
 * leaves the list.  Pointers into the list are invalid afterwards. */
void gw_sharing_booking_closed(struct gw_daemon *d);
/* The resolved limits of a user. */
void gw_sharing_limits(struct gw_daemon *d, uint32_t uid, const char *user, struct gw_quota *ret,
                       enum gw_quota_source src[_GW_QUOTA_KEY_MAX]);
void gw_sharing_usage(struct gw_daemon *d, uint32_t uid, struct gw_quota_usage *u);
/* gw_sharing_limits with what the user's role gives where no quota entry says (FROM role):
 * users' max_priority and max_pending_jobs from the config (user_max_priority,
 * max_pending_jobs); an admin's max_priority is always unlimited and their max_pending_jobs
 * unlimited unless a quota entry says.  What a submission is checked against. */
void gw_sharing_user_limits(struct gw_daemon *d, uint32_t uid, const char *user, bool admin, struct gw_quota *ret,
                            enum gw_quota_source src[_GW_QUOTA_KEY_MAX]);
/* n submissions (or bookings) from uid now, all or none: 0, the seconds to wait, or -E2BIG
 * when n is more than the bucket ever holds. */
int64_t gw_sharing_rate(struct gw_daemon *d, uint32_t uid, int64_t n);
/* Gives back the n just taken: what was refused after all does not count. */
void gw_sharing_rate_undo(struct gw_daemon *d, uint32_t uid, int64_t n);
/* Whether a quota is stored for subject ("user:alice", "group:lab", "default"). */
bool gw_sharing_has_quota(struct gw_daemon *d, const char *subject);
/* Sets the quota of subject ("user:alice", "group:lab", "default") from n "key=value"
 * settings, all or none, stored before it counts.  0; -EINVAL for a bad setting, -E2BIG for
 * too many subjects (why in msg); -EIO when the store refused (gw_store_errmsg). */
int gw_sharing_quota_set(struct gw_daemon *d, const char *subject, const char *const *settings, size_t n, char *msg,
                         size_t msg_n);

/* A booking asked for by uid (user; admin: the host's booking policy does not send it to an
 * admin), checked by the API for its form (daemon/http/handlers_share.c). */
struct gw_book_request {
        uint32_t uid;
        const char *user;
        bool admin;
        int ngpus;
        gw_usec_t start, len;
        const char *name; /* NULL: none */
};
/* What came of it: status 201 with the booking as stored; 400 or 403 (field, message); 409
 * when it does not fit (message; nearest_start and nearest_end, 0 when none, the nearest time
 * it would); 503 when the store refused (gw_store_errmsg). */
struct gw_book_result {
        int status;
        char field[16];
        char message[640]; /* the calendar's words, or Slurm's, with ours around them */
        gw_usec_t nearest_start, nearest_end;
        struct gw_store_booking booking;
};
/* Places the request, checks the user's booking quota and the host's booking policy, and
 * stores the booking, which then counts (sharing_book.c).  0, or < 0 with r saying why. */
int gw_sharing_book(struct gw_daemon *d, const struct gw_book_request *req, struct gw_book_result *r);
/* Moves the open booking b to state to with note, recorded before it counts; r->booking gets
 * the booking as it now is.  An approval places it again (it held nothing while it waited):
 * -EBUSY, b unchanged and still awaiting approval, r->status 409 with r->message (and the
 * nearest window that fits, if any) when it no longer fits.  -EIO, b as it was, when the
 * store refused.  A final state closes it as at its end (gw_sharing_booking_closed): b is
 * not valid afterwards. */
int gw_sharing_booking_set(struct gw_daemon *d, struct gw_store_booking *b, enum gw_booking_state to, const char *note,
                           struct gw_book_result *r);

/* sharing.c: bookings, quotas, rate limits, tokens */
struct gw_sharing;
int gw_sharing_open(struct gw_daemon *d);
void gw_sharing_close(struct gw_daemon *d);
/* Each loop iteration: booking starts, ends, warnings, no-shows; returns the next deadline
 * (monotonic) or GW_USEC_INFINITY. */
gw_usec_t gw_sharing_tick(struct gw_daemon *d);
/* Fills allowed/blocked of each pending job for the scheduler (bookings, quotas). */
void gw_sharing_sched(struct gw_daemon *d, struct gw_sched_job *pending, size_t n);
/* At submit: the priority's grant (403, field "priority"), quota hard limits (403, field
 * "quota") and the booking's ownership; 0 or -errno with err.  ahead: the user's jobs of the
 * same batch (an array's tasks one each), checked but not queued yet. */
int gw_sharing_check_submit(struct gw_daemon *d, struct gw_job *j, size_t ahead, struct gw_submit_error *err);
/* A job ended: its booking was used until now. */
void gw_sharing_job_ended(struct gw_daemon *d, const struct gw_job *j);
