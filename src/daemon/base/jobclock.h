/* A running job's elapsed time on the monotonic clock, and the loop's clocks (jobclock.c). */
#pragma once
#include "daemon/daemon.h"

/* jobclock.c: a running job's elapsed time, on the monotonic clock.  _start at its start
 * (kept in the store), _adopt for one found running at a restart (the kept start when this
 * boot's, else from its wall start, once).  gw_job_ran: how
 * long it has run at the monotonic instant mono (>= 0).  gw_job_clock_label: the wall-clock
 * label of mono for this job, its start + elapsed (its end time, its "now" for the idle
 * window); the loop's wall clock while it has no monotonic start. */
/* Reads the loop iteration's clocks into d->now and d->now_wall (main.c). */
void gw_daemon_clock_read(struct gw_daemon *d);
void gw_job_clock_start(struct gw_daemon *d, struct gw_djob *dj);
void gw_job_clock_adopt(struct gw_daemon *d, struct gw_djob *dj);
gw_usec_t gw_job_ran(const struct gw_djob *dj, gw_usec_t mono);
gw_usec_t gw_job_clock_label(const struct gw_daemon *d, const struct gw_djob *dj, gw_usec_t mono);
