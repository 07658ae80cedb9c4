/* The frames of an interactive session (base/ttyframe.h): encoded by the client, decoded by the
 * supervisor whatever the pieces the socket hands them over in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>

#include "base/ttyframe.h"

static void feed(struct gw_ttyframe_reader *r, const uint8_t *p, size_t n) {
        size_t room;
        uint8_t *at = gw_ttyframe_space(r, &room);
        assert_true(room >= n);
        memcpy(at, p, n);
        gw_ttyframe_filled(r, n);
}

static void encode(void **state) {
        (void) state;
        uint8_t out[GW_TTYFRAME_DATA_MAX + 3];
        assert_int_equal(gw_ttyframe_data(out, "ls\r", 3), 6);
        assert_memory_equal(out, "d\0\3ls\r", 6);
        assert_int_equal(gw_ttyframe_data(out, "", 0), 0);
        assert_int_equal(gw_ttyframe_data(out, out, GW_TTYFRAME_DATA_MAX + 1), 0);
        assert_int_equal(gw_ttyframe_winsize(out, 50, 300), 7);
        assert_memory_equal(out, "w\0\4\0\x32\x01\x2c", 7);
        gw_ttyframe_winsize(out, 70000, 1);
        assert_memory_equal(out + 3, "\xff\xff\0\1", 4);
}

/* A data frame, a window size and another data frame, fed one byte at a time: each comes out
 * once it is whole, and not before. */
static void decode_bytewise(void **state) {
        (void) state;
        uint8_t wire[64];
        size_t n = gw_ttyframe_data(wire, "echo\r", 5);
        n += gw_ttyframe_winsize(wire + n, 24, 80);
        n += gw_ttyframe_data(wire + n, "\3", 1);
        static struct gw_ttyframe_reader r;
        struct gw_ttyframe f;
        int got = 0;
        for (size_t i = 0; i < n; i++) {
                feed(&r, wire + i, 1);
                int k;
                while ((k = gw_ttyframe_next(&r, &f)) == 1) {
                        if (got == 0) {
                                assert_int_equal(i, 7);
                                assert_int_equal(f.type, GW_TTYFRAME_DATA);
                                assert_int_equal(f.len, 5);
                                assert_memory_equal(f.data, "echo\r", 5);
                        } else if (got == 1) {
                                assert_int_equal(i, 14);
                                assert_int_equal(f.type, GW_TTYFRAME_WINSIZE);
                                assert_int_equal(f.rows, 24);
                                assert_int_equal(f.cols, 80);
                        } else {
                                assert_int_equal(f.type, GW_TTYFRAME_DATA);
                                assert_int_equal(f.len, 1);
                                assert_int_equal(f.data[0], 3);
                        }
                        got++;
                }
                assert_int_equal(k, 0);
        }
        assert_int_equal(got, 3);
}

/* An unknown kind is skipped whole (a later client may send more); a data frame of length 0
 * or over the maximum, or a window size of the wrong length, is malformed. */
static void decode_unknown_and_bad(void **state) {
        (void) state;
        static struct gw_ttyframe_reader r;
        struct gw_ttyframe f;
        feed(&r,
             (const uint8_t *) "x\0\2ab"
                               "d\0\1z",
             9);
        assert_int_equal(gw_ttyframe_next(&r, &f), 1);
        assert_int_equal(f.type, GW_TTYFRAME_DATA);
        assert_int_equal(f.data[0], 'z');
        assert_int_equal(gw_ttyframe_next(&r, &f), 0);

        static struct gw_ttyframe_reader z, big, w;
        feed(&z, (const uint8_t *) "d\0\0", 3);
        assert_int_equal(gw_ttyframe_next(&z, &f), -EBADMSG);
        feed(&big, (const uint8_t *) "d\x10\x01", 3);
        assert_int_equal(gw_ttyframe_next(&big, &f), -EBADMSG);
        feed(&w, (const uint8_t *) "w\0\3abc", 6);
        assert_int_equal(gw_ttyframe_next(&w, &f), -EBADMSG);
}

/* The buffer holds the longest frame there is: an unknown one of 65535 bytes, taken in pieces,
 * then skipped. */
static void decode_longest(void **state) {
        (void) state;
        static struct gw_ttyframe_reader r;
        static uint8_t wire[GW_TTYFRAME_MAX + 4];
        wire[0] = 'q';
        wire[1] = wire[2] = 0xff;
        memcpy(wire + GW_TTYFRAME_MAX, "d\0\1!", 4);
        struct gw_ttyframe f;
        size_t off = 0;
        while (off < sizeof wire) {
                size_t room, take;
                uint8_t *at = gw_ttyframe_space(&r, &room);
                take = sizeof wire - off < 1000 ? sizeof wire - off : 1000;
                take = take < room ? take : room;
                memcpy(at, wire + off, take);
                gw_ttyframe_filled(&r, take);
                off += take;
                if (gw_ttyframe_next(&r, &f) == 1)
                        break;
        }
        assert_int_equal(f.type, GW_TTYFRAME_DATA);
        assert_int_equal(f.data[0], '!');
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(encode),
                cmocka_unit_test(decode_bytewise),
                cmocka_unit_test(decode_unknown_and_bad),
                cmocka_unit_test(decode_longest),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
