/* The booking calendar and the 72-hour schedule.  Pure: plain structs in, decisions out,
 * now passed in; no I/O, no clock, no globals.
 *
 * Every instant here is wall-clock time (gw_usec_t since the epoch): bookings are made
 * in it, and running jobs' predicted ends must be converted to it by the caller.
 *
 * What the daemon keeps per booking (struct gw_booking) and does with the results:
 *   reserve      gw_calendar_check_request(), gw_quota_check_booking() and
 *                gw_calendar_place(): FITS -> store it APPROVED (or PENDING_APPROVAL if
 *                quota says so) with the chosen gpu_mask; otherwise print the message.
 *   each loop    gw_calendar_tick(): booking state changes, warnings and stops for jobs
 *                in bookings, GPUs re-chosen when one was drained.
 *   scheduling   gw_calendar_gpus_at(): per GPU, the booking that owns it now or the start
 *                of the next one; a job outside bookings may take GPU i only if
 *                now + time_limit <= free_until[i] (gw_calendar_free_for()).  Pending jobs
 *                in a booking: gw_calendar_gate() says wait / run on these GPUs until T /
 *                the booking is gone.
 *   schedule     gw_schedule_layout() and gw_schedule_render_text().
 *
 * Bookings APPROVED and ACTIVE hold capacity: no other booking is placed over them.  A
 * booking PENDING_APPROVAL holds nothing: others may book its GPUs and time, and jobs run on
 * them, until an admin approves it; the approval places it again (gw_calendar_place with
 * ignore_id) and is refused when it no longer fits.  Unanswered for pending_ttl, it is
 * denied (gw_calendar_tick). */
#pragma once
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"
#include "core/sched.h"

#define GW_CALENDAR_MSG_SIZE 256
#define GW_CALENDAR_SEARCH_DEFAULT ((gw_usec_t) 7 * 24 * 3600 * GW_USEC_PER_SEC)
#define GW_CALENDAR_PAST_SLACK ((gw_usec_t) 60 * GW_USEC_PER_SEC)
#define GW_CALENDAR_NO_SHOW_DEFAULT ((gw_usec_t) 15 * 60 * GW_USEC_PER_SEC)
#define GW_CALENDAR_WARN_DEFAULT ((gw_usec_t) 5 * 60 * GW_USEC_PER_SEC)

enum gw_booking_state {
        GW_BOOKING_PENDING_APPROVAL,
        GW_BOOKING_APPROVED,
        GW_BOOKING_ACTIVE,
        GW_BOOKING_ENDED,
        GW_BOOKING_RELEASED, /* unreserved, or a no-show */
        GW_BOOKING_DENIED, /* by an admin, or never approved before its end */
        _GW_BOOKING_STATE_MAX,
        _GW_BOOKING_STATE_INVALID = -EINVAL,
};

const char *gw_booking_state_name(enum gw_booking_state s); /* "APPROVED"; NULL if bad */
enum gw_booking_state gw_booking_state_from_name(const char *name); /* case-insensitive */
bool gw_booking_state_holds_capacity(enum gw_booking_state s); /* APPROVED, ACTIVE */
bool gw_booking_state_is_open(enum gw_booking_state s); /* those and PENDING_APPROVAL */
bool gw_booking_state_is_final(enum gw_booking_state s);
/* PENDING_APPROVAL -> APPROVED | DENIED | RELEASED; APPROVED -> ACTIVE | ENDED | RELEASED;
 * ACTIVE -> ENDED | RELEASED. */
bool gw_booking_transition_ok(enum gw_booking_state from, enum gw_booking_state to);

struct gw_booking {
        int64_t id;
        uint32_t uid;
        int ngpus;
        gw_usec_t start, end; /* [start, end) */
        uint64_t gpu_mask; /* chosen by gw_calendar_place(); 0 = not placed, ignored */
        enum gw_booking_state state;
        gw_usec_t last_used; /* when a job of this booking last ended (the daemon sets it
                                * as one ends), 0 = never: the no-show clock runs from
                                * max(start, last_used) while none of its jobs runs */
        const char *label; /* borrowed, may be NULL: shown in the schedule */
        gw_usec_t created; /* when it was asked for, 0 = unknown (never expires unanswered) */
};

/* A running job as the calendar sees it. */
struct gw_cal_job {
        int64_t id;
        int64_t booking_id; /* 0 = not in a booking */
        uint64_t gpu_mask;
        gw_usec_t start; /* when it started; 0 = unknown */
        gw_usec_t end; /* predicted end: start + time limit (later the ETA) */
        bool warned; /* the booking-end warning was already sent */
        const char *label; /* borrowed, may be NULL */
        gw_usec_t eta; /* its estimated end, 0 = none: the schedule and the predicted
                                * starts end it at min(eta, end); bookings still use end */
        uint32_t uid; /* its user, for pending jobs' max_gpus (predicted starts) */
};

/* A pending job, for the schedule's predicted starts and for no-show. */
struct gw_cal_pending {
        int64_t id;
        int ngpus;
        gw_usec_t time_limit; /* > 0; the default limit for jobs submitted without one */
        int64_t booking_id; /* 0 = none */
        bool held; /* no prediction: held, or waiting on a job not in the input */
        gw_usec_t not_before; /* earliest start known (0 = none) */
        const char *label; /* borrowed, may be NULL */
        gw_usec_t runtime; /* expected run time (core/predict.h), 0 = its time limit */
        int64_t after_job; /* waits for this job to end (0 = none), if it is in the input */
        gw_usec_t after_end; /* > 0: after_job's end as the caller predicts it, for a job the
                                * replay does not time (one on MIG slices, core/predict_mig.h):
                                * the job starts no earlier, and after_job is not looked up */
        uint64_t gpu_mem; /* minimum free bytes per GPU, 0 = any */
        uint32_t uid; /* its user */
        int64_t max_gpus; /* its user's max_gpus quota, <= 0 = none: the predicted start
                                * waits until the user's running jobs leave room for it */
};

struct gw_calendar_input {
        const struct gw_sched_gpu *gpus; /* index and usable are read */
        size_t n_gpus;
        const struct gw_booking *bookings; /* any order, any state */
        size_t n_bookings;
        const struct gw_cal_job *running;
        size_t n_running;
        const struct gw_cal_pending *pending; /* queue order: priority, then submission */
        size_t n_pending;
};

/* Formats instant t for a person into buf.  ref is the instant t follows in the same
 * phrase (a window's start, when t is its end), or GW_USEC_INFINITY: a formatter may then
 * leave out what t shares with ref ("Sat 10:00" then "12:00").  The daemon passes one
 * using localtime_r; tests pass a fixed one. */
typedef void (*gw_time_format_fn)(gw_usec_t t, gw_usec_t ref, char *buf, size_t n, void *userdata);

/* The fallback used when a NULL formatter is passed: UTC, "2024-06-01 09:00", the date
 * left out when t falls on ref's day. */
void gw_calendar_format_utc(gw_usec_t t, gw_usec_t ref, char *buf, size_t n, void *userdata);

/* ---- Placing a booking ---- */

struct gw_calendar_request {
        int ngpus;
        gw_usec_t start, duration;
        int64_t ignore_id; /* a booking to leave out (re-placing it), 0 = none */
        gw_usec_t search; /* how far past start to look for another window;
                                * 0 = GW_CALENDAR_SEARCH_DEFAULT */
};

/* Checks what a user typed: 1..64 GPUs, a positive duration, a start not before
 * now - GW_CALENDAR_PAST_SLACK.  Returns 0, or -EINVAL with one line in msg. */
int gw_calendar_check_request(const struct gw_calendar_request *req, gw_usec_t now, char *msg, size_t msg_size);

enum gw_place_verdict {
        GW_PLACE_FITS, /* gpu_mask is free over the requested window */
        GW_PLACE_LATER, /* busy; [start, end) on gpu_mask is the nearest window that fits */
        GW_PLACE_NEVER, /* not enough usable GPUs, or no window within the search */
};

struct gw_calendar_placement {
        enum gw_place_verdict verdict;
        uint64_t gpu_mask; /* FITS / LATER: the GPUs */
        gw_usec_t start, end; /* FITS: as requested; LATER: the nearest window */
        int n_free; /* GPUs free over the whole requested window */
        char message[GW_CALENDAR_MSG_SIZE];
};

/* Decides whether req fits and on which GPUs.  A GPU is free over [s, e) when it is
 * usable, no capacity-holding booking on it overlaps [s, e), and no running job on it has
 * a predicted end after s.  The lowest-index free GPUs are chosen.  If fewer are free,
 * the window is slid forward to each instant at which a booking or a running job ends
 * (the only instants at which more GPUs can become free), up to req->search past the
 * requested start, and the first that fits is proposed.  message is one line:
 *   "2 GPUs (0,1) Sat 09:00-13:00"
 *   "only 2 GPUs free Sat 10:00-12:00; nearest window for 4 GPUs: Sat 13:00-15:00"
 * fmt may be NULL (gw_calendar_format_utc).  Returns 0 (the verdict in *ret), or -EINVAL
 * for malformed input (ngpus outside 1..64, duration <= 0, a gpu index >= 64). */
int gw_calendar_place(const struct gw_calendar_input *in, const struct gw_calendar_request *req, gw_time_format_fn fmt,
                      void *userdata, struct gw_calendar_placement *ret);

/* The most GPUs uid holds at any one instant of [start, end) in capacity-holding
 * bookings (not those awaiting approval) other than ignore_id: the usage for
 * gw_quota_check_booking(). */
int64_t gw_calendar_user_booked_gpus(const struct gw_booking *b, size_t n, uint32_t uid, gw_usec_t start, gw_usec_t end,
                                     int64_t ignore_id);

/* ---- What the scheduler needs at now ---- */

struct gw_calendar_gpus {
        /* Booking (APPROVED or ACTIVE) whose window covers now on this GPU, 0 if none.
         * Only that booking's jobs may start on it. */
        int64_t owner[GW_SCHED_MAX_GPUS];
        /* Jobs outside bookings must end by this instant to start on it: now when owned,
         * else the start of the next capacity-holding booking, else GW_USEC_INFINITY. */
        gw_usec_t free_until[GW_SCHED_MAX_GPUS];
        int64_t next_id[GW_SCHED_MAX_GPUS]; /* the booking starting at free_until, or 0 */
        uint64_t owned; /* mask of GPUs with an owner */
        /* The distinct free_until of unowned GPUs, ascending, and for each the GPUs free at
         * least that long: gw_calendar_free_for() answers with one binary search, as the
         * schedule's prediction asks it for every pending job at every instant. */
        int n_levels;
        gw_usec_t level[GW_SCHED_MAX_GPUS];
        uint64_t free_through[GW_SCHED_MAX_GPUS];
};

/* Fills *ret (levels included) for every GPU index 0..63 from the bookings' masks.  A booking
 * PENDING_APPROVAL keeps no job off its GPUs, neither before its start nor after: an
 * unapproved booking must not keep GPUs idle or jobs waiting.  Returns 0 or -EINVAL. */
int gw_calendar_gpus_at(const struct gw_calendar_input *in, gw_usec_t now, struct gw_calendar_gpus *ret);

/* The GPUs of mask on which a job outside bookings, starting now with this time limit,
 * ends before any booking: those unowned with now + time_limit <= free_until.  This is
 * the filter to apply to a job's candidate GPUs before the scheduler's own choice.  A
 * time_limit <= 0 counts as unlimited (no GPU with a booking ahead); the daemon passes the
 * default limit for jobs submitted without one, as the scheduler needs. */
uint64_t gw_calendar_free_for(const struct gw_calendar_gpus *g, uint64_t mask, gw_usec_t now, gw_usec_t time_limit);

/* Applies gw_calendar_free_for() to job j, outside bookings and starting now with its time
 * limit, on a host whose GPUs are all: leaves j alone when every GPU is free long enough,
 * else limits it to those that are (j->allowed) or, when none is, sets j->none_allowed. */
void gw_calendar_limit_job(const struct gw_calendar_gpus *g, uint64_t all, gw_usec_t now, struct gw_sched_job *j);

enum gw_gate {
        GW_GATE_NONE, /* not in a booking: schedule normally (with gw_calendar_free_for) */
        GW_GATE_WAIT, /* the booking has not started (reason Reservation) */
        GW_GATE_OPEN, /* may start now, only on gpu_mask, and must end by until */
        GW_GATE_CLOSED, /* the booking ended, was released or denied, or does not exist:
                         * the daemon ends the job */
};

struct gw_calendar_gate {
        enum gw_gate gate;
        uint64_t gpu_mask; /* OPEN: the booking's usable GPUs */
        gw_usec_t until; /* OPEN: the booking's end (clip the time limit to it) */
        int64_t booking_id;
};

/* What a pending job in booking booking_id (0 = none) may do at now. */
int gw_calendar_gate(const struct gw_calendar_input *in, int64_t booking_id, gw_usec_t now,
                     struct gw_calendar_gate *ret);

/* ---- Per loop iteration: state changes and actions ---- */

struct gw_calendar_params {
        gw_usec_t no_show; /* release an ACTIVE booking idle this long */
        gw_usec_t warn_before_end; /* warn booking jobs this long before its end */
        gw_usec_t pending_ttl; /* deny one awaiting approval this long after it was
                                     * asked for; 0 = only at its end */
};

enum gw_cal_action_kind {
        GW_CAL_ACTIVATE, /* APPROVED -> ACTIVE: its start has come */
        GW_CAL_END, /* APPROVED/ACTIVE -> ENDED: its end has come */
        GW_CAL_NO_SHOW, /* ACTIVE -> RELEASED: no job ran for no_show (emit an event) */
        GW_CAL_EXPIRE, /* PENDING_APPROVAL -> DENIED: its end came before an approval */
        GW_CAL_EXPIRE_UNANSWERED, /* PENDING_APPROVAL -> DENIED: pending_ttl passed unanswered */
        GW_CAL_REASSIGN, /* before its start: gpu_mask replaces GPUs that are not usable */
        GW_CAL_CONFLICT, /* before its start, a GPU is not usable and no free one can
                           * replace it: tell the owner and the admins */
        GW_CAL_WARN_JOB, /* send the warning signal to job_id; the booking ends soon */
        GW_CAL_STOP_JOB, /* stop job_id (SIGTERM, grace, SIGKILL): its booking is over.
                           * Repeated every tick while it runs; idempotent for the daemon */
};

struct gw_cal_action {
        enum gw_cal_action_kind kind;
        int64_t booking_id;
        int64_t job_id; /* WARN_JOB, STOP_JOB */
        uint64_t gpu_mask; /* REASSIGN */
        enum gw_booking_state new_state; /* ACTIVATE, END, NO_SHOW, EXPIRE(_UNANSWERED) */
};

/* Upper bound of the actions gw_calendar_tick() can emit for this input. */
size_t gw_calendar_tick_max(const struct gw_calendar_input *in);

/* Decides the actions due at now, in booking order, then job order.  A booking has no-shown
 * when it is ACTIVE, none of its jobs is running or pending, and now is no_show past
 * max(start, last_used).  Writes up to cap actions to out and their count to *ret_n;
 * returns 0, -ENOBUFS when cap was too small (size it with gw_calendar_tick_max()), or
 * -EINVAL. */
int gw_calendar_tick(const struct gw_calendar_input *in, gw_usec_t now, const struct gw_calendar_params *p,
                     struct gw_cal_action *out, size_t cap, size_t *ret_n);

/* Booked windows per GPU over [from, to): one per (GPU, capacity-holding booking),
 * sorted by GPU then start; what a reservation-aware scheduler takes as input. */
struct gw_cal_window {
        int gpu;
        gw_usec_t start, end;
        int64_t booking_id;
};

int gw_calendar_windows(const struct gw_calendar_input *in, gw_usec_t from, gw_usec_t to, struct gw_cal_window *out,
                        size_t cap, size_t *ret_n);

/* ---- The schedule (calendar_layout.c) ---- */

enum gw_segment_kind {
        GW_SEG_RUNNING, /* a running job until its predicted end */
        GW_SEG_PREDICTED, /* a pending job's predicted run */
        GW_SEG_BOOKING, /* an APPROVED or ACTIVE booking */
        GW_SEG_BOOKING_PENDING, /* a booking awaiting approval */
        GW_SEG_DRAINED, /* the GPU is not usable (whole horizon) */
        _GW_SEGMENT_KIND_MAX,
        _GW_SEGMENT_KIND_INVALID = -EINVAL,
};

#define GW_SEGMENT_LABEL_SIZE 48

struct gw_schedule_segment {
        int gpu;
        gw_usec_t start, end; /* real times, not clipped to the horizon; a running
                                      * job's start is now when unknown */
        enum gw_segment_kind kind;
        int64_t id; /* job id, booking id, 0 for DRAINED */
        int64_t booking_id; /* job segments: the booking it runs in, else 0 */
        char label[GW_SEGMENT_LABEL_SIZE]; /* copied from the input, truncated */
};

const char *gw_segment_kind_name(enum gw_segment_kind k); /* "running", "predicted", ... */

/* Upper bound of the segments gw_schedule_layout() can write for this input. */
size_t gw_schedule_layout_max(const struct gw_calendar_input *in);

/* Lays out [now, now + horizon) per GPU: drained GPUs, running jobs until their predicted
 * end (min(eta, end)), capacity-holding bookings, and predicted runs of pending jobs.  The
 * prediction is gw_predict_starts() (core/predict.h): the scheduler replayed forward with
 * expected run times; jobs in a booking start inside it, on its GPUs, and end by its end.
 * Jobs predicted to start after the horizon get no segment.
 * Segments overlap only where a job runs inside its booking.  Sorted by GPU, then start.
 * Writes up to cap segments and their count to *ret_n; returns 0, -ENOBUFS, -ENOMEM or
 * -EINVAL (horizon <= 0, bad input).  Allocates scratch memory and frees it. */
int gw_schedule_layout(const struct gw_calendar_input *in, gw_usec_t now, gw_usec_t horizon,
                       struct gw_schedule_segment *out, size_t cap, size_t *ret_n);

#define GW_SCHEDULE_MAX_COLUMNS 1024

/* Draws segments as a text chart of [from, to), one column per `column` (an hour for the
 * 72-hour view), one row per GPU in rows (a mask, ascending), a time header every few
 * columns, and a legend.  A cell shows the segment that covers most of it (a job before
 * its booking on a tie): letters name up to 61 jobs and bookings in order of appearance,
 * then '#' running, '+' predicted, '=' booked, '?' awaiting approval; '.' is free and 'x'
 * drained.  Every item of the legend is drawn on each GPU it is on: one that covers less of
 * every cell it is in than another item takes a cell that item can spare, else it goes on a
 * line under the GPU's row (up to 16; the legend marks any still left out).  Writes NUL-terminated text into buf; returns its length, -ENOBUFS if it did
 * not fit (buf holds a truncated, terminated chart), or -EINVAL (more than
 * GW_SCHEDULE_MAX_COLUMNS columns, column <= 0, to <= from). */
int gw_schedule_render_text(const struct gw_schedule_segment *segs, size_t n, uint64_t rows, gw_usec_t from,
                            gw_usec_t to, gw_usec_t column, gw_time_format_fn fmt, void *userdata, char *buf,
                            size_t size);
