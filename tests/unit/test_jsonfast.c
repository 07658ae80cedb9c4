/* The CLI's fast JSON reader gives the values json_loadb gives, or NULL where it leaves the
 * text to jansson (which then reads it, or says what is wrong with it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include "cli/jsonfast.h"

/* Same as jansson when both read it; NULL only where expected. */
static void check(const char *text, bool fast) {
        json_t *want = json_loadb(text, strlen(text), 0, NULL);
        json_t *got = cli_json_load_fast(text, strlen(text));
        if (fast && !got)
                fail_msg("left to jansson: %s", text);
        if (!fast && got)
                fail_msg("read, though jansson should: %s", text);
        if (got && !json_equal(want, got))
                fail_msg("differs from jansson: %s", text);
        /* json_equal takes 1 and 1.0 for different values: so does this reader */
        if (got && want && json_typeof(got) != json_typeof(want))
                fail_msg("type differs from jansson: %s", text);
        json_decref(want);
        json_decref(got);
}

static void same_as_jansson(void **state) {
        (void) state;
        check("{\"fields\":[\"id\",\"name\"],\"rows\":[[1,\"a\"],[2,null]]}", true);
        check(" { \"a\" : [ 1 , -2 , 0 , 3.5 , -0.25 , 1e3 , 2E-2 , 1795776229.0541041 ] } ", true);
        check("{\"a\":true,\"b\":false,\"c\":null,\"d\":{},\"e\":[],\"f\":[[[]]]}", true);
        check("{\"esc\":\"q\\\"b\\\\s\\/n\\nt\\tr\\rb\\bf\\f\"}", true);
        check("{\"u\":\"\xc3\xbc b\",\"k\":\"x\"}", true);
        check("{\"a\":1,\"a\":2}", true);
        check("[9223372036854775807,-9223372036854775808]", true);
        check("{\"a\":\"\\u00fc\"}", false); /* \u: jansson's */
        check("[9223372036854775808]", false); /* too big: jansson says so */
        check("[1e999]", false);
        check("{\"a\":\"\xff\"}", false); /* not UTF-8 */
        check("{\"a\":\"tab\there\"}", false); /* a raw control character */
        check("[01]", false);
        check("[1.]", false);
        check("[.5]", false);
        check("[1,]", false);
        check("{\"a\":1,}", false);
        check("{\"a\" 1}", false);
        check("[\"open", false);
        check("[1] x", false);
        check("", false);
        check("nul", false);
        check("[\"a\\", false);
        check("[\"a\\x\"]", false);
}

static void deep(void **state) {
        (void) state;
        char buf[400];
        memset(buf, '[', 200);
        memset(buf + 200, ']', 200);
        assert_null(cli_json_load_fast(buf, sizeof buf)); /* left to jansson */
}

/* Read a row at a time, a rows reply gives the rows jansson reads in it, each again at its
 * place; what is not such a reply, or not JSON, is said to be so. */
static void rows_one_at_a_time(void **state) {
        (void) state;
        static const char *const good[] = {
                "{\"fields\":[\"id\",\"name\"],\"rows\":[[1,\"a\"],[2,null],[3,\"\\u00fc\"]]}",
                " { \"fields\" : [ ] , \"rows\" : [ ] } ",
                "{\"fields\":[\"x\"],\"rows\":[[{\"code\":\"Held\",\"text\":\"held\"}]]}\n",
        };
        for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
                json_t *want = json_loads(good[i], 0, NULL);
                assert_non_null(want);
                struct cli_json_rows r;
                assert_int_equal(cli_json_rows_open(&r, good[i], strlen(good[i])), 0);
                assert_true(json_equal(r.fields, json_object_get(want, "fields")));
                size_t n = 0, at;
                json_t *row;
                int k;
                while ((k = cli_json_rows_next(&r, &row, &at)) > 0) {
                        const json_t *w = json_array_get(json_object_get(want, "rows"), n++);
                        assert_true(json_equal(row, w));
                        json_decref(row);
                        row = cli_json_rows_at(&r, at);
                        assert_true(json_equal(row, w));
                        json_decref(row);
                }
                assert_int_equal(k, 0);
                assert_int_equal(n, json_array_size(json_object_get(want, "rows")));
                assert_int_equal(cli_json_rows_next(&r, &row, &at), 0);
                cli_json_rows_done(&r);
                json_decref(want);
        }
        static const char *const other[] = {
                "{\"jobs\":[]}", "{\"rows\":[],\"fields\":[]}", "{\"fields\":{},\"rows\":[]}", "[]", "",
        };
        for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
                struct cli_json_rows r;
                assert_int_equal(cli_json_rows_open(&r, other[i], strlen(other[i])), -EBADMSG);
        }
        static const char *const broken[] = {
                "{\"fields\":[],\"rows\":[[1],[2}", "{\"fields\":[],\"rows\":[[1][2]]}",
                "{\"fields\":[],\"rows\":[[1]]",    "{\"fields\":[],\"rows\":[[1]]} x",
                "{\"fields\":[],\"rows\":[[1],]}",
        };
        for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
                struct cli_json_rows r;
                assert_int_equal(cli_json_rows_open(&r, broken[i], strlen(broken[i])), 0);
                json_t *row;
                size_t at;
                int k;
                while ((k = cli_json_rows_next(&r, &row, &at)) > 0)
                        json_decref(row);
                if (k != -EBADMSG)
                        fail_msg("read to its end: %s", broken[i]);
                cli_json_rows_done(&r);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(same_as_jansson),
                cmocka_unit_test(deep),
                cmocka_unit_test(rows_one_at_a_time),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
