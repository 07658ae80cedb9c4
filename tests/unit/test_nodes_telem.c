/* A cluster job's telemetry point from one GPU of a node's snapshot (src/daemon/nodetelem/nodes_telem.c):
 * its own processes' memory, the device's utilisation, nothing for a GPU it is not on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "daemon/nodetelem/nodes_telem.h"

static json_t *gpu(const char *text) {
        json_t *g = json_loads(text, 0, NULL);
        assert_non_null(g);
        return g;
}

static void test_own_processes_memory_and_device_util(void **state) {
        (void) state;
        json_t *g = gpu(
                "{\"index\": 2, \"mem_total\": 1000, \"mem_used\": 900, \"util\": 70, \"health\": \"ok\","
                " \"procs\": [{\"pid\": 1, \"mem\": 300, \"job\": 42}, {\"pid\": 2, \"mem\": 100, \"job\": 42},"
                "             {\"pid\": 3, \"mem\": 500, \"job\": 43}, {\"pid\": 4, \"mem\": null, \"job\": null}]}");
        struct gw_nodes_telem_point p;
        assert_true(gw_nodes_telem_point(g, 42, 5 * GW_USEC_PER_SEC, &p));
        assert_int_equal(p.gpu, 2);
        assert_int_equal(p.mem_total, 1000);
        assert_int_equal(p.pt.mem, 400); /* not job 43's, not the rogue's */
        assert_int_equal(p.pt.util, 70);
        assert_int_equal(p.pt.t, 5 * GW_USEC_PER_SEC);
        assert_false(gw_nodes_telem_point(g, 44, 0, &p));
        json_decref(g);
}

static void test_unknown_memory_and_unhealthy_gpu(void **state) {
        (void) state;
        /* No process memory known: the device's in use; a GPU not "ok" has no utilisation. */
        json_t *g = gpu("{\"index\": 0, \"mem_total\": 1000, \"mem_used\": 600, \"util\": 90, \"health\": \"lost\","
                        " \"procs\": [{\"pid\": 1, \"mem\": null, \"job\": 7}]}");
        struct gw_nodes_telem_point p;
        assert_true(gw_nodes_telem_point(g, 7, 1, &p));
        assert_int_equal(p.pt.mem, 600);
        assert_int_equal(p.pt.util, 0);
        json_decref(g);
        g = gpu("{\"index\": 1, \"procs\": [{\"pid\": 1, \"mem\": 5, \"job\": 7}]}");
        assert_true(gw_nodes_telem_point(g, 7, 1, &p));
        assert_int_equal(p.mem_total, 0);
        assert_int_equal(p.pt.mem, 5);
        assert_int_equal(p.pt.util, 0);
        json_decref(g);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_own_processes_memory_and_device_util),
                cmocka_unit_test(test_unknown_memory_and_unhealthy_gpu),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
