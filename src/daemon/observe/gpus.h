/* The GPUs as the daemon holds them, and their JSON (gpus.c). */
#pragma once
#include "daemon/daemon.h"

/* gpus.c */
int gw_gpus_open(struct gw_daemon *d);
void gw_gpus_close(struct gw_daemon *d);
/* GET /api/v1/gpus's object (new reference), for the event stream too; one GPU's.  details:
 * the command lines of the processes on them, which guests are not shown unless the config
 * says so. */
json_t *gw_observe_gpus_json(struct gw_daemon *d, bool details);
/* Whether g may be given whole to a job or a booking: not drained, not lost, and not in MIG
 * mode (a GPU cut into slices has no whole left to give: its slices are NVML's devices). */
static inline bool gw_gpu_whole_usable(const struct gw_dgpu *g) {
        return !g->drained && (!g->sampled || g->sample.health == GW_GPU_OK) && !g->mig;
}
json_t *gw_observe_gpu_json(struct gw_daemon *d, const struct gw_dgpu *g, bool details);
