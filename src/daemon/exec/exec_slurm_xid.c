/* An Xid on a node's GPU, as the node's agent reports it: what the Slurm executor does about
 * it (exec_slurm.h; the snapshot's handler, handlers_nodes.c, ties it to gpuward's jobs).
 *
 * Slurm 22.05 cannot take one GPU of a node out of use: GPUs are counted per node (a count
 * lowered with scontrol does not say which GPU goes), and a placeholder job holding the GPU
 * cannot ask Slurm for a given GPU index.  So a drain-worthy Xid drains the
 * whole node (`scontrol update NodeName=N State=DRAIN Reason="gpuward: Xid 79 on GPU 2"`):
 * its running jobs finish, nothing new lands on it, and an admin brings it back with
 * `scontrol update NodeName=N State=RESUME` once the GPU is reset or replaced
 * (docs/CLUSTER.md). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "core/failure.h"
#include "daemon/exec/exec_slurm.h"

void gw_slurm_drain_node(struct gw_daemon *d, const char *node, unsigned gpu, unsigned xid) {
        struct gw_exec_slurm *s = slurm_of(d);
        if (!s->scontrol[0]) {
                log_warn("node %s: Xid %u on GPU %u, but scontrol was not found: the node is not drained", node, xid,
                         gpu);
                return;
        }
        char name[100], reason[100];
        snprintf(name, sizeof name, "NodeName=%s", node);
        snprintf(reason, sizeof reason, "Reason=gpuward: Xid %u on GPU %u", xid, gpu);
        char *argv[] = { s->scontrol, "update", name, "State=DRAIN", reason, NULL };
        char conf[4200], *env[2];
        gw_slurm_client_env(conf, sizeof conf, env);
        pid_t pid = gw_slurm_spawn(argv, env, false, 0, 0, NULL, 0, NULL, -1);
        if (pid < 0) {
                log_warn("node %s: cannot run scontrol to drain it: %s", node, strerror((int) -pid));
                return;
        }
        gw_slurm_kid_add(s, pid);
        log_warn("node %s: drained in Slurm (scontrol update %s State=DRAIN \"%s\")", node, name, reason + 7);
}

bool gw_slurm_xid_drains(unsigned xid) {
        size_t n;
        const unsigned *list = gw_failure_default_drain_xids(&n);
        for (size_t i = 0; i < n; i++)
                if (list[i] == xid)
                        return true;
        return false;
}

int64_t gw_slurm_job_of(struct gw_daemon *d, uint32_t sid, bool *running) {
        struct gw_exec_slurm *s = slurm_of(d);
        *running = false;
        for (size_t i = 0; i < s->n_jobs; i++)
                if (s->jobs[i].slurm_id == sid) {
                        *running = true;
                        return s->jobs[i].id;
                }
        size_t n = s->n_ended < GW_SLURM_ENDED_KEEP ? s->n_ended : GW_SLURM_ENDED_KEEP;
        for (size_t i = 0; i < n; i++)
                if (s->ended[i].slurm_id == sid)
                        return s->ended[i].id;
        return 0;
}
