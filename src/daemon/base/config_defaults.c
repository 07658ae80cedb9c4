/* What gpuwardd assumes where the flags and the config file say nothing: every setting's
 * default, and the state dir, socket and NVML library found from the environment. */
#include "daemon/base/config_int.h"
#include "daemon/base/config_keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "api/http.h"
#include "base/cleanup.h"
#include "core/bookpolicy.h"
#include "core/fairshare.h"
#include "core/reclaim.h"
#include "core/webhook.h"
#include "daemon/nodes/nodes.h"

void gw_config_set_defaults(struct gw_config *c) {
        *c = (struct gw_config){ .booking = GW_BOOKPOLICY_DEFAULT };
        /* The table's defaults are its own keys' values: one that fails is a bug the tests
         * catch (tests/e2e/test_manpages.py reads them all through --list-keys). */
        if (gw_config_keys_set_defaults(c) < 0)
                abort();
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
