/* What a failed attempt becomes: classified, retried or ended (recovery.c). */
#pragma once
#include "daemon/daemon.h"

/* recovery.c, subscribed to GW_HOOK_ATTEMPT_ENDED, last */
/* An attempt ended (status: wait status; lost: no status known) at end_time (wall clock; the
 * caller's: when the supervisor saw the job end, else when the daemon learnt of it):
 * classify, record, retry or end. */
void gw_recovery_attempt_ended(struct gw_daemon *d, struct gw_djob *dj, bool lost, int status, gw_usec_t end_time,
                               const char *lost_why);
