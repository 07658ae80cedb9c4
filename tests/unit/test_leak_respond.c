/* What gpuward does about a detected leak: report once, stop after a checkpoint under restart. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/leak_respond.h"

static struct gw_leak_respond_input flagged(enum gw_leak_policy p) {
        return (struct gw_leak_respond_input){ .policy = p,
                                               .flagged = true,
                                               .resumable = true,
                                               .attempt = 1,
                                               .max_retries = 3 };
}

static void warn_reports_once_and_never_stops(void **state) {
        struct gw_leak_respond_input in = flagged(GW_LEAK_POLICY_WARN);
        struct gw_leak_response r;

        (void) state;
        assert_int_equal(gw_leak_respond(&in, &r), 0);
        assert_int_equal(r.act, GW_LEAK_ACT_REPORT);
        assert_false(r.restart_pending);
        assert_string_equal(r.outcome, "it keeps running");
        in.reported = true;
        in.ckpt_settled = true;
        assert_int_equal(gw_leak_respond(&in, &r), 0);
        assert_int_equal(r.act, GW_LEAK_ACT_NONE);
}

static void restart_stops_after_a_settled_checkpoint(void **state) {
        struct gw_leak_respond_input in = flagged(GW_LEAK_POLICY_RESTART);
        struct gw_leak_response r;

        (void) state;
        assert_int_equal(gw_leak_respond(&in, &r), 0);
        assert_int_equal(r.act, GW_LEAK_ACT_REPORT);
        assert_true(r.restart_pending);
        assert_non_null(strstr(r.outcome, "stopped after its next checkpoint"));
        in.reported = true;
        in.restart_pending = true;
        assert_int_equal(gw_leak_respond(&in, &r), 0);
        assert_int_equal(r.act, GW_LEAK_ACT_NONE); /* checkpoint not settled yet */
        in.ckpt_settled = true;
        in.stopping = true; /* already being stopped: nothing */
        assert_int_equal(gw_leak_respond(&in, &r), 0);
        assert_int_equal(r.act, GW_LEAK_ACT_NONE);
        in.stopping = false;
        assert_int_equal(gw_leak_respond(&in, &r), 0);
        assert_int_equal(r.act, GW_LEAK_ACT_STOP);
        in.stop_sent = true;
        assert_int_equal(gw_leak_respond(&in, &r), 0);
        assert_int_equal(r.act, GW_LEAK_ACT_NONE);
        /* The detector no longer flags it (the newest epoch was flat): the stop still comes. */
        in = flagged(GW_LEAK_POLICY_RESTART);
        in.flagged = false;
        in.reported = in.restart_pending = in.ckpt_settled = true;
        assert_int_equal(gw_leak_respond(&in, &r), 0);
        assert_int_equal(r.act, GW_LEAK_ACT_STOP);
}

static void restart_needs_a_checkpoint_and_a_retry(void **state) {
        struct gw_leak_respond_input in = flagged(GW_LEAK_POLICY_RESTART);
        struct gw_leak_response r;

        (void) state;
        in.resumable = false;
        assert_int_equal(gw_leak_respond(&in, &r), 0);
        assert_int_equal(r.act, GW_LEAK_ACT_REPORT);
        assert_false(r.restart_pending);
        assert_non_null(strstr(r.outcome, "from scratch"));
        in.resumable = true;
        in.attempt = 4; /* 3 retries made */
        assert_int_equal(gw_leak_respond(&in, &r), 0);
        assert_false(r.restart_pending);
        assert_string_equal(r.outcome, "no retry left, so it keeps running");
        in.attempt = 3;
        assert_int_equal(gw_leak_respond(&in, &r), 0);
        assert_true(r.restart_pending);
}

static void names_and_bad_input(void **state) {
        struct gw_leak_respond_input in = flagged(GW_LEAK_POLICY_WARN);
        struct gw_leak_response r;

        (void) state;
        assert_int_equal(gw_leak_policy_from_name(NULL), GW_LEAK_POLICY_WARN);
        assert_int_equal(gw_leak_policy_from_name("restart"), GW_LEAK_POLICY_RESTART);
        assert_int_equal(gw_leak_policy_from_name("reboot"), _GW_LEAK_POLICY_INVALID);
        assert_string_equal(gw_leak_policy_name(GW_LEAK_POLICY_WARN), "warn");
        assert_null(gw_leak_policy_name(_GW_LEAK_POLICY_MAX));
        in.attempt = 0;
        assert_int_equal(gw_leak_respond(&in, &r), -EINVAL);
        in.attempt = 1;
        in.policy = _GW_LEAK_POLICY_MAX;
        assert_int_equal(gw_leak_respond(&in, &r), -EINVAL);
        assert_int_equal(gw_leak_respond(NULL, &r), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(warn_reports_once_and_never_stops),
                cmocka_unit_test(restart_stops_after_a_settled_checkpoint),
                cmocka_unit_test(restart_needs_a_checkpoint_and_a_retry),
                cmocka_unit_test(names_and_bad_input),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
