/* The GPUs' own events: Xid errors, health changes, drains, rogue processes. */
#pragma once
#include <stddef.h>

#include "store/store.h"

#define GW_GPU_EVENTS_ALL (-1)

/* Records an event of GPU gpu of node (NULL: this host; a name: a cluster node's GPU, as its
 * agent reported it).  job_id 0 = none, xid -1 = none.  Returns 0 or -errno. */
int gw_store_gpu_event(struct gw_store *s, const char *node, unsigned gpu, const char *kind, long long xid,
                       int64_t job_id, const char *message);

/* Called per event; e and its strings are valid during the call only. */
typedef void (*gw_store_gpu_event_cb)(const struct gw_gpu_event_rec *e, void *userdata);
/* The events of GPU gpu (GW_GPU_EVENTS_ALL: of every GPU) with time >= since, newest
 * first, at most limit of them.  Returns how many were passed to cb, or -errno. */
int gw_store_gpu_events(struct gw_store *s, int gpu, gw_usec_t since, size_t limit, gw_store_gpu_event_cb cb,
                        void *userdata);
