/* The queue and the running set: the jobs by id, and the scheduling pass (queue.c). */
#pragma once
#include "daemon/daemon.h"

/* queue.c: the running and queued jobs by id */
struct gw_djob *gw_jobmap_get(const struct gw_jobmap *m, int64_t id);
void gw_jobmap_put(struct gw_jobmap *m, struct gw_djob *dj);
void gw_jobmap_del(struct gw_jobmap *m, int64_t id);
void gw_jobmap_free(struct gw_jobmap *m);
void gw_queue_insert(struct gw_daemon *d, struct gw_djob *dj);
void gw_queue_remove(struct gw_daemon *d, struct gw_djob *dj);
void gw_running_add(struct gw_daemon *d, struct gw_djob *dj);
void gw_running_remove(struct gw_daemon *d, struct gw_djob *dj);
/* Runs the scheduler over the queue and starts what it says. */
void gw_schedule(struct gw_daemon *d);
/* The jobs a pass between whole passes plans, and how far apart whole passes are at most
 * while the others stand in for them (queue.c). */
#define GW_SCHED_WINDOW 64
#define GW_SCHED_WHOLE_EVERY GW_USEC_PER_SEC
/* Asks for the whole pass that is due; when the next is due (monotonic), or INFINITY. */
gw_usec_t gw_schedule_tick(struct gw_daemon *d);
/* The GPUs out of service that job j waits for, in words (gw_why_drained) into buf; NULL
 * when it waits for none. */
const char *gw_queue_drained_words(const struct gw_daemon *d, const struct gw_job *j, char *buf, size_t n);
/* The same for a reply's copy of j (its drain_view): only for a queued job whose reasons
 * include Drained. */
const char *gw_job_drained_view(const struct gw_daemon *d, const struct gw_job *j, char *buf, size_t n);
