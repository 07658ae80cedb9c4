#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "core/job.h"
#include "core/jobrec.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

static void state_names(void **state) {
        static const char *const want[_GW_JOB_STATE_MAX] = {
                "PENDING", "HELD", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "RECLAIMED",
        };
        for (int s = 0; s < _GW_JOB_STATE_MAX; s++) {
                assert_string_equal(gw_job_state_name((enum gw_job_state) s), want[s]);
                assert_int_equal(gw_job_state_from_name(want[s]), s);
        }
        assert_int_equal(gw_job_state_from_name("running"), GW_JOB_RUNNING);
        assert_int_equal(gw_job_state_from_name("Cancelled"), GW_JOB_CANCELLED);
        assert_int_equal(gw_job_state_from_name("RUN"), _GW_JOB_STATE_INVALID);
        assert_int_equal(gw_job_state_from_name(""), _GW_JOB_STATE_INVALID);
        assert_int_equal(gw_job_state_from_name("RUNNING "), _GW_JOB_STATE_INVALID);
        assert_int_equal(gw_job_state_from_name(NULL), _GW_JOB_STATE_INVALID);
        assert_null(gw_job_state_name(_GW_JOB_STATE_MAX));
        assert_null(gw_job_state_name(_GW_JOB_STATE_INVALID));
}

static void reason_names(void **state) {
        static const char *const want[_GW_REASON_MAX] = {
                "",      "Resources",         "Dependency", "Held",    "Priority", "Backoff", "Reservation",
                "Quota", "JobArrayTaskLimit", "Preempted",  "Drained", "Staging",
        };
        for (int r = 0; r < _GW_REASON_MAX; r++)
                assert_string_equal(gw_job_reason_name((enum gw_job_reason) r), want[r]);
        assert_null(gw_job_reason_name(_GW_REASON_MAX));
        assert_null(gw_job_reason_name(_GW_REASON_INVALID));
}

static void dep_kind_names(void **state) {
        static const char *const want[_GW_DEP_KIND_MAX] = { "none", "ok", "any" };
        for (int k = 0; k < _GW_DEP_KIND_MAX; k++) {
                assert_string_equal(gw_dep_kind_name((enum gw_dep_kind) k), want[k]);
                assert_int_equal(gw_dep_kind_from_name(want[k]), k);
        }
        assert_int_equal(gw_dep_kind_from_name("OK"), GW_DEP_KIND_OK);
        assert_int_equal(gw_dep_kind_from_name("Any"), GW_DEP_KIND_ANY);
        assert_int_equal(gw_dep_kind_from_name("afterok"), _GW_DEP_KIND_INVALID);
        assert_int_equal(gw_dep_kind_from_name(NULL), _GW_DEP_KIND_INVALID);
        assert_null(gw_dep_kind_name(_GW_DEP_KIND_MAX));
}

static void finals(void **state) {
        static const bool want[_GW_JOB_STATE_MAX] = {
                [GW_JOB_COMPLETED] = true, [GW_JOB_FAILED] = true,    [GW_JOB_CANCELLED] = true,
                [GW_JOB_TIMEOUT] = true,   [GW_JOB_RECLAIMED] = true,
        };
        for (int s = 0; s < _GW_JOB_STATE_MAX; s++)
                assert_int_equal(gw_job_state_is_final((enum gw_job_state) s), want[s]);
        assert_false(gw_job_state_is_final(_GW_JOB_STATE_INVALID));
        assert_false(gw_job_state_is_final(_GW_JOB_STATE_MAX));
}

/* The whole matrix, so that a new edge is a deliberate change here. */
static void transitions(void **state) {
        enum {
                P = GW_JOB_PENDING,
                H = GW_JOB_HELD,
                R = GW_JOB_RUNNING,
                C = GW_JOB_COMPLETED,
                F = GW_JOB_FAILED,
                X = GW_JOB_CANCELLED,
                T = GW_JOB_TIMEOUT,
                RC = GW_JOB_RECLAIMED
        };
        static const bool ok[_GW_JOB_STATE_MAX][_GW_JOB_STATE_MAX] = {
                [P] = { [H] = true, [R] = true, [X] = true, [F] = true },
                [H] = { [P] = true, [X] = true },
                [R] = { [C] = true, [F] = true, [X] = true, [T] = true, [RC] = true, [P] = true },
        };
        for (int from = 0; from < _GW_JOB_STATE_MAX; from++)
                for (int to = 0; to < _GW_JOB_STATE_MAX; to++)
                        if (gw_job_transition_ok((enum gw_job_state) from, (enum gw_job_state) to) != ok[from][to])
                                fail_msg("%s -> %s", gw_job_state_name((enum gw_job_state) from),
                                         gw_job_state_name((enum gw_job_state) to));

        for (int s = 0; s < _GW_JOB_STATE_MAX; s++) {
                assert_false(gw_job_transition_ok((enum gw_job_state) s, _GW_JOB_STATE_INVALID));
                assert_false(gw_job_transition_ok(_GW_JOB_STATE_INVALID, (enum gw_job_state) s));
                assert_false(gw_job_transition_ok((enum gw_job_state) s, _GW_JOB_STATE_MAX));
                /* Nothing leaves a final state. */
                if (gw_job_state_is_final((enum gw_job_state) s))
                        for (int to = 0; to < _GW_JOB_STATE_MAX; to++)
                                assert_false(gw_job_transition_ok((enum gw_job_state) s, (enum gw_job_state) to));
        }
}

static void dep_status(void **state) {
#define S GW_DEP_SATISFIED
#define W GW_DEP_WAITING
#define N GW_DEP_NEVER
        static const enum gw_dep_status want[_GW_DEP_KIND_MAX][_GW_JOB_STATE_MAX] = {
                [GW_DEP_KIND_NONE] = { S, S, S, S, S, S, S, S },
                [GW_DEP_KIND_OK] = { W, W, W, S, N, N, N, N },
                [GW_DEP_KIND_ANY] = { W, W, W, S, S, S, S, S },
        };
#undef S
#undef W
#undef N
        for (int k = 0; k < _GW_DEP_KIND_MAX; k++)
                for (int s = 0; s < _GW_JOB_STATE_MAX; s++)
                        if (gw_dep_status_of((enum gw_dep_kind) k, (enum gw_job_state) s) != want[k][s])
                                fail_msg("%s on %s", gw_dep_kind_name((enum gw_dep_kind) k),
                                         gw_job_state_name((enum gw_job_state) s));
        assert_int_equal(gw_dep_status_of(GW_DEP_KIND_OK, _GW_JOB_STATE_INVALID), GW_DEP_WAITING);
        assert_int_equal(gw_dep_status_of(_GW_DEP_KIND_INVALID, GW_JOB_COMPLETED), GW_DEP_WAITING);
}

/* Preempted replaces only the reasons that mean "waits for GPUs", and only for a job queued
 * again after a preemption that is not in a booking of its own. */
static void reason_shown(void **state) {
        static const struct {
                enum gw_job_state st;
                bool first;
                int64_t booking;
                enum gw_job_reason wait, want;
        } cases[] = {
                { GW_JOB_PENDING, true, 0, GW_REASON_RESOURCES, GW_REASON_PREEMPTED },
                { GW_JOB_PENDING, true, 0, GW_REASON_PRIORITY, GW_REASON_PREEMPTED },
                { GW_JOB_PENDING, true, 0, GW_REASON_RESERVATION, GW_REASON_PREEMPTED },
                { GW_JOB_PENDING, true, 0, GW_REASON_QUOTA, GW_REASON_QUOTA },
                { GW_JOB_PENDING, true, 0, GW_REASON_DEPENDENCY, GW_REASON_DEPENDENCY },
                { GW_JOB_PENDING, true, 0, GW_REASON_BACKOFF, GW_REASON_BACKOFF },
                { GW_JOB_PENDING, true, 7, GW_REASON_RESERVATION, GW_REASON_RESERVATION },
                { GW_JOB_PENDING, false, 0, GW_REASON_RESERVATION, GW_REASON_RESERVATION },
                { GW_JOB_HELD, true, 0, GW_REASON_HELD, GW_REASON_HELD },
                { GW_JOB_RUNNING, true, 0, GW_REASON_NONE, GW_REASON_NONE },
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                struct gw_job j = { .state = cases[i].st,
                                    .queue_first = cases[i].first,
                                    .booking_id = cases[i].booking,
                                    .wait_reason = cases[i].wait };
                assert_int_equal(gw_job_reason_shown(&j), cases[i].want);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(state_names),  cmocka_unit_test(reason_names), cmocka_unit_test(dep_kind_names),
                cmocka_unit_test(finals),       cmocka_unit_test(transitions),  cmocka_unit_test(dep_status),
                cmocka_unit_test(reason_shown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
