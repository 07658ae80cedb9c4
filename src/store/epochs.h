/* When each epoch of a training job's attempt ended: the moment its results.csv row
 * appeared, as the daemon saw it.  Kept so that a finished job's page still draws its epoch
 * boundaries, and so that a restarted daemon goes on timing a running job's epochs.
 * Beside it, each measured epoch's memory low and peak per GPU (the leak detector's input,
 * core/leak.h): a restarted daemon judges the same series, so a leak flagged before the
 * restart keeps its figures, and one still building up is not counted from zero again. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"
#include "store/store.h"

struct gw_store_epoch {
        long epoch; /* epochs done when it ended (1-based count) */
        gw_usec_t start, end; /* wall clock */
        bool startup; /* the first epoch of its process: includes the start */
        bool exact; /* its own row was seen (else the time was shared out) */
};

/* Records e for the job's attempt, replacing a row of the same epoch.  0 or -errno. */
int gw_store_epoch_put(struct gw_store *s, int64_t job_id, int attempt, const struct gw_store_epoch *e);
/* Forgets the attempt's epochs, their times and their memory (its results.csv was rewritten
 * from the start: a new run).  0 or -errno. */
int gw_store_epochs_drop(struct gw_store *s, int64_t job_id, int attempt);
/* The attempt's newest epochs, at most max, oldest first, into ret (the caller's array).
 * Returns how many, or -errno. */
int gw_store_epochs(struct gw_store *s, int64_t job_id, int attempt, struct gw_store_epoch *ret, size_t max);

struct gw_store_epoch_mem {
        unsigned gpu;
        long epoch; /* as in struct gw_store_epoch */
        double low, peak; /* bytes: the epoch's lowest and highest memory on the GPU */
};

/* Records m for the job's attempt, replacing a row of the same GPU and epoch.  0 or -errno. */
int gw_store_epoch_mem_put(struct gw_store *s, int64_t job_id, int attempt, const struct gw_store_epoch_mem *m);
/* Calls cb with the attempt's newest per_gpu rows of each GPU, by GPU, oldest epoch first.
 * m is valid during the call only.  0 or -errno (cb may have been called for some rows). */
typedef void (*gw_store_epoch_mem_cb)(const struct gw_store_epoch_mem *m, void *userdata);
int gw_store_epoch_mems(struct gw_store *s, int64_t job_id, int attempt, size_t per_gpu, gw_store_epoch_mem_cb cb,
                        void *userdata);
