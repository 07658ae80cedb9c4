/* A running attempt's monotonic start (daemon/base/jobclock.c), kept so that a restarted daemon
 * measures the job's runtime on the same clock: CLOCK_MONOTONIC holds across a daemon
 * restart within one boot, which boot_id (the kernel's) tells. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"
#include "store/store.h"

/* Keeps it in the job's row, in place of an earlier attempt's.  0, -ENOENT when there is no
 * such job, or -errno. */
int gw_store_job_clock_put(struct gw_store *s, int64_t job_id, int attempt, const char *boot_id, gw_usec_t start_mono);

/* The attempt's monotonic start when it was recorded in this boot: 0 with *ret set, -ENOENT
 * when not recorded for that attempt or boot, other -errno on failure. */
int gw_store_job_clock_get(struct gw_store *s, int64_t job_id, int attempt, const char *boot_id, gw_usec_t *ret);
