/* Where each attempt of a job handed to Slurm ran, for the API's attempts: its Slurm job and
 * node, read from the job's own events (exec_slurm.c writes them), so that a daemon restarted
 * since tells them as well. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "daemon/http/handlers.h"

/* The node in "Slurm job S: STATE on NODE[, wait status W]"; false when it names none. */
static bool node_of(const char *msg, const char *prefix, char *node, size_t n) {
        if (strncmp(msg, prefix, strlen(prefix)))
                return false;
        const char *on = strstr(msg + strlen(prefix), " on ");
        if (!on)
                return false;
        on += 4;
        size_t l = strcspn(on, ", ");
        if (l == 0 || l >= n)
                return false;
        memcpy(node, on, l);
        node[l] = '\0';
        return true;
}

void gw_slurm_attempts_annotate(json_t *attempts, const struct gw_job_event *ev, size_t n) {
        size_t i;
        json_t *a;
        json_array_foreach (attempts, i, a) {
                json_int_t k = json_integer_value(json_object_get(a, "attempt"));
                uint32_t sid = 0;
                for (size_t e = 0; e < n; e++) {
                        int att;
                        uint32_t s;
                        if (!strcmp(ev[e].kind, "slurm_job") && ev[e].message &&
                            sscanf(ev[e].message, "attempt %d submitted to Slurm as job %" SCNu32, &att, &s) == 2 &&
                            att == k)
                                sid = s;
                }
                if (!sid)
                        continue;
                char prefix[48], node[128] = "";
                snprintf(prefix, sizeof prefix, "Slurm job %" PRIu32 ": ", sid);
                for (size_t e = 0; e < n; e++)
                        if (!strcmp(ev[e].kind, "slurm") && ev[e].message)
                                (void) node_of(ev[e].message, prefix, node, sizeof node);
                json_object_set_new(a, "slurm_job", json_integer(sid));
                json_object_set_new(a, "node", node[0] ? json_string(node) : json_null());
        }
}
