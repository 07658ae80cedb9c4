/* Idle supervisors, kept to run the next jobs.  A supervisor the launcher forked comes with a
 * channel (src/shim/shim.h); once the daemon has seen its attempt end with the exit on record,
 * the supervisor waits on that channel, and the next start is sent to it there: no fork, no
 * fresh pages, no exit per job.  Only supervisors whose attempt has ended are put here, so
 * nothing meant for an earlier job (a signal to the supervisor's descendants, a SIGKILL at the
 * end of a grace period) can reach a later one. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define GW_WARM_MAX 16
/* An idle supervisor unused for this long is ended (closing its channel ends it). */
#define GW_WARM_SECONDS 60

struct gw_warm_one {
        int chan; /* the daemon's end of its channel */
        pid_t pid;
        uint64_t start; /* its /proc start time, known from its first job */
        int64_t since; /* monotonic seconds */
};

struct gw_warm {
        struct gw_warm_one v[GW_WARM_MAX]; /* the most recently idle last */
        size_t n;
};

/* Keeps an idle supervisor (takes chan; the oldest is ended when full). */
void gw_warm_put(struct gw_warm *w, int chan, pid_t pid, uint64_t start, int64_t now);
/* Sends the request datagram (shim.h) with report_fd to the most recently idle supervisor:
 * true with *ret (its channel now the caller's) when one took it; those found gone are
 * dropped on the way. */
bool gw_warm_send(struct gw_warm *w, const char *request, size_t len, int report_fd, struct gw_warm_one *ret);
/* Ends those unused for GW_WARM_SECONDS; returns when the next one is due (INT64_MAX: none). */
int64_t gw_warm_tick(struct gw_warm *w, int64_t now);
void gw_warm_close(struct gw_warm *w);
