/* POST /api/v1/agent/snapshot: a node agent's snapshot (agent.h), kept in memory by the
 * controller (nodes.h).  A node agent's token (scope agent) or an admin's only (the route's
 * flags), as what an agent reports decides what every user sees of the cluster. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "daemon/agent/agent.h"
#include "daemon/exec/exec_slurm.h"
#include "daemon/http/handlers.h"
#include "daemon/nodes/nodes.h"
#include "daemon/life/queue.h"
#include "store/gpu_events.h"

/* The fault, for the classifier at the attempt's end (as observe.c keeps a local GPU's). */
static void fault_keep(struct gw_djob *dj, unsigned gpu, unsigned xid) {
        if (dj->n_events >= 256)
                return;
        if (dj->n_events == dj->cap_events) {
                dj->cap_events = dj->cap_events ? dj->cap_events * 2 : 4;
                dj->events = gw_xrealloc(dj->events, dj->cap_events * sizeof *dj->events);
        }
        dj->events[dj->n_events++] = (struct gw_gpu_event){ .kind = GW_GPU_EVENT_XID, .gpu = (int) gpu, .xid = xid };
}

/* One Xid on node's GPU: the Slurm jobs on that GPU are those the node listed there in this
 * snapshot or the one before (a job the Xid killed may be gone from this one).  Recorded as a
 * GPU event naming the node and, for the gpuward job whose attempt ran there, as its event
 * and fault (its classification: gpu_fault); a drain-worthy Xid keeps that job's next
 * attempts off the node and drains the node in Slurm (exec_slurm_xid.c). */
static void xid_apply(struct gw_daemon *d, const char *node, const json_t *before, const json_t *now, unsigned gpu,
                      unsigned xid) {
        uint32_t jobs[16];
        size_t n = gw_node_gpu_jobs(now, gpu, jobs, 0, ELEMENTSOF(jobs));
        n = gw_node_gpu_jobs(before, gpu, jobs, n, ELEMENTSOF(jobs));
        bool drains = gw_slurm_xid_drains(xid);
        char msg[300], list[120] = "";
        for (size_t i = 0; i < n && strlen(list) < sizeof list - 16; i++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%u", i ? ", " : "", (unsigned) jobs[i]);
        snprintf(msg, sizeof msg, "node %s: Xid %u on GPU %u%s%s%s", node, xid, gpu, n ? " (Slurm job " : "", list,
                 n ? ")" : "");
        log_warn("%s", msg);
        int64_t first = 0;
        for (size_t i = 0; i < n; i++) {
                bool running;
                int64_t id = gw_slurm_job_of(d, jobs[i], &running);
                struct gw_djob *dj = id ? gw_jobmap_get(&d->jobs.map, id) : NULL;
                if (!dj || dj->dead)
                        continue;
                first = first ? first : id;
                /* Only the attempt that ran on the GPU: a retry already queued is not at fault. */
                if (running) {
                        fault_keep(dj, gpu, xid);
                        (void) gw_store_job_event(d->store, id, dj->job->state, "xid", msg);
                }
                if (drains)
                        gw_slurm_avoid_node(d, dj, node, msg);
        }
        (void) gw_store_gpu_event(d->store, node, gpu, "xid", (long long) xid, first, msg);
        if (drains)
                gw_slurm_drain_node(d, node, gpu, xid);
}

/* A refusal of kind told, logged at most once a minute with how many it stands for. */
static void refusal_tell(struct gw_daemon *d, struct gw_nodes_told *told, const char *why) {
        unsigned n;
        if (!gw_nodes_told_due(told, d->now, &n))
                return;
        if (n > 1)
                log_warn("node snapshot refused (%u like it since this was last logged): %s", n, why);
        else
                log_warn("node snapshot refused: %s", why);
}

/* 0 when the caller may post node's snapshot: an admin, or an agent's token bound to node;
 * else 403 (logged, not each time). */
static int caller_may_post(struct gw_daemon *d, const struct gw_caller *c, const char *node,
                           struct gw_http_reply *rep) {
        char why[400];
        if (!c->agent)
                return 0;
        int r = gw_node_token_check(c->token_id, c->node, node ? node : "", why, sizeof why);
        if (r == 0)
                return 0;
        refusal_tell(d, r == -EPERM ? &d->nodes->told_unbound : &d->nodes->told_other_node, why);
        gw_reply_error(rep, 403, "node", "%s", why);
        return r;
}

void gw_on_agent_snapshot(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                          struct gw_http_reply *rep, const struct gw_caller *c) {
        (void) ctx;
        struct gw_daemon *d = gw_the_daemon(ud);
        if (!d->nodes)
                d->nodes = gw_xcalloc(1, sizeof *d->nodes);
        /* A token bound to no node is refused whatever it sends, and on any daemon: it is of use
         * nowhere, and its agent's log should say so the first time. */
        if (c->agent && !c->node[0] && caller_may_post(d, c, NULL, rep) < 0)
                return;
        if (gw_backend_placement(d) != GW_EXEC_PLACE_NODES)
                return gw_reply_error(rep, 409, NULL,
                                      "this gpuwardd is not a cluster's controller (--backend slurm): "
                                      "it takes no node snapshots");
        json_t *body = gw_parse_body(req, rep), *snap = NULL;
        if (!body)
                return;
        char field[128] = "", why[256] = "", node[65];
        int r = gw_node_snapshot_check(body, &snap, field, sizeof field, why, sizeof why);
        json_decref(body);
        if (r < 0)
                return gw_reply_error(rep, 400, field, "%s", why);
        snprintf(node, sizeof node, "%s", json_string_value(json_object_get(snap, "node")));
        json_int_t interval = json_integer_value(json_object_get(snap, "interval"));
        if (caller_may_post(d, c, node, rep) < 0) {
                json_decref(snap);
                return;
        }
        /* Before its Xids are recorded: a node refused leaves no trace in the store either. */
        if (!gw_nodes_has_room(d->nodes, node, (size_t) d->cfg->max_nodes)) {
                snprintf(why, sizeof why, "node %s is one node too many: this controller keeps max_nodes = %d", node,
                         d->cfg->max_nodes);
                refusal_tell(d, &d->nodes->told_full, why);
                json_decref(snap);
                return gw_reply_error(rep, 403, "node", "%s", why);
        }
        /* The Xids are news once, not part of the node's state. */
        json_t *xids = json_incref(json_object_get(snap, "xids"));
        json_object_del(snap, "xids");
        json_t *before = json_incref((json_t *) gw_nodes_snapshot(d->nodes, node));
        size_t i;
        json_t *x;
        json_array_foreach (xids, i, x)
                xid_apply(d, node, before, snap, (unsigned) json_integer_value(json_object_get(x, "gpu")),
                          (unsigned) json_integer_value(json_object_get(x, "xid")));
        json_decref(xids);
        json_decref(before);
        /* So are the stager's records: each a Slurm job's GPU-seconds spent on its dataset. */
        json_t *staged = json_incref(json_object_get(snap, "staged"));
        json_object_del(snap, "staged");
        json_array_foreach (staged, i, x)
                gw_slurm_staged(d, node,
                                &(struct gw_slurm_staging){
                                        .slurm_id = (uint32_t) json_integer_value(json_object_get(x, "job")),
                                        .took = json_integer_value(json_object_get(x, "ms")) * GW_USEC_PER_MSEC,
                                        .ok = json_is_true(json_object_get(x, "ok")),
                                        .hit = json_is_true(json_object_get(x, "hit")) });
        json_decref(staged);
        if (gw_nodes_put(d->nodes, snap, d->now, d->now_wall, (size_t) d->cfg->max_nodes) < 0) /* checked above */
                return gw_reply_error(rep, 403, "node",
                                      "node %s is one node too many: this controller keeps "
                                      "max_nodes = %d",
                                      node, d->cfg->max_nodes);
        gw_reply_json(
                rep, 200,
                json_pack("{s:s,s:I}", "node", node, "stale_after", (json_int_t) GW_NODE_STALE_ROUNDS * interval));
}
