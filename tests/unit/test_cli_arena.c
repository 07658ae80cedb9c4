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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(parses_what_malloc_parses),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
