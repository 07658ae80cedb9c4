/* Reading back the GPUs' own events (gw_store_gpu_event records them): Xid errors, health
 * changes, drains, rogue processes. */
#pragma once
#include <stddef.h>

#include "store/store.h"

#define GW_GPU_EVENTS_ALL (-1)

/* Called per event; e and its strings are valid during the call only. */
typedef void (*gw_store_gpu_event_cb)(const struct gw_gpu_event_rec *e, void *userdata);
/* The events of GPU gpu (GW_GPU_EVENTS_ALL: of every GPU) with time >= since, newest
 * first, at most limit of them.  Returns how many were passed to cb, or -errno. */
int gw_store_gpu_events(struct gw_store *s, int gpu, gw_usec_t since, size_t limit, gw_store_gpu_event_cb cb,
                        void *userdata);
