#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <stdio.h>

#include "base/text.h"

static void check(const char *in, const char *want) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", in);
        size_t n = gw_text_neutralize(buf);
        assert_string_equal(buf, want);
        assert_int_equal(n, strlen(want));
}

static void neutralize_controls(void **state) {
        (void) state;
        check("plain name-1.0_x", "plain name-1.0_x");
        check("", "");
        check("\x1b[31mred\x1b[0m", "?[31mred?[0m");
        check("a\tb\nc\rd\x7f", "a?b?c?d?");
        check("\xc2\x9b"
              "2J",
              "?2J"); /* C1 CSI, as UTF-8 */
        check("\x9b"
              "2J",
              "?2J"); /* a lone C1 byte: not UTF-8 */
        check("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac"); /* text stays */
        check("\xf0\x9f\x98\x80 ok", "\xf0\x9f\x98\x80 ok");
        check("\xc0\xaf", "??"); /* overlong '/' */
        check("\xed\xa0\x80", "???"); /* a surrogate */
        check("cut \xe2\x80", "cut ??");
}

static void neutralize_bidi(void **state) {
        (void) state;
        check("evil\xe2\x80\xaetxt.exe", "evil?txt.exe"); /* U+202E */
        check("\xe2\x80\x8e\xe2\x80\x8f", "??"); /* U+200E, U+200F */
        check("\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad", "????"); /* U+202A-D */
        check("\xe2\x81\xa6x\xe2\x81\xa7y\xe2\x81\xa8z\xe2\x81\xa9", "?x?y?z?"); /* U+2066-9 */
        check("\xd8\x9c", "?"); /* U+061C */
        check("\xe2\x80\x94 \xe2\x80\xaf", "\xe2\x80\x94 \xe2\x80\xaf"); /* em dash, U+202F stay */
}

static void private_parts(void **state) {
        (void) state;
        char w[64], line[128];
        gw_text_private_wrap(w, sizeof w, "api_key sk-123");
        snprintf(line, sizeof line, "user_error: %s; gave up", w);
        assert_true(gw_text_has_private(line));
        char *o = gw_text_private_render(line, true, "hidden");
        assert_string_equal(o, "user_error: api_key sk-123; gave up");
        free(o);
        o = gw_text_private_render(line, false, "exit 1 (hidden)");
        assert_string_equal(o, "user_error: exit 1 (hidden); gave up");
        free(o);
        o = gw_text_private_render(line, false, NULL);
        assert_string_equal(o, "user_error: ; gave up");
        free(o);
        /* cut short: the part runs to the end */
        o = gw_text_private_render("x \x1esecret", false, "?");
        assert_string_equal(o, "x ?");
        free(o);
        /* markers inside the quoted text cannot end it early */
        gw_text_private_wrap(w, sizeof w,
                             "a\x1f"
                             "b\x1e"
                             "c");
        assert_string_equal(w, "\x1e"
                               "a?b?c\x1f");
        /* cut on a character boundary */
        gw_text_private_wrap(w, 6, "ab\xc3\xa9z");
        assert_string_equal(w, "\x1e"
                               "ab\x1f");
        gw_text_private_wrap(w, 2, "ab");
        assert_string_equal(w, "");
        assert_false(gw_text_has_private("plain"));
        assert_true(gw_text_has_private("stray \x1f close"));
        o = gw_text_private_render(NULL, false, "x");
        assert_string_equal(o, "");
        free(o);
        o = gw_text_private_render("stray \x1f close", false, "x");
        assert_string_equal(o, "stray  close");
        free(o);
}

/* A caller that gave no buffer gets nothing written; one too small gets the text cut. */
static void say_into_optional_buffer(void **state) {
        (void) state;
        char buf[8] = "xxxxxxx";
        gw_say(NULL, 8, "%s", "ignored");
        gw_say(buf, 0, "%s", "ignored");
        assert_string_equal(buf, "xxxxxxx");
        gw_say(buf, sizeof buf, "job %d", 17);
        assert_string_equal(buf, "job 17");
        gw_say(buf, sizeof buf, "%s", "far too long");
        assert_string_equal(buf, "far too");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(neutralize_controls),
                cmocka_unit_test(neutralize_bidi),
                cmocka_unit_test(private_parts),
                cmocka_unit_test(say_into_optional_buffer),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
