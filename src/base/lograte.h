/* A log line that a client can cause many times a second (a connection refused over a cap):
 * the first is written, then at most one a period, saying how many were kept quiet since.
 * Pure: the caller passes the monotonic now.  One per key (a uid); a zeroed one is new.
 *
 * Every line written starts a period; what happens in it is counted, not written; when it
 * ends with a count, one summary line says it (gw_lograte_flush, at gw_lograte_due), and
 * that line starts the next period.  A period that ends with nothing counted ends the
 * flood: the next event is a first again. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "base/time.h"

struct gw_lograte {
        gw_usec_t since; /* when the last line was written */
        uint64_t quiet; /* events since then not written */
        bool started; /* a line was written */
};

/* One event at now: true when its line is to be written now (*ret_quiet: the events kept
 * quiet before it, 0 for a first), false when it is only counted. */
bool gw_lograte_event(struct gw_lograte *r, gw_usec_t period, gw_usec_t now, uint64_t *ret_quiet);

/* A summary due at now: true with the events kept quiet since the last line (*ret_quiet,
 * >= 1) and the time since it (*ret_span); the summary counts as a line. */
bool gw_lograte_flush(struct gw_lograte *r, gw_usec_t period, gw_usec_t now, uint64_t *ret_quiet, gw_usec_t *ret_span);

/* The last summary, whatever the time (the daemon stops): as gw_lograte_flush. */
bool gw_lograte_take(struct gw_lograte *r, gw_usec_t now, uint64_t *ret_quiet, gw_usec_t *ret_span);

/* When a summary falls due: GW_USEC_INFINITY when nothing is counted. */
gw_usec_t gw_lograte_due(const struct gw_lograte *r, gw_usec_t period);
