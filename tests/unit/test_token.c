#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"
#include "core/token.h"

static void hex_of(const char *s, size_t n, char out[GW_SHA256_HEX_SIZE]) { gw_sha256_hex(s, n, out); }

/* FIPS 180-2 appendix B and the usual extra vectors. */
static void sha256_vectors(void **state) {
        static const struct {
                const char *msg, *hex;
        } v[] = {
                { "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
                { "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
                { "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
                { "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
                  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1" },
        };
        char hex[GW_SHA256_HEX_SIZE];

        (void) state;
        for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
                hex_of(v[i].msg, strlen(v[i].msg), hex);
                assert_string_equal(hex, v[i].hex);
        }
}

static void sha256_million_a(void **state) {
        struct gw_sha256 c;
        uint8_t d[GW_SHA256_DIGEST_SIZE];
        char chunk[1000], hex[GW_SHA256_HEX_SIZE];

        (void) state;
        memset(chunk, 'a', sizeof(chunk));
        gw_sha256_init(&c);
        for (int i = 0; i < 1000; i++)
                gw_sha256_update(&c, chunk, sizeof(chunk));
        gw_sha256_final(&c, d);
        gw_hex_encode(d, sizeof(d), hex);
        assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* Feeding in odd pieces gives the same digest as one call, around every block edge. */
static void sha256_streaming(void **state) {
        char msg[300], one[GW_SHA256_HEX_SIZE], two[GW_SHA256_HEX_SIZE];
        uint8_t d[GW_SHA256_DIGEST_SIZE];

        (void) state;
        for (size_t i = 0; i < sizeof(msg); i++)
                msg[i] = (char) (i * 7 + 3);
        for (size_t len = 0; len <= sizeof(msg); len += 1) {
                struct gw_sha256 c;
                gw_sha256_hex(msg, len, one);
                gw_sha256_init(&c);
                for (size_t off = 0, step = 1; off < len; off += step, step = step % 67 + 13)
                        gw_sha256_update(&c, msg + off, step < len - off ? step : len - off);
                gw_sha256_final(&c, d);
                gw_hex_encode(d, sizeof(d), two);
                assert_string_equal(one, two);
        }
}

static void token_format_and_hash(void **state) {
        uint8_t rnd[GW_TOKEN_RANDOM_BYTES];
        char tok[GW_TOKEN_SIZE], h[GW_TOKEN_HASH_SIZE], want[GW_SHA256_HEX_SIZE];

        (void) state;
        for (int i = 0; i < GW_TOKEN_RANDOM_BYTES; i++)
                rnd[i] = (uint8_t) (i * 17 + 1);
        gw_token_format(rnd, tok);
        assert_int_equal(strlen(tok), 67);
        assert_string_equal(tok, "gw_0112233445566778899aabbccddeef00112233445566778899aabbccddeeff10");
        assert_true(gw_token_is_wellformed(tok));

        assert_int_equal(gw_token_hash(tok, h), 0);
        gw_sha256_hex(tok, strlen(tok), want);
        assert_string_equal(h, want);
        assert_true(gw_token_matches(tok, h));

        /* One bit off, in the token or in the stored hash: no match. */
        tok[10] = tok[10] == '0' ? '1' : '0';
        assert_false(gw_token_matches(tok, h));
        tok[10] = tok[10] == '0' ? '1' : '0';
        h[63] = h[63] == '0' ? '1' : '0';
        assert_false(gw_token_matches(tok, h));
}

static void token_malformed(void **state) {
        static const char *const bad[] = {
                "",
                "gw_",
                "gw_abc",
                "GW_0112233445566778899aabbccddeeff00112233445566778899aabbccddeeff0",
                "gw_0112233445566778899AABBCCDDEEFF00112233445566778899aabbccddeeff0",
                "gw_0112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
                "gw_0112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00",
                "gw_0112233445566778899aabbccddeeff00112233445566778899aabbccddeefg0",
                "xx_0112233445566778899aabbccddeeff00112233445566778899aabbccddeeff0",
        };
        char h[GW_TOKEN_HASH_SIZE] = "untouched";

        (void) state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_false(gw_token_is_wellformed(bad[i]));
                assert_int_equal(gw_token_hash(bad[i], h), -EINVAL);
                assert_string_equal(h, "untouched");
                assert_false(
                        gw_token_matches(bad[i], "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
        }
        assert_false(gw_token_is_wellformed(NULL));
        assert_false(gw_token_matches("gw_0112233445566778899aabbccddeeff00112233445566778899aabbccddeeff0", "short"));
        assert_false(gw_token_matches("gw_0112233445566778899aabbccddeeff00112233445566778899aabbccddeeff0", NULL));
}

static void memeq_ct(void **state) {
        (void) state;
        assert_true(gw_memeq_ct("abcd", "abcd", 4));
        assert_false(gw_memeq_ct("abcd", "abce", 4));
        assert_false(gw_memeq_ct("xbcd", "abcd", 4));
        assert_true(gw_memeq_ct("a", "b", 0));
}

static void bearer(void **state) {
        const char *tok = "gw_0112233445566778899aabbccddeeff00112233445566778899aabbccddeeff0";
        char hdr[128];
        const char *p = NULL;
        size_t n = 0;

        (void) state;
        (void) snprintf(hdr, sizeof(hdr), "Bearer %s", tok);
        assert_int_equal(gw_token_from_bearer(hdr, &p, &n), 0);
        assert_int_equal(n, GW_TOKEN_LEN);
        assert_memory_equal(p, tok, n);
        (void) snprintf(hdr, sizeof(hdr), "  bearer\t%s  ", tok);
        assert_int_equal(gw_token_from_bearer(hdr, &p, &n), 0);
        assert_memory_equal(p, tok, GW_TOKEN_LEN);

        assert_int_equal(gw_token_from_bearer("Basic dXNlcjpwYXNz", &p, &n), -ENOENT);
        assert_int_equal(gw_token_from_bearer("Bearer", &p, &n), -ENOENT);
        assert_int_equal(gw_token_from_bearer("Bearerx gw_00", &p, &n), -ENOENT);
        assert_int_equal(gw_token_from_bearer("Bearer gw_00", &p, &n), -EINVAL);
        (void) snprintf(hdr, sizeof(hdr), "Bearer %s extra", tok);
        assert_int_equal(gw_token_from_bearer(hdr, &p, &n), -EINVAL);
}

/* --expires: units required, zero / negative / too long / garbage refused, "never" is 0. */
static void lifetime(void **state) {
        static const struct {
                const char *in;
                int r;
                gw_usec_t usec;
        } v[] = {
                { "30d", 0, (gw_usec_t) 30 * 24 * 3600 * GW_USEC_PER_SEC },
                { "12h", 0, (gw_usec_t) 12 * 3600 * GW_USEC_PER_SEC },
                { "90m", 0, (gw_usec_t) 90 * 60 * GW_USEC_PER_SEC },
                { "2s", 0, 2 * GW_USEC_PER_SEC },
                { "1h30m", 0, (gw_usec_t) 5400 * GW_USEC_PER_SEC },
                { "3650d", 0, GW_TOKEN_LIFETIME_MAX },
                { "never", 0, 0 },
                { "3651d", -EINVAL, 0 },
                { "30", -EINVAL, 0 },
                { "0d", -EINVAL, 0 },
                { "-1d", -EINVAL, 0 },
                { "", -EINVAL, 0 },
                { "soon", -EINVAL, 0 },
                { "30x", -EINVAL, 0 },
                { "99999999999999999999d", -EINVAL, 0 },
        };
        (void) state;
        for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
                gw_usec_t got = -1;
                char msg[GW_TOKEN_MSG_SIZE] = "";
                int r = gw_token_parse_lifetime(v[i].in, &got, msg, sizeof(msg));
                assert_int_equal(r, v[i].r);
                if (r == 0)
                        assert_int_equal(got, v[i].usec);
                else {
                        assert_int_equal(got, -1); /* untouched on failure */
                        assert_non_null(strstr(msg, v[i].in));
                }
        }
        assert_int_equal(gw_token_parse_lifetime(NULL, &(gw_usec_t){ 0 }, NULL, 0), -EINVAL);
}

static void expiry(void **state) {
        (void) state;
        assert_false(gw_token_expired(0, INT64_MAX)); /* never */
        assert_false(gw_token_expired(1000, 999));
        assert_true(gw_token_expired(1000, 1000)); /* at its expiry: no longer */
        assert_true(gw_token_expired(1000, 5000));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(sha256_vectors),   cmocka_unit_test(sha256_million_a),
                cmocka_unit_test(sha256_streaming), cmocka_unit_test(token_format_and_hash),
                cmocka_unit_test(token_malformed),  cmocka_unit_test(memeq_ct),
                cmocka_unit_test(bearer),           cmocka_unit_test(lifetime),
                cmocka_unit_test(expiry),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
