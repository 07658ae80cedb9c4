/* gpuwardd --stage-run's socket path: "%n" is the node's name (stage_run.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "daemon/agent/agent.h"

static void test_node_name_and_percent(void **state) {
        (void) state;
        char buf[64];
        assert_int_equal(gw_agent_stage_path("/run/gpuward/stage.sock", "n1", buf, sizeof buf), 0);
        assert_string_equal(buf, "/run/gpuward/stage.sock");
        assert_int_equal(gw_agent_stage_path("/run/gw-%n/s-%n.sock", "gpu7", buf, sizeof buf), 0);
        assert_string_equal(buf, "/run/gw-gpu7/s-gpu7.sock");
        assert_int_equal(gw_agent_stage_path("/run/100%%/s", "n1", buf, sizeof buf), 0);
        assert_string_equal(buf, "/run/100%/s");
}

static void test_bad_and_long(void **state) {
        (void) state;
        char buf[16];
        assert_int_equal(gw_agent_stage_path("/run/%s", "n1", buf, sizeof buf), -EINVAL);
        assert_int_equal(gw_agent_stage_path("/run/x%", "n1", buf, sizeof buf), -EINVAL);
        assert_int_equal(gw_agent_stage_path("/run/gpuward/%n", "n12", buf, sizeof buf), -ENAMETOOLONG);
        assert_int_equal(gw_agent_stage_path("/run/%n", "node-with-a-long-name", buf, sizeof buf), -ENAMETOOLONG);
        assert_int_equal(gw_agent_stage_path("/r/%n", "n12345678", buf, sizeof buf), 0); /* 15 bytes fit */
        assert_string_equal(buf, "/r/n12345678");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_node_name_and_percent),
                cmocka_unit_test(test_bad_and_long),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
