/* When will a training run end?  Pure: the shell measures how long each finished epoch took
 * (the time between two results.csv rows, validation and the checkpoint save included) and
 * passes those durations with the epoch counts and an explicit now; no I/O, no clock.
 *
 * The estimate:
 *   - seconds per epoch: a weighted mean of the timed epochs, recent epochs weighing more
 *     (weight GW_ETA_DECAY^age, so a run that slows down is followed within a few epochs);
 *     an epoch that includes the process's start (loading, dataset caching, cudnn
 *     benchmarking) weighs GW_ETA_STARTUP_WEIGHT of a normal one;
 *   - remaining: what is left of the current epoch (sec_per_epoch minus the time since the
 *     last row, never below 0) plus sec_per_epoch for each epoch after it;
 *   - error bars only once 3 epochs are timed, 2 of them without a start: sqrt(R) * sigma
 *     for the jitter of the R remaining epochs plus R * sigma / sqrt(m) for the uncertainty
 *     of the mean over m epochs, and at least GW_ETA_MIN_REL_ERROR of the remaining time;
 *   - overdue: once the current epoch has run longer than sec_per_epoch plus a tolerance
 *     (3 sigma, at least GW_ETA_OVERDUE_SLACK of sec_per_epoch), the run is late (hung, or
 *     much slower): overdue_s says by how much, and end is the end that was due (in the past)
 *     instead of a "now + what is left" that would slide with the clock and read the same
 *     "18s" for ever;
 *   - nothing before the first epoch has ended (-ENODATA). */
#pragma once
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/time.h"

#define GW_ETA_DECAY 0.8
#define GW_ETA_STARTUP_WEIGHT 0.25
#define GW_ETA_MIN_REL_ERROR 0.02
#define GW_ETA_SIGMA_EPOCHS 20 /* the jitter is measured over the last this many epochs */
#define GW_ETA_OVERDUE_SLACK 0.25 /* an epoch this much longer than usual is not yet late */

struct gw_eta_epoch {
        gw_usec_t duration; /* wall time of the epoch: train, validation, checkpoint */
        bool startup; /* the first epoch of a process: includes its start */
};

struct gw_eta_input {
        const struct gw_eta_epoch *epochs; /* timed epochs, oldest first; may be only the recent ones */
        size_t n_epochs;
        long done; /* epochs finished in the whole run (resumes included) */
        long total; /* planned epochs; <= 0 when unknown */
        gw_usec_t last_end; /* wall clock: when the newest finished epoch ended */
        gw_usec_t now; /* wall clock */
};

struct gw_eta {
        double sec_per_epoch; /* smoothed */
        long done;
        long total; /* <= 0: unknown, and then no end either */
        bool has_end; /* total known: remaining_s and end are set */
        long remaining_epochs; /* total - done, the current one included */
        double remaining_s; /* from now */
        gw_usec_t end; /* wall clock: now + remaining_s; when overdue, the end that
                                   * was due: last_end + sec_per_epoch * remaining_epochs */
        double overdue_s; /* > 0: the current epoch is this much past its expected end */
        bool has_error;
        double error_s; /* half-width of the error bar, seconds */
        double sigma_s; /* standard deviation of an epoch's duration (no start), 0 if unknown */
        size_t n_timed; /* epochs the estimate rests on */
        size_t n_startup; /* of which include a process start */
};

/* Fills *out from *in.  0; -ENODATA when no epoch is timed yet; -EINVAL for NULL arguments,
 * a negative duration or done < 0.  *out is written only on success. */
int gw_eta_estimate(const struct gw_eta_input *in, struct gw_eta *out);
