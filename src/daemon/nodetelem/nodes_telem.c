/* Per-job GPU telemetry on a cluster (nodes_telem.h).  The agent sends the device's
 * utilisation and each process's memory: the job's point on a GPU is the memory of its own
 * processes there (the device's when no process's is known) and the device's utilisation,
 * as on one host where NVML gives no per-process figures.  The point's time is when the
 * controller received the snapshot (its wall clock, the clock of results.csv's mtimes that
 * the leak detector cuts the series into epochs by).  The series are keyed by the GPU's
 * index on its node: a job on one node, as Slurm runs most, has one series per GPU. */
#include <jansson.h>
#include <stdbool.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/life/lifecycle.h"
#include "daemon/nodes/nodes.h"
#include "daemon/nodetelem/nodes_telem.h"
#include "daemon/observe/observe.h"

bool gw_nodes_telem_point(const json_t *g, uint32_t slurm_id, gw_usec_t t, struct gw_nodes_telem_point *ret) {
        bool mine = false, mem_known = false;
        uint64_t mem = 0;
        size_t k;
        const json_t *p;
        json_array_foreach (json_object_get(g, "procs"), k, p) {
                const json_t *job = json_object_get(p, "job"), *m = json_object_get(p, "mem");
                if (!json_is_integer(job) || json_integer_value(job) != (json_int_t) slurm_id)
                        continue;
                mine = true;
                if (json_is_integer(m)) {
                        mem += (uint64_t) json_integer_value(m);
                        mem_known = true;
                }
        }
        const json_t *index = json_object_get(g, "index");
        if (!mine || !json_is_integer(index) || json_integer_value(index) < 0 || json_integer_value(index) > 63)
                return false;
        const json_t *util = json_object_get(g, "util"), *used = json_object_get(g, "mem_used"),
                     *total = json_object_get(g, "mem_total");
        const char *health = json_string_value(json_object_get(g, "health"));
        bool ok = health && !strcmp(health, "ok");
        if (!mem_known && json_is_integer(used))
                mem = (uint64_t) json_integer_value(used);
        json_int_t u = ok && json_is_integer(util) ? json_integer_value(util) : 0;
        *ret = (struct gw_nodes_telem_point){
                .gpu = (unsigned) json_integer_value(index),
                .mem_total = json_is_integer(total) ? (uint64_t) json_integer_value(total) : 0,
                .pt = { .t = t,
                        .mem = mem,
                        .util = (uint8_t) (u < 0     ? 0
                                           : u > 100 ? 100
                                                     : u) },
        };
        return true;
}

unsigned gw_nodes_telem_job(struct gw_daemon *d, struct gw_djob *dj, const struct gw_nodes *t, uint32_t slurm_id,
                            int fresh_rounds) {
        unsigned added = 0;
        for (size_t i = 0; t && i < t->n; i++) {
                const struct gw_node *n = &t->v[i];
                if (d->now - n->received > fresh_rounds * n->interval)
                        continue;
                size_t k;
                const json_t *g;
                json_array_foreach (json_object_get(n->snapshot, "gpus"), k, g) {
                        struct gw_nodes_telem_point p;
                        if (gw_nodes_telem_point(g, slurm_id, n->received_wall, &p))
                                added += gw_observe_job_point(d, dj, p.gpu, p.mem_total, &p.pt);
                }
        }
        return added;
}

void gw_nodes_telem_sampled(struct gw_daemon *d) {
        if (d->host.sampler)
                return;
        gw_lifecycle_publish(d, GW_HOOK_SAMPLED, NULL, false); /* training, joblog; reclaim is nodes_watch's */
}
