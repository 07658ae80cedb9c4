/* What gpuwardd assumes where the flags and the config file say nothing: every setting's
 * default, and the state dir, socket and NVML library found from the environment. */
#include "daemon/config_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "api/http.h"
#include "base/cleanup.h"
#include "core/bookpolicy.h"
#include "core/fairshare.h"
#include "core/reclaim.h"
#include "core/webhook.h"
#include "daemon/nodes.h"

void gw_config_set_defaults(struct gw_config *c) {
        *c = (struct gw_config) {
                .listen = gw_xstrdup("127.0.0.1:8470"),
                .grace = 30 * GW_USEC_PER_SEC,
                .default_time_limit = 24 * 3600 * GW_USEC_PER_SEC,
                .max_time_limit = 7 * 24 * 3600 * GW_USEC_PER_SEC,
                .sample_interval = 2 * GW_USEC_PER_SEC,
                .strip_env = gw_xstrdup("LD_PRELOAD,LD_AUDIT"),
                .cgroup = gw_xstrdup("auto"),
                .rogue_policy = gw_xstrdup("report"),
                .default_retries = 3,
                .retry_backoff = 10 * GW_USEC_PER_SEC,
                .no_show = 15 * 60 * GW_USEC_PER_SEC,
                .booking_warn = 5 * 60 * GW_USEC_PER_SEC,
                .booking = GW_BOOKPOLICY_DEFAULT,
                .booking_pending_ttl = 7 * 86400 * GW_USEC_PER_SEC,
                .time_limit_warn = 5 * 60 * GW_USEC_PER_SEC,
                .rate_per_min = 20,
                .rate_burst = 50,
                /* A queue of a thousand is days of work on a box of 8 GPUs, and keeps a
                 * scheduling pass over every user's jobs in milliseconds; more is a loop gone
                 * wrong more often than a plan.  An admin raises it per user or for all. */
                .max_pending_jobs = 1000,
                .leak_mib_per_epoch = 256,
                .leak_epochs = 3,
                .snapshot_keep_last = 3,
                .backup_keep = 7,
                .max_conns_per_user = GW_HTTP_DEFAULT_MAX_PER_UID,
                .snapshot_cap = (uint64_t) 50 << 30,
                .snapshot_cap_user = (uint64_t) 20 << 30,
                .log_max = (uint64_t) 64 << 20,
                .state_reserve = (uint64_t) 256 << 20,
                .default_retry_on = gw_xstrdup("gpu_fault,cuda_error,nccl_error,lost"),
                .admins = gw_xstrdup(""),
                .webhook_url = gw_xstrdup(""),
                .webhook_events = gw_xstrdup(GW_WEBHOOK_DEFAULT_TOPICS),
                .guests = gw_xstrdup(""),
                .fairshare = true,
                .fairshare_half_life = GW_FS_HALF_LIFE_DEFAULT,
                .fairshare_weights = gw_xstrdup(""),
                .preempt_grace = 10 * 60 * GW_USEC_PER_SEC,
                .max_nodes = GW_NODES_DEFAULT_MAX,
        };
        c->policies = gw_xcalloc(gw_reclaim_profiles_n, sizeof *c->policies);
        for (size_t i = 0; i < gw_reclaim_profiles_n; i++) {
                c->policies[i].p = gw_reclaim_profiles[i];
                c->policies[i].max_priority = -1;
        }
        c->n_policies = gw_reclaim_profiles_n;
}

/* root's system path; for anyone else leaf under the XDG directory xdg_var names, else under
 * fallback_dir.  Malloc'ed. */
static char *default_path(const char *root_path, const char *xdg_var, const char *fallback_dir, const char *leaf) {
        const char *xdg = getenv(xdg_var);
        char buf[4096];
        if (geteuid() == 0)
                return gw_xstrdup(root_path);
        snprintf(buf, sizeof buf, "%s/%s", xdg && xdg[0] ? xdg : fallback_dir, leaf);
        return gw_xstrdup(buf);
}

void gw_config_fill_paths(struct gw_config *c) {
        if (!c->state_dir) {
                const char *home = getenv("HOME");
                char home_state[4096];
                snprintf(home_state, sizeof home_state, "%s/.local/state", home ? home : "/tmp");
                c->state_dir = default_path("/var/lib/gpuward", "XDG_STATE_HOME", home_state, "gpuward");
        }
        if (!c->socket)
                c->socket = default_path("/run/gpuward/gpuward.sock", "XDG_RUNTIME_DIR", c->state_dir, "gpuward.sock");
        const char *lib = getenv("GPUWARD_NVML_LIB");
        if (!c->nvml_lib && lib && lib[0])
                c->nvml_lib = gw_xstrdup(lib);
}
