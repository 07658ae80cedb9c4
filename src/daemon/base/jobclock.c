/* A running job's clock.  Its start is labelled with the wall clock (what `show` prints), but
 * how long it has run is measured on the monotonic clock from a monotonic start kept beside
 * it: a wall clock stepped by an hour or two days (NTP, an admin, a VM resumed) changes
 * neither its time limit, nor its idle window, nor the GPU-hours it is charged.  Its end is
 * labelled start + elapsed, so end - start is always the runtime.  The end's monotonic
 * instant is the caller's to give: when the daemon saw the end, or when the job's supervisor
 * says it ended (CLOCK_MONOTONIC is the same for every process of the machine).
 *
 * The monotonic start is kept in the store with the kernel's boot id: CLOCK_MONOTONIC holds
 * across a daemon restart within one boot, so a restarted daemon goes on with it.  Without it
 * (another boot, a start recorded by an older version, a store that refused the write) the
 * start is taken from the wall clock once (now - its wall start), so a step while no daemon
 * ran is counted; from then on, it is monotonic again. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "daemon/daemon.h"
#include "daemon/base/jobclock.h"
#include "store/jobclock.h"

/* The kernel's boot id, read once; NULL when it cannot be read (then nothing is kept). */
static const char *boot_id(struct gw_daemon *d) {
        if (!d->loop.boot_id[0]) {
                _cleanup_close_ int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
                ssize_t n = fd >= 0 ? read(fd, d->loop.boot_id, sizeof d->loop.boot_id - 1) : -1;
                if (n <= 0)
                        snprintf(d->loop.boot_id, sizeof d->loop.boot_id, "-");
                else
                        d->loop.boot_id[strcspn(d->loop.boot_id, "\n")] = '\0';
        }
        return strcmp(d->loop.boot_id, "-") ? d->loop.boot_id : NULL;
}

void gw_job_clock_start(struct gw_daemon *d, struct gw_djob *dj) {
        const struct gw_job *j = dj->job;
        const char *boot = boot_id(d);
        dj->start_mono = d->now;
        if (boot && gw_store_job_clock_put(d->store, j->id, j->attempt, boot, dj->start_mono) < 0)
                log_debug("job %lld: cannot keep its monotonic start: %s", (long long) j->id,
                          gw_store_errmsg(d->store));
}

void gw_job_clock_adopt(struct gw_daemon *d, struct gw_djob *dj) {
        const struct gw_job *j = dj->job;
        const char *boot = boot_id(d);
        gw_usec_t kept, mono = d->now;
        if (boot && gw_store_job_clock_get(d->store, j->id, j->attempt, boot, &kept) == 0 && kept > 0 && kept <= mono) {
                dj->start_mono = kept;
                return;
        }
        gw_usec_t ran = d->now_wall - j->start_time;
        dj->start_mono = mono - (ran > 0 ? ran : 0);
        log_info("job %lld: its runtime so far is taken from the wall clock (%s)", (long long) j->id,
                 boot ? "its monotonic start is not of this boot" : "no boot id");
}

gw_usec_t gw_job_ran(const struct gw_djob *dj, gw_usec_t mono) {
        gw_usec_t ran = mono - dj->start_mono;
        return dj->start_mono && ran > 0 ? ran : 0;
}

gw_usec_t gw_job_clock_label(const struct gw_daemon *d, const struct gw_djob *dj, gw_usec_t mono) {
        if (!dj->start_mono)
                return d->now_wall;
        return dj->job->start_time + gw_job_ran(dj, mono);
}
