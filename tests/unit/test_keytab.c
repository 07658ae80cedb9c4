#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "base/keytab.h"

/* A value that says which key it was put for. */
static void *val(uint64_t key) { return (void *) (uintptr_t) (key * 2 + 1); }

static void empty_table_answers_null(void **state) {
        struct gw_keytab t = { 0 };

        (void) state;
        assert_null(gw_keytab_get(&t, 7));
        assert_null(gw_keytab_take(&t, 7));
        assert_int_equal(t.cap, 0);
}

static void put_get_replace(void **state) {
        struct gw_keytab t = { 0 };

        (void) state;
        gw_keytab_put(&t, 5, val(5));
        gw_keytab_put(&t, 5, val(6));
        assert_int_equal(t.n, 1);
        assert_ptr_equal(gw_keytab_get(&t, 5), val(6));
        assert_null(gw_keytab_get(&t, 6));
        assert_ptr_equal(gw_keytab_take(&t, 5), val(6));
        /* The last one taken: the slots are given back. */
        assert_null(t.slots);
        assert_int_equal(t.cap, 0);
}

/* Many keys, grown several times, then taken in an order that breaks probe runs in their
 * middle: each left must still be found (the backward shift), each taken gone. */
static void take_keeps_the_rest_reachable(void **state) {
        struct gw_keytab t = { 0 };
        enum { N = 5000 };

        (void) state;
        for (uint64_t k = 1; k <= N; k++)
                gw_keytab_put(&t, k * 3, val(k * 3));
        assert_int_equal(t.n, N);
        for (uint64_t k = 1; k <= N; k += 2)
                assert_ptr_equal(gw_keytab_take(&t, k * 3), val(k * 3));
        for (uint64_t k = 1; k <= N; k++)
                if (k % 2)
                        assert_null(gw_keytab_get(&t, k * 3));
                else
                        assert_ptr_equal(gw_keytab_get(&t, k * 3), val(k * 3));
        for (uint64_t k = 2; k <= N; k += 2)
                assert_ptr_equal(gw_keytab_take(&t, k * 3), val(k * 3));
        assert_int_equal(t.n, 0);
        assert_null(t.slots);
}

/* A small table, some taken, then given up with entries left (gw_keytab_done). */
static void done_with_entries_left(void **state) {
        struct gw_keytab t = { 0 };

        (void) state;
        for (uint64_t k = 0; k < 8; k++)
                gw_keytab_put(&t, k, val(k));
        for (uint64_t k = 0; k < 8; k += 3)
                assert_ptr_equal(gw_keytab_take(&t, k), val(k));
        for (uint64_t k = 0; k < 8; k++)
                if (k % 3)
                        assert_ptr_equal(gw_keytab_get(&t, k), val(k));
        gw_keytab_done(&t);
        assert_null(t.slots);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(empty_table_answers_null),
                cmocka_unit_test(put_get_replace),
                cmocka_unit_test(take_keeps_the_rest_reachable),
                cmocka_unit_test(done_with_entries_left),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
