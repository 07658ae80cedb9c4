/* POST /api/v1/agent/snapshot: a node agent's snapshot (agent.h), kept in memory by the
 * controller (nodes.h).  A node agent's token (scope agent) or an admin's only (the route's
 * flags), as what an agent reports decides what every user sees of the cluster. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "daemon/handlers.h"
#include "daemon/nodes.h"

void on_agent_snapshot(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                       struct gw_http_reply *rep, const struct caller *c) {
        (void) ctx, (void) c;
        struct gw_daemon *d = the_daemon(ud);
        if (!d->cfg->backend_slurm)
                return reply_error(rep, 409, NULL, "this gpuwardd is not a cluster's controller (--backend slurm): "
                                                   "it takes no node snapshots");
        json_t *body = parse_body(req, rep), *snap = NULL;
        if (!body)
                return;
        char field[128] = "", why[256] = "", node[65];
        int r = gw_node_snapshot_check(body, &snap, field, sizeof field, why, sizeof why);
        json_decref(body);
        if (r < 0)
                return reply_error(rep, 400, field, "%s", why);
        snprintf(node, sizeof node, "%s", json_string_value(json_object_get(snap, "node")));
        json_int_t interval = json_integer_value(json_object_get(snap, "interval"));
        if (!d->nodes)
                d->nodes = gw_xcalloc(1, sizeof *d->nodes);
        if (gw_nodes_put(d->nodes, snap, d->now, d->now_wall) < 0)
                return reply_error(rep, 507, "node", "node: %s is one node too many: this controller keeps %d",
                                   node, GW_NODES_MAX);
        reply_json(rep, 200, json_pack("{s:s,s:I}", "node", node, "stale_after",
                                       (json_int_t) GW_NODE_STALE_ROUNDS * interval));
}
