/* Which backend runs the jobs: the one place that reads the config's choice.  Everything
 * else asks the table it opens (executor.h). */
#include "daemon/daemon.h"
#include "daemon/exec/exec_shim.h"
#include "daemon/exec/exec_slurm.h"
#include "daemon/exec/exec_test.h"

int gw_backend_open(struct gw_daemon *d) {
        switch (d->cfg->backend) {
        case GW_BACKEND_SLURM:
                return gw_exec_slurm_open(d);
        case GW_BACKEND_TEST:
                return gw_exec_test_open(d);
        case GW_BACKEND_LOCAL:
        default:
                return gw_exec_shim_open(d);
        }
}
