/* GPUs that went missing from NVML's devices (fell off the bus, or removed): remembered by
 * UUID, as indexes change when a device disappears, so that one coming back is drained. */
#pragma once
#include <stddef.h>

#include "store/store.h"

/* Remembers uuid as missing with the reason its drain will give when it returns; a GPU
 * already remembered keeps its first reason.  0 or -errno. */
int gw_store_gpu_missing_add(struct gw_store *s, const char *uuid, const char *reason);
/* Whether uuid was missing: 0 with its reason copied to ret (n bytes) and the record
 * removed, -ENOENT if it was not, or -errno. */
int gw_store_gpu_missing_take(struct gw_store *s, const char *uuid, char *ret, size_t n);
