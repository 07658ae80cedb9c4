/* Predicted starts of queued jobs on MIG slices: the slice placement (core/migplace.h)
 * replayed forward.  Pure: plain structs in, predictions out, now passed in.
 *
 * A slice job waits for free slices of its profile, never for a whole GPU: the whole-GPU
 * replay (core/predict.h) cannot time it.  The daemon places slice jobs in queue order
 * without a reservation, beside the whole-GPU jobs and never holding them back (nor held
 * back by them), so the replay does the same on its own clock:
 *   - a running slice job frees its slices at its end (gw_mig_run.end: min(ETA, time
 *     limit), from the caller); a slice held by a job not listed there never frees;
 *   - at each instant, each waiting job in queue order takes free slices where
 *     gw_mig_place finds them; one that does not fit keeps no later one from starting;
 *   - a started job runs for its expected run time (runtime, 0: its time limit), clipped
 *     to its limit; with limits_only every job runs its whole limit (the promise);
 *   - a job after another one starts no earlier than that one's end as the caller gives it
 *     (after_end: a running job's end, or a queued one's predicted end from this replay or
 *     the whole-GPU one); the caller makes held a job after one it cannot time;
 *   - a held job, or one asking for a profile no GPU in service has, gets no start.
 * Instants are wall-clock time, as in core/predict.h. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"
#include "core/migplace.h"
#include "core/predict.h"

/* A running job on slices: it holds the slots whose job_id is its id until end. */
struct gw_mig_run {
        int64_t id;
        gw_usec_t end; /* wall clock; at or before now: ends now */
};

/* A queued job asking for slices. */
struct gw_mig_pending {
        int64_t id;
        struct gw_mig_ask ask;
        gw_usec_t time_limit; /* > 0 */
        gw_usec_t runtime; /* expected run time, 0: its time limit */
        gw_usec_t not_before; /* earliest start (a retry's backoff), 0: none */
        gw_usec_t after_end; /* the end of the job it follows (after_job), 0: none */
        bool held; /* no prediction: held, or waiting on a job the caller cannot time */
};

struct gw_mig_predict_input {
        const struct gw_mig_slot *slots; /* every slice now; job_id its holder, 0 free */
        size_t n_slots;
        const struct gw_mig_run *running;
        size_t n_running;
        const struct gw_mig_pending *pending; /* queue order */
        size_t n_pending;
};

/* Writes one prediction per pending job (same order) to out (room for in->n_pending): its
 * start, end and the GPUs its slices are on, or start and end GW_USEC_INFINITY where it gets
 * none before now + horizon.  Returns 0, -EINVAL (horizon <= 0, a bad ask or time limit,
 * NULL arrays) or -ENOMEM.  Allocates scratch memory and frees it. */
int gw_predict_mig_starts(const struct gw_mig_predict_input *in, gw_usec_t now, gw_usec_t horizon, bool limits_only,
                          struct gw_prediction *out);
