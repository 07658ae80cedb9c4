#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/ckpt.h"

/* ---- a small ZIP writer: stored entries, correct headers and CRC-32 ---- */

static uint32_t crc32_of(const uint8_t *p, size_t n) {
        uint32_t c = 0xffffffffu;

        for (size_t i = 0; i < n; i++) {
                c ^= p[i];
                for (int k = 0; k < 8; k++)
                        c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
        }
        return ~c;
}

struct zbuf {
        uint8_t *p;
        size_t n, cap;
};

static void put(struct zbuf *b, const void *src, size_t n) {
        assert_true(b->n + n <= b->cap);
        memcpy(b->p + b->n, src, n);
        b->n += n;
}
static void put16(struct zbuf *b, uint16_t v) { put(b, (uint8_t[]){(uint8_t) v, (uint8_t) (v >> 8)}, 2); }
static void put32(struct zbuf *b, uint32_t v) {
        put16(b, (uint16_t) v);
        put16(b, (uint16_t) (v >> 16));
}
static void put64(struct zbuf *b, uint64_t v) {
        put32(b, (uint32_t) v);
        put32(b, (uint32_t) (v >> 32));
}

struct entry {
        char name[40];
        const uint8_t *data;
        size_t len;
};

enum zip_flavour {
        ZIP_PLAIN,          /* Python's zipfile for small archives */
        ZIP_PYTORCH,        /* miniz with MZ_ZIP_FLAG_WRITE_ZIP64 and 64-byte data alignment */
        ZIP_Z64_SATURATED,  /* zip64 end records, saturated EOCD, zip64 extra fields for offsets */
};

/* Writes an archive of the entries into out; returns its length. */
static size_t build_zip(uint8_t *out, size_t cap, const struct entry *e, size_t n, enum zip_flavour f,
                        const uint8_t *comment, size_t comment_len) {
        struct zbuf b = {.p = out, .cap = cap};
        uint64_t offs[4096], cd_off, cd_size;
        bool z64 = f != ZIP_PLAIN;

        assert_true(n <= 4096);
        for (size_t i = 0; i < n; i++) {
                size_t nlen = strlen(e[i].name), pad = 0;

                offs[i] = b.n;
                if (f == ZIP_PYTORCH) {
                        /* PyTorch pads the local extra field ("FB") so the data starts on 64. */
                        size_t start = b.n + 30 + nlen + 4;
                        pad = (64 - start % 64) % 64;
                }
                put32(&b, 0x04034b50);
                put16(&b, z64 ? 45 : 20);
                put16(&b, 0);
                put16(&b, 0); /* stored */
                put16(&b, 0x6000);
                put16(&b, 0x5821);
                put32(&b, crc32_of(e[i].data, e[i].len));
                put32(&b, (uint32_t) e[i].len);
                put32(&b, (uint32_t) e[i].len);
                put16(&b, (uint16_t) nlen);
                put16(&b, (uint16_t) (f == ZIP_PYTORCH ? 4 + pad : 0));
                put(&b, e[i].name, nlen);
                if (f == ZIP_PYTORCH) {
                        put16(&b, 0x4246);
                        put16(&b, (uint16_t) pad);
                        for (size_t k = 0; k < pad; k++)
                                put(&b, "Z", 1);
                        assert_int_equal(b.n % 64, 0);
                }
                put(&b, e[i].data, e[i].len);
        }
        cd_off = b.n;
        for (size_t i = 0; i < n; i++) {
                size_t nlen = strlen(e[i].name);
                bool sat = f == ZIP_Z64_SATURATED;

                put32(&b, 0x02014b50);
                put16(&b, 0x031e);
                put16(&b, z64 ? 45 : 20);
                put16(&b, 0);
                put16(&b, 0);
                put16(&b, 0x6000);
                put16(&b, 0x5821);
                put32(&b, crc32_of(e[i].data, e[i].len));
                put32(&b, (uint32_t) e[i].len);
                put32(&b, (uint32_t) e[i].len);
                put16(&b, (uint16_t) nlen);
                put16(&b, sat ? 12 : 0);
                put16(&b, 0);
                put16(&b, 0);
                put16(&b, 0);
                put32(&b, 0x81a40000u);
                put32(&b, sat ? 0xffffffffu : (uint32_t) offs[i]);
                put(&b, e[i].name, nlen);
                if (sat) {
                        put16(&b, 0x0001);
                        put16(&b, 8);
                        put64(&b, offs[i]);
                }
        }
        cd_size = b.n - cd_off;
        if (z64) {
                uint64_t z64_off = b.n;
                bool sat = f == ZIP_Z64_SATURATED;

                put32(&b, 0x06064b50);
                put64(&b, 44);
                put16(&b, 45);
                put16(&b, 45);
                put32(&b, 0);
                put32(&b, 0);
                put64(&b, n);
                put64(&b, n);
                put64(&b, cd_size);
                put64(&b, cd_off);
                put32(&b, 0x07064b50);
                put32(&b, 0);
                put64(&b, z64_off);
                put32(&b, 1);
                put32(&b, 0x06054b50);
                put16(&b, 0);
                put16(&b, 0);
                put16(&b, sat ? 0xffff : (uint16_t) n);
                put16(&b, sat ? 0xffff : (uint16_t) n);
                put32(&b, sat ? 0xffffffffu : (uint32_t) cd_size);
                put32(&b, sat ? 0xffffffffu : (uint32_t) cd_off);
        } else {
                put32(&b, 0x06054b50);
                put16(&b, 0);
                put16(&b, 0);
                put16(&b, (uint16_t) n);
                put16(&b, (uint16_t) n);
                put32(&b, (uint32_t) cd_size);
                put32(&b, (uint32_t) cd_off);
        }
        put16(&b, (uint16_t) comment_len);
        if (comment_len)
                put(&b, comment, comment_len);
        return b.n;
}

/* What a torch.save() of a small state dict holds. */
static size_t pytorch_like(uint8_t *out, size_t cap, enum zip_flavour f, const uint8_t *comment, size_t clen) {
        static uint8_t pkl[300], tensor[1024];
        struct entry e[] = {
                {"archive/data.pkl", pkl, sizeof(pkl)},
                {"archive/byteorder", (const uint8_t *) "little", 6},
                {"archive/data/0", tensor, sizeof(tensor)},
                {"archive/version", (const uint8_t *) "3\n", 2},
        };

        pkl[0] = 0x80;
        pkl[1] = 2;
        for (size_t i = 2; i < sizeof(pkl); i++)
                pkl[i] = (uint8_t) (i * 7);
        for (size_t i = 0; i < sizeof(tensor); i++)
                tensor[i] = (uint8_t) (i * 13 + 1);
        return build_zip(out, cap, e, 4, f, comment, clen);
}

/* Checks a file whose content is file[0..size) the way the daemon would: its last
 * GW_CKPT_TAIL_LEN bytes at most. */
static int check_file(const uint8_t *file, size_t size, char *why, size_t n) {
        size_t t = size < GW_CKPT_TAIL_LEN ? size : GW_CKPT_TAIL_LEN;
        return gw_ckpt_check(file + size - t, t, size, why, n);
}

static uint8_t file_a[400 * 1024], file_b[400 * 1024];

/* Every proper prefix (a write torn by a kill) is rejected; the whole file passes. */
static void every_prefix_rejected(const uint8_t *file, size_t size, size_t step) {
        char why[200];

        assert_true(check_file(file, size, why, sizeof(why)) >= 0);
        for (size_t len = 0; len < size; len += (len + 300 >= size ? 1 : step)) {
                int r = check_file(file, len, why, sizeof(why));
                if (r >= 0)
                        fail_msg("prefix of %zu/%zu bytes accepted: %s", len, size, why);
                assert_int_equal(r, -EBADMSG);
        }
}

static void flavours_complete_and_truncations_rejected(void **state) {
        const enum zip_flavour fl[] = {ZIP_PLAIN, ZIP_PYTORCH, ZIP_Z64_SATURATED};
        char why[200];

        for (size_t i = 0; i < sizeof(fl) / sizeof(fl[0]); i++) {
                size_t n = pytorch_like(file_a, sizeof(file_a), fl[i], NULL, 0);

                assert_int_equal(check_file(file_a, n, why, sizeof(why)), 0);
                assert_string_equal(why, "complete: 4 entries");
                every_prefix_rejected(file_a, n, 1);
        }
        /* The tail may also be the whole file, or just enough of it. */
        size_t n = pytorch_like(file_a, sizeof(file_a), ZIP_PYTORCH, NULL, 0);
        assert_int_equal(gw_ckpt_check(file_a, n, n, NULL, 0), 0);
}

static void with_a_comment(void **state) {
        static uint8_t comment[65535];
        char why[200];
        uint64_t want = 0;
        size_t n;

        n = pytorch_like(file_a, sizeof(file_a), ZIP_PLAIN, (const uint8_t *) "saved by gpuward tests", 22);
        assert_int_equal(check_file(file_a, n, why, sizeof(why)), 0);
        every_prefix_rejected(file_a, n, 1);

        /* The longest comment, with decoy end records inside it: the tail of exactly
         * GW_CKPT_TAIL_LEN bytes still finds the real one. */
        for (size_t i = 0; i < sizeof(comment); i++)
                comment[i] = (uint8_t) ('a' + i % 26);
        memcpy(comment + 100, "PK\x05\x06", 4);
        memcpy(comment + sizeof(comment) - 22, "PK\x05\x06", 4);
        n = pytorch_like(file_a, sizeof(file_a), ZIP_PYTORCH, comment, sizeof(comment));
        /* The comment fills the tail, so the central directory before it is not in it. */
        assert_int_equal(gw_ckpt_check(file_a + n - GW_CKPT_TAIL_LEN, GW_CKPT_TAIL_LEN, n, why, sizeof(why)), 1);
        assert_int_equal(gw_ckpt_tail_wanted(file_a + n - GW_CKPT_TAIL_LEN, GW_CKPT_TAIL_LEN, n, &want), 0);
        assert_int_equal(gw_ckpt_check(file_a + n - want, (size_t) want, n, why, sizeof(why)), 0);
        assert_string_equal(why, "complete: 4 entries");
        every_prefix_rejected(file_a, n, 61);
}

static void random_bytes_rejected(void **state) {
        uint64_t x = 0x9e3779b97f4a7c15u;
        char why[200];

        for (size_t i = 0; i < 100000; i++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                file_a[i] = (uint8_t) x;
        }
        assert_int_equal(check_file(file_a, 100000, why, sizeof(why)), -EBADMSG);
        assert_string_equal(why, "not a PyTorch zip archive (no zip end-of-central-directory record)");

        /* A planted end record with nonsense behind it. */
        memcpy(file_a + 100000 - 22, "PK\x05\x06\0\0\0\0", 8);
        file_a[100000 - 2] = file_a[100000 - 1] = 0;
        file_a[100000 - 12] = 1; /* entries on disk = total = 1 */
        file_a[100000 - 11] = 0;
        file_a[100000 - 14] = 1;
        file_a[100000 - 13] = 0;
        assert_int_equal(check_file(file_a, 100000, why, sizeof(why)), -EBADMSG);

        assert_int_equal(check_file(file_a, 0, why, sizeof(why)), -EBADMSG);
        assert_string_equal(why, "truncated: empty file");
        assert_int_equal(gw_ckpt_check((const uint8_t *) "PK", 2, 2, why, sizeof(why)), -EBADMSG);
        assert_string_equal(why, "not a PyTorch zip archive (no zip end-of-central-directory record)");
}

/* A complete file that is no zip is not called truncated; a zip cut before its end is. */
static void not_a_zip_is_not_truncated(void **state) {
        static const char text[] = "this is a text file saved as last.pt, complete and not a zip\n";
        char why[200];

        (void) state;
        assert_int_equal(gw_ckpt_check((const uint8_t *) text, sizeof(text) - 1, sizeof(text) - 1, why, sizeof(why)),
                         -EBADMSG);
        assert_string_equal(why, "not a PyTorch zip archive (no zip end-of-central-directory record)");

        size_t n = pytorch_like(file_a, sizeof(file_a), ZIP_PYTORCH, NULL, 0);
        assert_int_equal(check_file(file_a, n / 2, why, sizeof(why)), -EBADMSG);
        assert_string_equal(why, "truncated: a zip archive with no end-of-central-directory record");

        /* A big tensor cut mid-write: no header in the tail, but the file starts as a zip. */
        static uint8_t big[300 * 1024];
        memcpy(big, "PK\x03\x04", 4);
        for (size_t i = 4; i < sizeof(big); i++)
                big[i] = (uint8_t) (i * 7 + 1);
        const uint8_t *tail = big + sizeof(big) - GW_CKPT_TAIL_LEN;
        assert_int_equal(gw_ckpt_check(tail, GW_CKPT_TAIL_LEN, sizeof(big), why, sizeof(why)), -EBADMSG);
        assert_string_equal(why, "not a PyTorch zip archive (no zip end-of-central-directory record)");
        assert_int_equal(gw_ckpt_check_file(big, 4, tail, GW_CKPT_TAIL_LEN, sizeof(big), why, sizeof(why)),
                         -EBADMSG);
        assert_string_equal(why, "truncated: a zip archive with no end-of-central-directory record");
        /* Without a zip's first bytes, still not a zip; a complete zip passes as before. */
        assert_int_equal(gw_ckpt_check_file((const uint8_t *) "abcd", 4, tail, GW_CKPT_TAIL_LEN, sizeof(big), why,
                                            sizeof(why)),
                         -EBADMSG);
        assert_string_equal(why, "not a PyTorch zip archive (no zip end-of-central-directory record)");
        assert_int_equal(gw_ckpt_check_file(file_a, 4, file_a, n, n, why, sizeof(why)), 0);
}

static void le32_at(uint8_t *p, uint32_t v) {
        p[0] = (uint8_t) v;
        p[1] = (uint8_t) (v >> 8);
        p[2] = (uint8_t) (v >> 16);
        p[3] = (uint8_t) (v >> 24);
}

static void corrupt_end_records(void **state) {
        char why[200];
        size_t n = pytorch_like(file_b, sizeof(file_b), ZIP_PLAIN, NULL, 0);
        size_t eocd = n - 22, cd_off = file_b[eocd + 16] | (size_t) file_b[eocd + 17] << 8;

        /* The central directory said to lie beyond the end (a crash that lost the data). */
        memcpy(file_a, file_b, n);
        le32_at(file_a + eocd + 16, (uint32_t) n + 1000);
        assert_int_equal(check_file(file_a, n, why, sizeof(why)), -EBADMSG);
        assert_string_equal(why, "central directory points past the end of the file");

        memcpy(file_a, file_b, n);
        le32_at(file_a + eocd + 16, (uint32_t) cd_off - 1);
        assert_int_equal(check_file(file_a, n, why, sizeof(why)), -EBADMSG);
        assert_string_equal(why, "central directory does not end where the end record starts");

        /* An entry whose local header lies past the end of the file. */
        memcpy(file_a, file_b, n);
        le32_at(file_a + cd_off + 42, (uint32_t) n + 5);
        assert_int_equal(check_file(file_a, n, why, sizeof(why)), -EBADMSG);
        assert_string_equal(why, "entry 1 ('archive/data.pkl') points past the end of the file");

        /* ... or inside the central directory, or not on a local header. */
        memcpy(file_a, file_b, n);
        le32_at(file_a + cd_off + 42, (uint32_t) cd_off - 10);
        assert_int_equal(check_file(file_a, n, why, sizeof(why)), -EBADMSG);
        assert_string_equal(why, "entry 1 ('archive/data.pkl') overlaps the central directory");
        memcpy(file_a, file_b, n);
        le32_at(file_a + cd_off + 42, 8);
        assert_int_equal(check_file(file_a, n, why, sizeof(why)), -EBADMSG);
        assert_string_equal(why, "entry 1 ('archive/data.pkl'): no local header at offset 8");

        /* Wrong entry counts. */
        memcpy(file_a, file_b, n);
        file_a[eocd + 8] = file_a[eocd + 10] = 3;
        assert_int_equal(check_file(file_a, n, why, sizeof(why)), -EBADMSG);
        assert_string_equal(why, "central directory holds more than its entry count");
        memcpy(file_a, file_b, n);
        file_a[eocd + 8] = file_a[eocd + 10] = 5;
        assert_int_equal(check_file(file_a, n, why, sizeof(why)), -EBADMSG);
        assert_string_equal(why, "central directory entry 5 of 5 is missing");
        memcpy(file_a, file_b, n);
        file_a[eocd + 8] = 3;
        assert_int_equal(check_file(file_a, n, why, sizeof(why)), -EBADMSG);

        /* ZIP64: the record and the EOCD disagree, or the locator points nowhere. */
        n = pytorch_like(file_b, sizeof(file_b), ZIP_PYTORCH, NULL, 0);
        memcpy(file_a, file_b, n);
        file_a[n - 22 + 10] ^= 1;
        file_a[n - 22 + 8] ^= 1;
        assert_int_equal(check_file(file_a, n, why, sizeof(why)), -EBADMSG);
        assert_string_equal(why, "end-of-central-directory and zip64 end records disagree");
        memcpy(file_a, file_b, n);
        file_a[n - 22 - 20 + 8] ^= 4; /* the locator's record offset */
        assert_int_equal(check_file(file_a, n, why, sizeof(why)), -EBADMSG);
        memcpy(file_a, file_b, n);
        le32_at(file_a + n - 22 - 20 + 8, (uint32_t) n);
        assert_int_equal(check_file(file_a, n, why, sizeof(why)), -EBADMSG);
        assert_string_equal(why, "zip64 end record points past its locator");

        /* Saturated EOCD fields with no zip64 locator. */
        n = pytorch_like(file_b, sizeof(file_b), ZIP_PLAIN, NULL, 0);
        memcpy(file_a, file_b, n);
        le32_at(file_a + n - 22 + 16, 0xffffffffu);
        assert_int_equal(check_file(file_a, n, why, sizeof(why)), -EBADMSG);
        assert_string_equal(why, "zip64 archive without its end record locator");
}

static void large_central_directory(void **state) {
        static struct entry e[3000];
        static const uint8_t byte = 42;
        char why[200];
        uint64_t want = 0;
        size_t n, t;

        for (size_t i = 0; i < 3000; i++) {
                snprintf(e[i].name, sizeof(e[i].name), "archive/data/%zu", i);
                e[i].data = &byte;
                e[i].len = 1;
        }
        n = build_zip(file_a, sizeof(file_a), e, 3000, ZIP_PYTORCH, NULL, 0);
        t = GW_CKPT_TAIL_LEN;
        assert_true(n > t);

        /* The directory does not fit the tail: consistent, but not walked. */
        assert_int_equal(gw_ckpt_check(file_a + n - t, t, n, why, sizeof(why)), 1);
        assert_non_null(strstr(why, "3000 entries"));
        assert_int_equal(gw_ckpt_tail_wanted(file_a + n - t, t, n, &want), 0);
        assert_true(want > t && want < n);
        assert_int_equal(gw_ckpt_check(file_a + n - want, (size_t) want, n, why, sizeof(why)), 0);
        assert_string_equal(why, "complete: 3000 entries");

        /* Prefixes, torn anywhere, are still rejected from the usual tail. */
        for (size_t len = 0; len < n; len += len + 200 >= n ? 1 : 997)
                assert_int_equal(check_file(file_a, len, why, sizeof(why)), -EBADMSG);
        assert_int_equal(gw_ckpt_tail_wanted(file_a, 100, 100, &want), -EBADMSG);
}

static void arguments_and_ids(void **state) {
        char why[200], id[72];
        uint64_t want = 7;
        size_t n = pytorch_like(file_a, sizeof(file_a), ZIP_PLAIN, NULL, 0);

        assert_int_equal(gw_ckpt_check(file_a, n, n - 1, why, sizeof(why)), -EINVAL);
        assert_int_equal(gw_ckpt_check(NULL, 5, 10, why, sizeof(why)), -EINVAL);
        assert_int_equal(gw_ckpt_tail_wanted(file_a, n, n - 1, &want), -EINVAL);
        assert_int_equal(want, 7);
        assert_int_equal(gw_ckpt_tail_wanted(file_a, n, n, &want), 0);
        assert_int_equal(want, n);
        /* A short message buffer is cut, never overrun. */
        assert_int_equal(gw_ckpt_check(file_a, n, n, why, 5), 0);
        assert_string_equal(why, "comp");

        assert_string_equal(gw_ckpt_id(id, sizeof(id), 1712345678123456, 52428800), "1712345678123456:52428800");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(flavours_complete_and_truncations_rejected),
                cmocka_unit_test(with_a_comment),
                cmocka_unit_test(random_bytes_rejected),
                cmocka_unit_test(not_a_zip_is_not_truncated),
                cmocka_unit_test(corrupt_end_records),
                cmocka_unit_test(large_central_directory),
                cmocka_unit_test(arguments_and_ids),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
