/* A running job's clock.  Its start is labelled with the wall clock (what `show` prints), but
 * how long it has run is measured on the monotonic clock from a monotonic start kept beside
 * it: a wall clock stepped by an hour or two days (NTP, an admin, a VM resumed) changes
 * neither its time limit, nor its idle window, nor the GPU-hours it is charged.  Its end is
 * labelled start + elapsed, so end - start is always the runtime.  The end's monotonic
 * instant is the caller's to give: when the daemon saw the end, or when the job's supervisor
 * says it ended (CLOCK_MONOTONIC is the same for every process of the machine).
 *
 * A job found running at a daemon restart has no monotonic start of this daemon's: it is
 * taken from the wall clock once (now - its wall start), so a step while no daemon ran is
 * counted; from then on, it is monotonic again. */
#include "daemon/daemon.h"

void gw_job_clock_start(struct gw_djob *dj) {
        dj->start_mono = gw_now_mono();
}

void gw_job_clock_adopt(struct gw_djob *dj) {
        gw_usec_t ran = gw_now_wall() - dj->job->start_time;
        dj->start_mono = gw_now_mono() - (ran > 0 ? ran : 0);
}

gw_usec_t gw_job_ran(const struct gw_djob *dj, gw_usec_t mono) {
        gw_usec_t ran = mono - dj->start_mono;
        return dj->start_mono && ran > 0 ? ran : 0;
}

gw_usec_t gw_job_clock_label(const struct gw_djob *dj, gw_usec_t mono) {
        if (!dj->start_mono)
                return gw_now_wall();
        return dj->job->start_time + gw_job_ran(dj, mono);
}
