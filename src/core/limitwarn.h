/* When a running job is told its end is near: the time-limit warning (time_limit_warn) and
 * the signal it asked for at submit (--signal SIG[@T]).  Pure: instants on the caller's
 * clock (the daemon passes the monotonic one), no clock reads.
 *
 * The rules:
 *  - A signal asked for is always sent, once, T before the end (without T: time_limit_warn,
 *    or GW_LIMIT_SIGNAL_BEFORE_DEFAULT where that is 0).  When the end comes sooner than T
 *    after the start (a short limit, a booking that ends early, a job resumed near its
 *    limit), halfway between the start and the end instead: never at the start itself,
 *    where the job has not installed its handler yet, and never not at all.
 *  - The plain notice (no signal asked for) comes time_limit_warn before the end, and is
 *    skipped where that would be at or before the start, and for an end that is its
 *    booking's (a booking warns its jobs itself).
 *  - An end at or before the start (nothing to run) is warned of never. */
#pragma once
#include <stdbool.h>

#include "base/time.h"

/* A signal asked for without a time, where time_limit_warn is 0. */
#define GW_LIMIT_SIGNAL_BEFORE_DEFAULT (5 * 60 * GW_USEC_PER_SEC)

struct gw_limit_warn {
        gw_usec_t start; /* the attempt's start */
        gw_usec_t end; /* it is stopped then: its time limit or its booking's end */
        bool by_booking; /* end is its booking's end, sooner than its time limit */
        bool signal; /* it asked for a signal (--signal) */
        gw_usec_t before; /* the signal's T; 0: not given */
        gw_usec_t notice; /* time_limit_warn; 0: no plain notice */
};

/* How long before w->end the warning (with its signal) is due; 0: never. */
gw_usec_t gw_limit_warn_before(const struct gw_limit_warn *w);

/* The instant the warning is due (w->end - gw_limit_warn_before), or GW_USEC_INFINITY for
 * never.  Always after w->start when not never. */
gw_usec_t gw_limit_warn_at(const struct gw_limit_warn *w);
