/* Making a booking: the calendar places it, the user's booking quota and the host's booking
 * policy decide whether it stands or waits for an admin, and it is stored before it counts;
 * and changing one (approved, denied, released), recorded before it counts too. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/parse.h"
#include "core/bookpolicy.h"
#include "daemon/nodes/nodes.h"
#include "daemon/sharing/sharing.h"

/* The host's booking policy (core/bookpolicy.h) on a booking that fits and that the user's
 * quota approves: GW_BOOKPOLICY_OK, or the rule that sends it to an admin (why in msg). */
static int book_policy(struct gw_daemon *d, bool admin, const struct calendar_view *v, const struct gw_booking *b,
                       gw_usec_t now, char *msg, size_t n) {
        const struct gw_bookpolicy *p = &d->cfg->booking;
        /* On a cluster a share is of the nodes' GPUs, not of the head node's (often none). */
        bool cluster = gw_backend_placement(d) == GW_EXEC_PLACE_NODES;
        struct gw_bookpolicy_ask a = { .admin = admin,
                                       .ngpus = b->ngpus,
                                       .host_gpus = cluster ? gw_nodes_gpu_count(d->nodes) : d->host.n_gpus,
                                       .cluster = cluster,
                                       .duration = b->end - b->start };
        int r = gw_bookpolicy_check(p, &a, msg, n);
        /* The schedule's prediction, twice, only where it can still change the answer. */
        if (r != GW_BOOKPOLICY_OK || admin || p->may_delay_waiting)
                return r;
        if (gw_bookpolicy_delays(&v->in, b, now, &a.delayed, &a.delayed_first) < 0) {
                /* Unknown is not "none": an admin looks at it. */
                a.delayed = 1;
                a.delayed_first = 0;
        }
        return gw_bookpolicy_check(p, &a, msg, n);
}

static int refuse(struct gw_book_result *r, int status, const char *field, const char *msg) {
        r->status = status;
        snprintf(r->field, sizeof r->field, "%s", field ? field : "");
        snprintf(r->message, sizeof r->message, "%s", msg);
        return -EINVAL;
}

/* Stores b and adds it to the open bookings; -EIO when the store refused.  Where the backend
 * holds bookings (Slurm: a reservation of whole nodes named after its id) an approved one is
 * stored, held, then committed, so that a refusal (nothing free for the window, -EBUSY with
 * the backend's words in msg) leaves nothing behind. */
static int book_store(struct gw_daemon *d, struct gw_store_booking *b, char *msg, size_t n) {
        const struct gw_exec_book_ops *book = gw_backend_book(d);
        bool hold = book && b->state == GW_BOOKING_APPROVED;
        if (gw_store_begin(d->store) < 0)
                return -EIO;
        if (gw_store_booking_save(d->store, b) < 0) {
                (void) gw_store_rollback(d->store);
                return -EIO;
        }
        int r = hold ? book->hold(d, b, msg, n) : 0;
        if (r < 0) {
                (void) gw_store_rollback(d->store);
                b->id = 0;
                return r;
        }
        if (gw_store_commit(d->store) < 0) {
                if (hold)
                        book->undo(d, b->id);
                return -EIO;
        }
        struct gw_sharing *s = d->sharing;
        if (s->n_bookings == s->cap_bookings) {
                s->cap_bookings = s->cap_bookings ? s->cap_bookings * 2 : 16;
                s->bookings = gw_xrealloc(s->bookings, s->cap_bookings * sizeof *s->bookings);
        }
        s->bookings[s->n_bookings++] = *b;
        d->jobs.sched_dirty = true;
        log_info("booking %lld by %s: %d GPUs %s%s%s", (long long) b->id, b->user, b->ngpus,
                 gw_booking_state_name(b->state), b->note[0] ? ": " : "", b->note);
        return 0;
}

int gw_sharing_book(struct gw_daemon *d, const struct gw_book_request *req, struct gw_book_result *r) {
        memset(r, 0, sizeof *r);
        struct gw_calendar_request cr = { .ngpus = req->ngpus, .start = req->start, .duration = req->len };
        char msg[GW_CALENDAR_MSG_SIZE];
        gw_usec_t now = d->now_wall, end = req->start + req->len;
        /* Where the backend holds bookings it judges the GPUs (its hold): this host's do not. */
        if (req->ngpus > (int) d->host.n_gpus && !gw_backend_book(d)) {
                snprintf(msg, sizeof msg, "ngpus: only %u GPUs on this host", d->host.n_gpus);
                return refuse(r, 400, "ngpus", msg);
        }
        if (gw_calendar_check_request(&cr, now, msg, sizeof msg) < 0)
                return refuse(r, 400, strstr(msg, "GPU") ? "ngpus" : "start", msg);
        struct calendar_view v;
        gw_calendar_view(d, &v);
        struct gw_quota lim;
        gw_sharing_limits(d, req->uid, req->user, &lim, NULL);
        int64_t mine = gw_calendar_user_booked_gpus(v.bookings, v.in.n_bookings, req->uid, req->start, end, 0);
        char qmsg[GW_QUOTA_MSG_SIZE] = "";
        int q = gw_quota_check_booking(&lim, mine, req->ngpus, req->start, end, now, qmsg, sizeof qmsg);
        struct gw_calendar_placement p;
        /* Where the backend holds bookings the calendar of this host's GPUs does not say where
         * one fits: the backend does, when it is asked to hold it (book_store). */
        int k = 0;
        if (gw_backend_book(d))
                p = (struct gw_calendar_placement){ .verdict = GW_PLACE_FITS };
        else if (q != GW_QUOTA_BOOKING_REFUSE)
                k = gw_calendar_place(&v.in, &cr, gw_format_local_time, NULL, &p);
        if (q == GW_QUOTA_BOOKING_APPROVE && k >= 0 && p.verdict == GW_PLACE_FITS) {
                struct gw_booking cand = { .uid = req->uid,
                                           .ngpus = req->ngpus,
                                           .start = req->start,
                                           .end = end,
                                           .gpu_mask = p.gpu_mask,
                                           .state = GW_BOOKING_APPROVED };
                if (book_policy(d, req->admin, &v, &cand, now, qmsg, sizeof qmsg) != GW_BOOKPOLICY_OK)
                        q = GW_QUOTA_BOOKING_NEEDS_APPROVAL;
        }
        gw_calendar_view_free(&v);
        if (q == GW_QUOTA_BOOKING_REFUSE)
                return refuse(r, 403, "start", qmsg);
        if (k < 0)
                return refuse(r, 400, NULL, "cannot place the booking");
        if (p.verdict != GW_PLACE_FITS) {
                if (p.verdict == GW_PLACE_LATER) {
                        r->nearest_start = p.start;
                        r->nearest_end = p.end;
                }
                return refuse(r, 409, "start", p.message);
        }
        bool wait = q == GW_QUOTA_BOOKING_NEEDS_APPROVAL;
        struct gw_store_booking *b = &r->booking;
        *b = (struct gw_store_booking){ .uid = req->uid,
                                        .ngpus = req->ngpus,
                                        .start = req->start,
                                        .end = end,
                                        .gpu_mask = p.gpu_mask,
                                        .state = wait ? GW_BOOKING_PENDING_APPROVAL : GW_BOOKING_APPROVED };
        snprintf(b->user, sizeof b->user, "%s", req->user);
        snprintf(b->name, sizeof b->name, "%s", req->name ? req->name : "");
        snprintf(b->note, sizeof b->note, "%s", wait ? qmsg : "");
        b->created = now;
        char smsg[512] = "";
        int sr = book_store(d, b, smsg, sizeof smsg);
        if (sr == -EIO) {
                r->status = 503;
                return -EIO;
        }
        if (sr < 0)
                return refuse(r, sr == -EBUSY ? 409 : 400, sr == -EBUSY ? "start" : "ngpus", smsg);
        r->status = 201;
        return 0;
}

/* An approval places the booking again, as a booking made now would be: while it waited it
 * held nothing, and others may have booked its GPUs and time since.  It takes the GPUs that
 * are free over its window (not necessarily those it first asked for); when fewer are free,
 * the approval is refused and the booking keeps waiting, for the admin to deny it or its
 * owner to release it.  Where the backend holds bookings it decides, when asked to hold it. */
static int approve_placed(struct gw_daemon *d, struct gw_store_booking *b, struct gw_book_result *r) {
        if (gw_backend_book(d)) {
                struct gw_store_booking as = *b;
                char why[512];
                as.state = GW_BOOKING_APPROVED;
                if (gw_backend_book(d)->hold(d, &as, why, sizeof why) == 0)
                        return 0;
                snprintf(r->message, sizeof r->message,
                         "booking %lld cannot be approved: %s; it still awaits "
                         "approval (deny it, or its owner may release it)",
                         (long long) b->id, why);
                return -EBUSY;
        }
        struct calendar_view v;
        struct gw_calendar_placement p;
        struct gw_calendar_request cr = { .ngpus = b->ngpus,
                                          .start = b->start,
                                          .duration = b->end - b->start,
                                          .ignore_id = b->id };
        gw_calendar_view(d, &v);
        int k = gw_calendar_place(&v.in, &cr, gw_format_local_time, NULL, &p);
        gw_calendar_view_free(&v);
        if (k == 0 && p.verdict == GW_PLACE_FITS) {
                b->gpu_mask = p.gpu_mask;
                return 0;
        }
        if (k == 0 && p.verdict == GW_PLACE_LATER) {
                r->nearest_start = p.start;
                r->nearest_end = p.end;
        }
        snprintf(r->message, sizeof r->message,
                 "booking %lld no longer fits: %s; it still awaits approval "
                 "(deny it, or its owner may release it and book again)",
                 (long long) b->id, k == 0 ? p.message : "cannot place it");
        return -EBUSY;
}

int gw_sharing_booking_set(struct gw_daemon *d, struct gw_store_booking *b, enum gw_booking_state to, const char *note,
                           struct gw_book_result *r) {
        struct gw_store_booking before = *b;
        memset(r, 0, sizeof *r);
        bool approving = to == GW_BOOKING_APPROVED && b->state == GW_BOOKING_PENDING_APPROVAL;
        if (approving && approve_placed(d, b, r) < 0) {
                *b = before;
                r->status = 409;
                log_info("booking %lld (%s's): %s", (long long) b->id, b->user, r->message);
                return -EBUSY;
        }
        bool held = approving && gw_backend_book(d);
        b->state = to;
        /* Over: what the backend holds of it, if anything, is to go, recorded with the state. */
        b->resv_drop = gw_booking_state_is_final(to) && gw_sharing_book_held(d, b->id);
        snprintf(b->note, sizeof b->note, "%s", note);
        if (gw_store_booking_save(d->store, b) < 0) {
                *b = before; /* not recorded: not done */
                if (held)
                        gw_backend_book(d)->undo(d, b->id);
                r->status = 503;
                return -EIO;
        }
        log_info("booking %lld (%s's): %s", (long long) b->id, b->user, note);
        r->status = 200;
        r->booking = *b;
        /* Over now, as at its end: its running jobs are stopped by the calendar's rule for a
         * booking that is over; its queued jobs find it gone and end (the gate is closed); its
         * reservation is deleted once they are gone. */
        if (gw_booking_state_is_final(to)) {
                gw_sharing_book_drop(d, &r->booking);
                gw_sharing_booking_closed(d);
        }
        d->jobs.sched_dirty = true;
        return 0;
}
