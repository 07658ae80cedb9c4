/* The host beside its GPUs: CPU, memory, disks (hostwatch.c). */
#pragma once
#include "daemon/daemon.h"

/* hostwatch.c, at each GPU sample: the host's CPU, memory and disks (the state dir's, /) into
 * d->host.load; a GPU process's CPU use since its last read into p->cpu (-1 the first time, or
 * when /proc no longer has it); the "host" object of GET /api/v1/gpus (new reference). */
void gw_hostwatch_sample(struct gw_daemon *d);
void gw_hostwatch_proc_cpu(struct gw_daemon *d, struct gw_dproc *p);
json_t *gw_hostwatch_json(const struct gw_daemon *d);
