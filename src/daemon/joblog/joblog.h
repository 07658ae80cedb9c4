/* A job's log past log_max, and the state dir's disk running low (joblog.c). */
#pragma once
#include "daemon/daemon.h"

/* joblog.c: a job log past log_max (its supervisor cut the middle, shim/logcap.h).  watch,
 * after each sample: a "log_capped" event the first time the cut is seen in a running
 * attempt; attempt_ended: one with the final count.  gw_state_disk_low: whether the state
 * dir's disk has less free than state_reserve (job logs stop growing then); its free bytes
 * into *ret_free (may be NULL). */
void gw_joblog_watch(struct gw_daemon *d);
void gw_joblog_attempt_ended(struct gw_daemon *d, struct gw_djob *dj);
/* Frees what it told of dj (GW_HOOK_JOB_FREED). */
void gw_joblog_forget(struct gw_daemon *d, struct gw_djob *dj);
bool gw_state_disk_low(const struct gw_daemon *d, uint64_t *ret_free);
