#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../src/cli/arena.c"

/* A listing of n rows, as the daemon sends it. */
static char *listing(size_t n) {
        size_t cap = 64 + n * 80, len = 0;
        char *s = malloc(cap);
        assert_non_null(s);
        len += (size_t) snprintf(s + len, cap - len, "{\"fields\":[\"id\",\"name\",\"gpus\"],\"rows\":[");
        for (size_t i = 0; i < n; i++)
                len += (size_t) snprintf(s + len, cap - len, "%s[%zu,\"job-%zu\",[0,1]]", i ? "," : "", i, i);
        snprintf(s + len, cap - len, "]}");
        return s;
}

static void parses_what_malloc_parses(void **state) {
        (void) state;
        char *text = listing(30000); /* more than one block */
        json_t *outside = json_object(); /* made before: freed through free() */
        json_object_set_new(outside, "kept", json_string("yes"));
        cli_json_arena_begin();
        json_error_t err;
        json_t *doc = json_loads(text, 0, &err);
        assert_non_null(doc);
        json_t *rows = json_object_get(doc, "rows");
        assert_int_equal(json_array_size(rows), 30000);
        assert_string_equal(json_string_value(json_array_get(json_array_get(rows, 29999), 1)), "job-29999");
        assert_non_null(top);
        assert_non_null(top->prev);
        /* A value of before the arena, released inside it, goes back to malloc's heap. */
        json_object_del(outside, "kept");
        char dumped[64];
        size_t n = json_dumpb(json_array_get(rows, 7), dumped, sizeof dumped - 1, JSON_COMPACT);
        dumped[n] = '\0';
        assert_string_equal(dumped, "[7,\"job-7\",[0,1]]");
        json_decref(doc);
        cli_json_arena_end();
        assert_null(top);
        /* After the arena, jansson allocates from malloc again. */
        json_object_set_new(outside, "after", json_integer(1));
        assert_int_equal(json_integer_value(json_object_get(outside, "after")), 1);
        json_decref(outside);
        free(text);
}

/* Rows made after a mark and given back take the same memory again: a long listing read a
 * row at a time stays in one block. */
static void release_makes_again(void **state) {
        (void) state;
        cli_json_arena_begin();
        json_t *kept = json_string("made before the mark");
        struct cli_json_arena_mark m = { 0 };
        assert_int_equal(cli_json_arena_mark(&m), 0);
        struct block *first = top;
        void *again = NULL;
        for (int i = 0; i < 100000; i++) {
                json_t *row = json_pack("[i,s,[i,i]]", i, "job", 0, 1);
                assert_non_null(row);
                if (!again)
                        again = row;
                assert_ptr_equal(row, again);
                cli_json_arena_release(&m);
        }
        /* A row larger than what is left of the block takes new ones, kept for the next. */
        char *big = calloc(1, 2 * BLOCK_BYTES);
        assert_non_null(big);
        memset(big, 'x', 2 * BLOCK_BYTES - 1);
        size_t blocks = 0;
        for (int i = 0; i < 3; i++) {
                json_t *s = json_string(big);
                assert_non_null(s);
                assert_ptr_not_equal(top, first);
                cli_json_arena_release(&m);
                assert_ptr_equal(top, first);
                size_t n = 0;
                for (const struct block *b = spare; b; b = b->prev)
                        n++;
                assert_true(n > 0);
                if (i > 0)
                        assert_int_equal(n, blocks);
                blocks = n;
        }
        free(big);
        assert_string_equal(json_string_value(kept), "made before the mark");
        cli_json_arena_end();
        assert_null(top);
        assert_null(spare);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(parses_what_malloc_parses),
                cmocka_unit_test(release_makes_again),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
