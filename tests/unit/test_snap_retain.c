/* Snapshot retention (core/snap_retain.h): per job the newest keep_last copies of each kind;
 * under a cap the OLDEST copies go first, each job's newest best.pt last, until under it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>

#include "core/snap_retain.h"

#define S GW_USEC_PER_SEC

static struct gw_snap_item last(int64_t id, int64_t job, int seq, gw_usec_t t, uint64_t bytes) {
        return (struct gw_snap_item){ .id = id, .job_id = job, .seq = seq, .time = t, .bytes = bytes };
}

static struct gw_snap_item best(int64_t id, int64_t job, int seq, gw_usec_t t, uint64_t bytes) {
        struct gw_snap_item it = last(id, job, seq, t, bytes);
        it.best = true;
        return it;
}

static void cap_evicts_the_oldest_last_copies_first(void **state) {
        (void) state;
        /* Two jobs, interleaved in time, listed out of order.  Each copy 100 bytes, 700 in all;
         * a cap of 400 needs 3 evictions: the three oldest last.pt copies (ids 1, 3, 4 at
         * t = 10, 20, 30), not job 1's only (so newest) best.pt (id 2 at t = 15) nor the newer
         * last.pt ones. */
        struct gw_snap_item v[] = {
                last(6, 2, 2, 60 * S, 100), best(2, 1, 2, 15 * S, 100), last(4, 2, 1, 30 * S, 100),
                best(7, 2, 3, 70 * S, 100), last(1, 1, 1, 10 * S, 100), last(5, 1, 3, 50 * S, 100),
                last(3, 1, 3, 20 * S, 100),
        };
        size_t n = sizeof v / sizeof *v;
        bool ev[sizeof v / sizeof *v];
        assert_int_equal(gw_snap_over_cap(v, n, 400, 0, ev), 3);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(ev[i], v[i].id == 1 || v[i].id == 3 || v[i].id == 4);
        /* One byte over: only the single oldest. */
        assert_int_equal(gw_snap_over_cap(v, n, 699, 0, ev), 1);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(ev[i], v[i].id == 1);
        /* At the cap, or no cap: nothing. */
        assert_int_equal(gw_snap_over_cap(v, n, 700, 0, ev), 0);
        assert_int_equal(gw_snap_over_cap(v, n, 0, 0, ev), 0);
        for (size_t i = 0; i < n; i++)
                assert_false(ev[i]);
}

static void cap_evicts_best_copies_too_the_newest_last(void **state) {
        (void) state;
        /* 1020 bytes: an older best.pt is an old copy like any other and goes first. */
        struct gw_snap_item v[] = { best(1, 1, 1, 1 * S, 500), last(2, 1, 2, 2 * S, 10), best(3, 1, 3, 3 * S, 500),
                                    last(4, 1, 4, 4 * S, 10) };
        bool ev[4];
        assert_int_equal(gw_snap_over_cap(v, 4, 600, 0, ev), 1);
        assert_true(ev[0]);
        assert_false(ev[1] || ev[2] || ev[3]);
        /* Under 510: the last.pt copies, oldest first, before the newest best.pt. */
        assert_int_equal(gw_snap_over_cap(v, 4, 509, 0, ev), 3);
        assert_true(ev[0] && ev[1] && ev[3]);
        assert_false(ev[2]);
        /* A cap under the newest best.pt alone: it goes as well; a cap holds. */
        assert_int_equal(gw_snap_over_cap(v, 4, 1, 0, ev), 4);
        for (size_t i = 0; i < 4; i++)
                assert_true(ev[i]);
        /* Each job's newest best.pt goes after every other copy, then oldest first. */
        struct gw_snap_item w[] = { best(1, 1, 1, 1 * S, 100), best(2, 2, 1, 2 * S, 100), last(3, 2, 2, 3 * S, 100) };
        bool ew[3];
        assert_int_equal(gw_snap_over_cap(w, 3, 100, 0, ew), 2);
        assert_true(ew[0] && ew[2]);
        assert_false(ew[1]);
}

static void cap_makes_room_for_an_incoming_copy(void **state) {
        (void) state;
        struct gw_snap_item v[] = { last(1, 1, 1, 1 * S, 100), last(2, 1, 2, 2 * S, 100), last(3, 1, 3, 3 * S, 100) };
        bool ev[3];
        /* 300 held, 100 coming, a cap of 300: the oldest goes first. */
        assert_int_equal(gw_snap_over_cap(v, 3, 300, 100, ev), 1);
        assert_true(ev[0]);
        assert_false(ev[1] || ev[2]);
        assert_int_equal(gw_snap_over_cap(v, 3, 400, 100, ev), 0);
        /* Sparse copies hold few blocks: nothing to evict. */
        struct gw_snap_item sparse[] = { last(1, 1, 1, 1 * S, 4096), last(2, 1, 2, 2 * S, 4096) };
        assert_int_equal(gw_snap_over_cap(sparse, 2, 1 << 20, 4096, ev), 0);
}

static void cap_ties_in_time_go_by_id(void **state) {
        (void) state;
        /* Taken in the same microsecond: the store's order (id) decides. */
        struct gw_snap_item v[] = { last(9, 1, 1, 5 * S, 100), last(8, 2, 1, 5 * S, 100), last(10, 3, 1, 5 * S, 100) };
        bool ev[3];
        assert_int_equal(gw_snap_over_cap(v, 3, 200, 0, ev), 1);
        assert_false(ev[0]);
        assert_true(ev[1]);
        assert_false(ev[2]);
}

static void keep_last_keeps_the_newest_of_each_kind(void **state) {
        (void) state;
        struct gw_snap_item v[] = { last(5, 1, 5, 5 * S, 0), best(1, 1, 1, 1 * S, 0), last(2, 1, 2, 2 * S, 0),
                                    last(7, 1, 7, 7 * S, 0), best(6, 1, 6, 6 * S, 0), last(3, 1, 3, 3 * S, 0),
                                    last(4, 1, 4, 4 * S, 0) };
        bool ev[7];
        /* Last copies by seq: 2 3 4 5 7; keep the newest 3 (4, 5, 7). */
        assert_int_equal(gw_snap_keep_last(v, 7, 3, ev), 2);
        for (size_t i = 0; i < 7; i++)
                assert_int_equal(ev[i], v[i].seq == 2 || v[i].seq == 3);
        assert_int_equal(gw_snap_keep_last(v, 7, 10, ev), 0);
        /* keep_last 1: the newest last.pt (seq 7) and the newest best.pt (seq 6). */
        assert_int_equal(gw_snap_keep_last(v, 7, 1, ev), 5);
        for (size_t i = 0; i < 7; i++)
                assert_int_equal(ev[i], v[i].seq != 7 && v[i].seq != 6);
        /* keep_last 0: every copy goes. */
        assert_int_equal(gw_snap_keep_last(v, 7, 0, ev), 7);
        assert_int_equal(gw_snap_keep_last(v, 0, 3, ev), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(cap_evicts_the_oldest_last_copies_first),
                cmocka_unit_test(cap_evicts_best_copies_too_the_newest_last),
                cmocka_unit_test(cap_makes_room_for_an_incoming_copy),
                cmocka_unit_test(cap_ties_in_time_go_by_id),
                cmocka_unit_test(keep_last_keeps_the_newest_of_each_kind),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
