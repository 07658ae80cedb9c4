/* Webhooks: job events POSTed as JSON to the URLs of the config (webhook_url), by a thread
 * of their own so that a slow or dead receiver never holds the daemon's loop. */
#pragma once
#include <stdint.h>

#include "core/jobrec.h"

struct gw_notify;
struct gw_config;

/* NULL when no webhook_url is set.  Starts the sending thread. */
struct gw_notify *gw_notify_open(const struct gw_config *cfg);
/* A job event as the store recorded it (the dashboard's stream sees the same): queued when
 * its topic is one of webhook_events.  j: the job as it is now, or NULL when unknown; now:
 * the event's time (the loop's wall clock).  Never blocks; when the queue is full the oldest
 * waiting event is dropped (and counted). */
void gw_notify_job(struct gw_notify *n, int64_t id, const struct gw_job *j, enum gw_job_state state, const char *kind,
                   const char *message, gw_usec_t now);
struct gw_notify_counts {
        unsigned long sent, failed, dropped;
};
void gw_notify_counts(struct gw_notify *n, struct gw_notify_counts *ret);
/* Stops the thread (what is still queued is given up, with a line saying how much) and frees. */
void gw_notify_close(struct gw_notify *n);
