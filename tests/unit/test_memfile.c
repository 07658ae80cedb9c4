/* src/base/memfile.c: a FILE into memory reads back what open_memstream would hold. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/memfile.h"

/* What n lines of fprintf, fputc and fwrite leave in f. */
static void write_lines(FILE *f, size_t n) {
        for (size_t i = 0; i < n; i++) {
                fprintf(f, "[%zu,\"job-%zu\",", i, i);
                fwrite("null", 1, 4, f);
                fputc(']', f);
        }
}

static void same_as_memstream(void **state) {
        (void) state;
        /* Nothing, less than the FILE's buffer, and several times the first block. */
        static const size_t sizes[] = { 0, 1, 100, 5000, 300000 };
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
                char *want = NULL, *got = NULL;
                size_t want_len = 0, got_len = 0;
                FILE *a = open_memstream(&want, &want_len), *b = gw_memfile_open(&got, &got_len);
                assert_non_null(a);
                assert_non_null(b);
                write_lines(a, sizes[k]);
                write_lines(b, sizes[k]);
                assert_int_equal(fclose(a), 0);
                assert_int_equal(fclose(b), 0);
                assert_non_null(got);
                assert_int_equal(got_len, want_len);
                assert_memory_equal(got, want, want_len + 1); /* the NUL too */
                free(want);
                free(got);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(same_as_memstream),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
