/* When a preempted training run (an Ultralytics job) may be stopped: right after its next
 * checkpoint.  Pure: the caller looks at the run's files and passes what it saw and the
 * clock; no I/O.
 *
 * Ultralytics ends an epoch by appending its row to results.csv, then writing weights/last.pt,
 * then (when the epoch is the best so far) the same bytes to weights/best.pt, each overwritten
 * in place.  So a checkpoint counts once last.pt is a whole archive (core/ckpt.h) written at or
 * after the newest row: it holds every finished epoch.  The stop waits for best.pt as well when
 * the row says one follows (a kill while it is written tears it, and the run's best weights
 * of that epoch would be lost for good); when the row cannot tell (no metrics, or a tie at
 * the file's precision), for GW_PREEMPT_BEST_QUIET at most.  A checkpoint of the run's last
 * epoch is not a point to stop at: the run only validates and ends, and a resumed attempt
 * would find nothing to resume. */
#pragma once
#include <errno.h>
#include <stdbool.h>

#include "base/time.h"

/* How long after a counting last.pt a best.pt that may or may not follow is waited for, and
 * how long one the row says follows.  Ultralytics writes best.pt right after last.pt from the
 * same bytes in memory: it starts within milliseconds. */
#define GW_PREEMPT_BEST_QUIET (GW_USEC_PER_SEC / 2)
#define GW_PREEMPT_BEST_WAIT (3 * GW_USEC_PER_SEC)

enum gw_preempt_best {
        GW_PREEMPT_BEST_NO, /* the newest row is worse than an earlier one: no best.pt */
        GW_PREEMPT_BEST_YES, /* it is the best so far: best.pt follows last.pt */
        GW_PREEMPT_BEST_MAYBE, /* cannot tell (no fitness, or equal to the best before) */
        _GW_PREEMPT_BEST_MAX,
        _GW_PREEMPT_BEST_INVALID = -EINVAL,
};

/* Whether Ultralytics writes best.pt for the newest row, from its fitness (core/progress.h
 * gw_results_fitness; NAN unknown: MAYBE) and the best fitness of the rows before it (NAN:
 * none).  Ultralytics writes it when the fitness is at least the best so far, or the best so
 * far is 0; the file's rounded digits cannot tell a tie from a small difference. */
enum gw_preempt_best gw_preempt_best_expected(double newest, double best_before);

struct gw_preempt_ckpt_file {
        bool seen; /* a regular file of the job's user */
        bool complete; /* a whole archive (core/ckpt.h) */
        gw_usec_t mtime; /* wall clock */
};

/* What one look at the run found. */
struct gw_preempt_ckpt_look {
        gw_usec_t row_mtime; /* results.csv's mtime (its newest row's write), 0 none */
        long row_epoch; /* that row's epoch, 1-based; -1 unknown */
        long total; /* the run's planned epochs; -1 unknown */
        enum gw_preempt_best best; /* for the newest row */
        struct gw_preempt_ckpt_file last, best_pt;
};

enum gw_preempt_ckpt_act {
        GW_PREEMPT_CKPT_WAIT, /* no new checkpoint yet (or its best.pt not yet written) */
        GW_PREEMPT_CKPT_STOP, /* stop it now: a new checkpoint holds every finished epoch */
        GW_PREEMPT_CKPT_FINISHING, /* its last epoch's checkpoint is written: let it end */
        _GW_PREEMPT_CKPT_ACT_MAX,
        _GW_PREEMPT_CKPT_ACT_INVALID = -EINVAL,
};

struct gw_preempt_ckpt_verdict {
        enum gw_preempt_ckpt_act act;
        long epoch; /* STOP, FINISHING: the epoch the checkpoint holds (-1 unknown) */
        gw_usec_t recheck; /* WAIT: look again at this wall-clock time even if no file
                                      * changes (a best.pt that did not come); 0 none */
};

/* The mtime of the checkpoint that counts in look (last.pt whole and written at or after the
 * newest row), 0 none. */
gw_usec_t gw_preempt_ckpt_counted(const struct gw_preempt_ckpt_look *look);

/* Whether to stop the run now, given what one look found, `after` (only a checkpoint written
 * later is new: the one that counted when it was asked to give way, else the ask's time) and
 * now (wall clock).  0 with ret filled, or -EINVAL (NULL). */
int gw_preempt_ckpt_judge(const struct gw_preempt_ckpt_look *look, gw_usec_t after, gw_usec_t now,
                          struct gw_preempt_ckpt_verdict *ret);
