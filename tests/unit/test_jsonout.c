/* gw_json_compact must write what json_dumps writes, byte for byte: every reply and event
 * goes through it, and a client must see no difference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jsonout.h"

static void check_same(const json_t *v, int precision) {
        size_t flags = JSON_COMPACT | JSON_ENCODE_ANY | (precision ? JSON_REAL_PRECISION(precision) : 0);
        char *want = json_dumps(v, flags);
        size_t len = 0;
        char *got = gw_json_compact(v, precision, &len);
        assert_non_null(want);
        assert_non_null(got);
        if (strcmp(want, got) || len != strlen(want))
                fail_msg("precision %d\n jansson: %s\n ours:    %s", precision, want, got);
        free(want);
        free(got);
}

static void literals(void **state) {
        (void) state;
        const char *texts[] = { "{}",
                                "[]",
                                "[null,true,false]",
                                "{\"a\":{\"b\":[1,-2,0]}}",
                                "\"\"",
                                "[9223372036854775807,-9223372036854775808]",
                                "{\"\":\"\"}" };
        for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
                json_t *v = json_loads(texts[i], JSON_DECODE_ANY, NULL);
                assert_non_null(v);
                check_same(v, 0);
                json_decref(v);
        }
}

static void strings_escaped(void **state) {
        (void) state;
        char all[128];
        for (int c = 0; c < 128; c++)
                all[c] = (char) c;
        json_t *o = json_object();
        json_object_set_new(o, "ascii, NUL included", json_stringn(all, sizeof all));
        json_object_set_new(o, "utf-8", json_string("ü € 😀 /slash/ \"q\" \\"));
        json_object_setn_new(o, "key\n\x01\"with\0nul", 14, json_string("v"));
        check_same(o, 0);
        json_decref(o);
}

static void reals(void **state) {
        (void) state;
        const double values[] = { 0.0,
                                  -0.0,
                                  1.0,
                                  -1.0,
                                  0.5,
                                  1e20,
                                  1e21,
                                  1e-7,
                                  1e-5,
                                  123456789012345678.0,
                                  1763769700.250001,
                                  DBL_MAX,
                                  DBL_MIN,
                                  4.9e-324,
                                  1e100,
                                  1e-100,
                                  3.14159,
                                  1.0 / 3,
                                  2e15,
                                  1e16,
                                  1e17 };
        const int precisions[] = { 0, 1, 7, 17, 31 };
        for (size_t p = 0; p < sizeof precisions / sizeof *precisions; p++)
                for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
                        json_t *v = json_real(values[i]);
                        check_same(v, precisions[p]);
                        json_decref(v);
                }
}

/* Random values: every type, nested, with the keys in insertion order jansson keeps. */
static json_t *random_value(unsigned *seed, int depth) {
        int kind = rand_r(seed) % (depth > 4 ? 6 : 8);
        switch (kind) {
        case 0:
                return json_null();
        case 1:
                return json_boolean(rand_r(seed) & 1);
        case 2:
                return json_integer((json_int_t) (((uint64_t) rand_r(seed) << 33) ^ ((uint64_t) rand_r(seed) << 2)) *
                                    (rand_r(seed) & 1 ? 1 : -1) / (rand_r(seed) % 1000 + 1));
        case 3: {
                uint64_t bits =
                        ((uint64_t) rand_r(seed) << 40) ^ ((uint64_t) rand_r(seed) << 20) ^ (uint64_t) rand_r(seed);
                double d;
                memcpy(&d, &bits, sizeof d);
                return json_real(isfinite(d) ? d : (double) rand_r(seed) / 7.0);
        }
        case 4:
        case 5: {
                char s[24];
                size_t n = (size_t) (rand_r(seed) % sizeof s);
                for (size_t i = 0; i < n; i++)
                        s[i] = (char) (rand_r(seed) % 128); /* ASCII: always valid UTF-8 */
                return json_stringn(s, n);
        }
        case 6: {
                json_t *a = json_array();
                for (int i = rand_r(seed) % 5; i > 0; i--)
                        json_array_append_new(a, random_value(seed, depth + 1));
                return a;
        }
        default: {
                json_t *o = json_object();
                for (int i = rand_r(seed) % 6; i > 0; i--) {
                        char key[8];
                        snprintf(key, sizeof key, "k%d", rand_r(seed) % 50);
                        json_object_set_new(o, key, random_value(seed, depth + 1));
                }
                return o;
        }
        }
}

static void random_values(void **state) {
        (void) state;
        unsigned seed = 20261127;
        for (int i = 0; i < 20000; i++) {
                json_t *v = random_value(&seed, 0);
                check_same(v, i % 3 ? 0 : 1 + i % 31);
                json_decref(v);
        }
}

static void too_deep_is_refused(void **state) {
        (void) state;
        json_t *top = json_array(), *a = top;
        for (int i = 0; i < 2100; i++) {
                json_t *b = json_array();
                json_array_append_new(a, b);
                a = b;
        }
        assert_null(gw_json_compact(top, 0, NULL));
        assert_null(gw_json_compact(NULL, 0, NULL));
        json_decref(top);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(literals),      cmocka_unit_test(strings_escaped),     cmocka_unit_test(reals),
                cmocka_unit_test(random_values), cmocka_unit_test(too_deep_is_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
