/* When each epoch of a training job's attempt ended (issue 7): the moment its results.csv row
 * appeared, as the daemon saw it.  Kept so that a finished job's page still draws its epoch
 * boundaries, and so that a restarted daemon goes on timing a running job's epochs. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"
#include "store/store.h"

struct gw_store_epoch {
        long epoch;                  /* epochs done when it ended (1-based count) */
        gw_usec_t start, end;        /* wall clock */
        bool startup;                /* the first epoch of its process: includes the start */
        bool exact;                  /* its own row was seen (else the time was shared out) */
};

/* Records e for the job's attempt, replacing a row of the same epoch.  0 or -errno. */
int gw_store_epoch_put(struct gw_store *s, int64_t job_id, int attempt, const struct gw_store_epoch *e);
/* Forgets the attempt's epochs (its results.csv was rewritten from the start).  0 or -errno. */
int gw_store_epochs_drop(struct gw_store *s, int64_t job_id, int attempt);
/* The attempt's newest epochs, at most max, oldest first, into ret (the caller's array).
 * Returns how many, or -errno. */
int gw_store_epochs(struct gw_store *s, int64_t job_id, int attempt, struct gw_store_epoch *ret, size_t max);
