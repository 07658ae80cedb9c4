/* Which checkpoint snapshots to remove (issue 7).  Pure: the daemon lists the kept copies
 * from the store and the bytes each holds; this says which go; the daemon removes them.
 *
 * Two rules.  Per job: every best.pt copy stays (it is what a user restores) and only the
 * newest keep_last last.pt copies, by seq.  Over all jobs: while the kept copies hold more
 * than cap bytes, the OLDEST last.pt copy goes first (by the time it was taken, then by id:
 * the order the store made them), whatever job it belongs to; best.pt copies never go, so
 * the cap may stay exceeded when only they are left. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"

struct gw_snap_item {
        int64_t id;                  /* the store's row id: ties of time */
        int64_t job_id;
        int seq;                     /* per job, from 1: the newest has the highest */
        bool best;                   /* a best.pt copy (else last.pt) */
        gw_usec_t time;              /* when the copy was taken */
        uint64_t bytes;              /* what removing it frees */
};

/* items: the kept copies of ONE job, in any order.  Sets evict[i] for each last.pt copy
 * beyond the newest keep_last (keep_last < 0 counts as 0) and clears the others; returns how
 * many are set. */
size_t gw_snap_keep_last(const struct gw_snap_item *items, size_t n, int keep_last, bool *evict);

/* items: the kept copies of all jobs, in any order.  cap 0 means no cap: nothing is set.
 * Else sets evict[i] for the oldest last.pt copies, oldest first, until the bytes of those
 * left are at most cap (or no last.pt copy is left), and clears the others; returns how
 * many are set. */
size_t gw_snap_over_cap(const struct gw_snap_item *items, size_t n, uint64_t cap, bool *evict);
