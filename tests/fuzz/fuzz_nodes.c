/* libFuzzer target: a node agent's snapshot as the controller checks it (src/daemon/nodes/nodes.c,
 * included so that it is instrumented; it needs only jansson and base).  The input is the
 * request body; a snapshot that passes must be kept, shown and kept again without fault, and
 * what is shown must hold to the bounds the check promises. */
#include <errno.h>

#include "../../src/daemon/nodes/nodes.c"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        json_t *body = json_loadb((const char *) data, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL),
               *snap = NULL;
        if (!json_is_object(body)) {
                json_decref(body);
                return 0;
        }
        char field[128], why[256];
        int r = gw_node_snapshot_check(body, &snap, field, sizeof field, why, sizeof why);
        json_decref(body);
        FUZZ_CHECK(r == 0 || r == -EINVAL);
        if (r < 0) {
                FUZZ_CHECK(field[0] && !strncmp(why, field, strlen(field)));
                return 0;
        }
        struct gw_nodes *t = calloc(1, sizeof *t);
        FUZZ_CHECK(t);
        json_incref(snap);
        FUZZ_CHECK(gw_nodes_put(t, snap, 1, 1, 1) == 0);
        FUZZ_CHECK(gw_nodes_put(t, snap, 2, 2, 1) == 0 && t->n == 1);
        const struct gw_nodes_page page = { .limit = 1 };
        const char *next;
        json_t *shown = gw_nodes_json(t, 3, false, &page, &next);
        FUZZ_CHECK(json_array_size(shown) == 1 && !next);
        const json_t *gpus = json_object_get(json_array_get(shown, 0), "gpus");
        FUZZ_CHECK(json_array_size(gpus) <= GW_AGENT_MAX_GPUS);
        size_t i, procs = 0;
        const json_t *g;
        json_array_foreach (gpus, i, g) {
                FUZZ_CHECK(json_array_size(json_object_get(g, "procs")) <= GW_AGENT_MAX_PROCS &&
                           json_array_size(json_object_get(g, "slurm_jobs")) <= GW_AGENT_MAX_PROCS);
                procs += json_array_size(json_object_get(g, "procs"));
        }
        FUZZ_CHECK(procs <= GW_AGENT_MAX_PROCS_TOTAL);
        json_decref(shown);
        gw_nodes_free(t);
        return 0;
}
