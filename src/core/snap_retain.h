/* Which checkpoint snapshots to remove.  Pure: the daemon lists the kept copies from the
 * store and the bytes each holds on disk; this says which go; the daemon removes them.
 *
 * Two rules.  Per job: only the newest keep_last copies of each kind (best.pt, last.pt), by
 * seq: an older best.pt is a worse model than a newer one.  Under a cap (over all jobs, or
 * over one user's): while the copies hold more than the cap, the OLDEST goes first (by the
 * time it was taken, then by id: the order the store made them), whatever job it belongs to,
 * except each job's newest best.pt (what a user restores first), which go only when nothing
 * else is left, oldest first again.  So a cap always holds, and what it costs falls on the
 * oldest runs. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"

struct gw_snap_item {
        int64_t id; /* the store's row id: ties of time */
        int64_t job_id;
        int seq; /* per job, from 1: the newest has the highest */
        bool best; /* a best.pt copy (else last.pt) */
        gw_usec_t time; /* when the copy was taken */
        uint64_t bytes; /* what removing it frees (blocks on disk, not st_size) */
};

/* items: the kept copies of ONE job, in any order.  Sets evict[i] for each copy beyond the
 * newest keep_last of its kind (keep_last < 0 counts as 0) and clears the others; returns how
 * many are set. */
size_t gw_snap_keep_last(const struct gw_snap_item *items, size_t n, int keep_last, bool *evict);

/* items: the kept copies under one cap (all jobs', or one user's), in any order; incoming:
 * the bytes of a copy about to be made, to make room for (0 for none).  cap 0 means no cap:
 * nothing is set.  Else sets evict[i] in the order above until the bytes of those left plus
 * incoming are at most cap (or nothing is left), and clears the others; returns how many
 * are set.  incoming > cap can never fit: the caller refuses that copy rather than calling. */
size_t gw_snap_over_cap(const struct gw_snap_item *items, size_t n, uint64_t cap, uint64_t incoming, bool *evict);
