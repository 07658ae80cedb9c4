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
static void put16(struct zbuf *b, uint16_t v) { put(b, (uint8_t[]){ (uint8_t) v, (uint8_t) (v >> 8) }, 2); }
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
        ZIP_PLAIN, /* Python's zipfile for small archives */
        ZIP_PYTORCH, /* miniz with MZ_ZIP_FLAG_WRITE_ZIP64 and 64-byte data alignment */
        ZIP_Z64_SATURATED, /* zip64 end records, saturated EOCD, zip64 extra fields for offsets */
};

/* Writes an archive of the entries into out; returns its length. */
static size_t build_zip(uint8_t *out, size_t cap, const struct entry *e, size_t n, enum zip_flavour f,
                        const uint8_t *comment, size_t comment_len) {
        struct zbuf b = { .p = out, .cap = cap };
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
                { "archive/data.pkl", pkl, sizeof(pkl) },
                { "archive/byteorder", (const uint8_t *) "little", 6 },
                { "archive/data/0", tensor, sizeof(tensor) },
                { "archive/version", (const uint8_t *) "3\n", 2 },
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
        const enum zip_flavour fl[] = { ZIP_PLAIN, ZIP_PYTORCH, ZIP_Z64_SATURATED };
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
        assert_int_equal(gw_ckpt_check_file(big, 4, tail, GW_CKPT_TAIL_LEN, sizeof(big), why, sizeof(why)), -EBADMSG);
        assert_string_equal(why, "truncated: a zip archive with no end-of-central-directory record");
        /* Without a zip's first bytes, still not a zip; a complete zip passes as before. */
        assert_int_equal(
                gw_ckpt_check_file((const uint8_t *) "abcd", 4, tail, GW_CKPT_TAIL_LEN, sizeof(big), why, sizeof(why)),
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

/* ---- the checkpoint's own epoch ---- */

/* What torch.save() pickles for an Ultralytics checkpoint: Python's pickle.Pickler at protocol
 * 2 with tensors as persistent ids, written by this script with stand-in classes (no torch):
 *   class P(pickle.Pickler):
 *       def persistent_id(self, obj):
 *           return ('storage', 'HalfStorage', '0', 'cuda:0', 16) if isinstance(obj, bytearray) else None
 *   ema = DetectionModel()  # __module__ 'ultralytics.nn.tasks'
 *   ema.__dict__ = {'training': False, '_parameters': OrderedDict(w=bytearray(4)),
 *                   'yaml': {'nc': 80, 'epoch': 'not this one'}}
 *   {'epoch': E, 'best_fitness': None, 'model': None, 'ema': ema, 'updates': 16,
 *    'optimizer': {'state': {}, 'param_groups': [{'lr': 0.01, 'epoch': 7}]},
 *    'train_args': {'task': 'detect', 'epochs': 3, 'model': 'yolov8n.pt'},
 *    'train_metrics': {'metrics/mAP50(B)': 0.5}, 'train_results': {'epoch': [1.0, 2.0]},
 *    'date': '2024-05-01T10:00:00', 'version': '8.1.0'}
 * PKL_ULTRALYTICS: E = 1, Ultralytics' order ('epoch' first); PKL_EPOCH_LAST: E = 300 written
 * last, so that nested 'epoch' keys and values come first and the top-level key is a BINGET of
 * the memoised string; PKL_STRIPPED: E = -1, a finished run's. */
static const uint8_t PKL_ULTRALYTICS[] =
        "\x80\x02\x7d\x71\x00\x28\x58\x05\x00\x00\x00\x65\x70\x6f\x63\x68\x71\x01\x4b\x01\x58\x0c\x00\x00"
        "\x00\x62\x65\x73\x74\x5f\x66\x69\x74\x6e\x65\x73\x73\x71\x02\x4e\x58\x05\x00\x00\x00\x6d\x6f\x64"
        "\x65\x6c\x71\x03\x4e\x58\x03\x00\x00\x00\x65\x6d\x61\x71\x04\x63\x75\x6c\x74\x72\x61\x6c\x79\x74"
        "\x69\x63\x73\x2e\x6e\x6e\x2e\x74\x61\x73\x6b\x73\x0a\x44\x65\x74\x65\x63\x74\x69\x6f\x6e\x4d\x6f"
        "\x64\x65\x6c\x0a\x71\x05\x29\x81\x71\x06\x7d\x71\x07\x28\x58\x08\x00\x00\x00\x74\x72\x61\x69\x6e"
        "\x69\x6e\x67\x71\x08\x89\x58\x0b\x00\x00\x00\x5f\x70\x61\x72\x61\x6d\x65\x74\x65\x72\x73\x71\x09"
        "\x63\x63\x6f\x6c\x6c\x65\x63\x74\x69\x6f\x6e\x73\x0a\x4f\x72\x64\x65\x72\x65\x64\x44\x69\x63\x74"
        "\x0a\x71\x0a\x29\x52\x71\x0b\x58\x01\x00\x00\x00\x77\x71\x0c\x28\x58\x07\x00\x00\x00\x73\x74\x6f"
        "\x72\x61\x67\x65\x71\x0d\x58\x0b\x00\x00\x00\x48\x61\x6c\x66\x53\x74\x6f\x72\x61\x67\x65\x71\x0e"
        "\x58\x01\x00\x00\x00\x30\x71\x0f\x58\x06\x00\x00\x00\x63\x75\x64\x61\x3a\x30\x71\x10\x4b\x10\x74"
        "\x71\x11\x51\x73\x58\x04\x00\x00\x00\x79\x61\x6d\x6c\x71\x12\x7d\x71\x13\x28\x58\x02\x00\x00\x00"
        "\x6e\x63\x71\x14\x4b\x50\x68\x01\x58\x0c\x00\x00\x00\x6e\x6f\x74\x20\x74\x68\x69\x73\x20\x6f\x6e"
        "\x65\x71\x15\x75\x75\x62\x58\x07\x00\x00\x00\x75\x70\x64\x61\x74\x65\x73\x71\x16\x4b\x10\x58\x09"
        "\x00\x00\x00\x6f\x70\x74\x69\x6d\x69\x7a\x65\x72\x71\x17\x7d\x71\x18\x28\x58\x05\x00\x00\x00\x73"
        "\x74\x61\x74\x65\x71\x19\x7d\x71\x1a\x58\x0c\x00\x00\x00\x70\x61\x72\x61\x6d\x5f\x67\x72\x6f\x75"
        "\x70\x73\x71\x1b\x5d\x71\x1c\x7d\x71\x1d\x28\x58\x02\x00\x00\x00\x6c\x72\x71\x1e\x47\x3f\x84\x7a"
        "\xe1\x47\xae\x14\x7b\x68\x01\x4b\x07\x75\x61\x75\x58\x0a\x00\x00\x00\x74\x72\x61\x69\x6e\x5f\x61"
        "\x72\x67\x73\x71\x1f\x7d\x71\x20\x28\x58\x04\x00\x00\x00\x74\x61\x73\x6b\x71\x21\x58\x06\x00\x00"
        "\x00\x64\x65\x74\x65\x63\x74\x71\x22\x58\x06\x00\x00\x00\x65\x70\x6f\x63\x68\x73\x71\x23\x4b\x03"
        "\x68\x03\x58\x0a\x00\x00\x00\x79\x6f\x6c\x6f\x76\x38\x6e\x2e\x70\x74\x71\x24\x75\x58\x0d\x00\x00"
        "\x00\x74\x72\x61\x69\x6e\x5f\x6d\x65\x74\x72\x69\x63\x73\x71\x25\x7d\x71\x26\x58\x10\x00\x00\x00"
        "\x6d\x65\x74\x72\x69\x63\x73\x2f\x6d\x41\x50\x35\x30\x28\x42\x29\x71\x27\x47\x3f\xe0\x00\x00\x00"
        "\x00\x00\x00\x73\x58\x0d\x00\x00\x00\x74\x72\x61\x69\x6e\x5f\x72\x65\x73\x75\x6c\x74\x73\x71\x28"
        "\x7d\x71\x29\x68\x01\x5d\x71\x2a\x28\x47\x3f\xf0\x00\x00\x00\x00\x00\x00\x47\x40\x00\x00\x00\x00"
        "\x00\x00\x00\x65\x73\x58\x04\x00\x00\x00\x64\x61\x74\x65\x71\x2b\x58\x13\x00\x00\x00\x32\x30\x32"
        "\x34\x2d\x30\x35\x2d\x30\x31\x54\x31\x30\x3a\x30\x30\x3a\x30\x30\x71\x2c\x58\x07\x00\x00\x00\x76"
        "\x65\x72\x73\x69\x6f\x6e\x71\x2d\x58\x05\x00\x00\x00\x38\x2e\x31\x2e\x30\x71\x2e\x75\x2e";

static const uint8_t PKL_EPOCH_LAST[] =
        "\x80\x02\x7d\x71\x00\x28\x58\x0c\x00\x00\x00\x62\x65\x73\x74\x5f\x66\x69\x74\x6e\x65\x73\x73\x71"
        "\x01\x4e\x58\x05\x00\x00\x00\x6d\x6f\x64\x65\x6c\x71\x02\x4e\x58\x03\x00\x00\x00\x65\x6d\x61\x71"
        "\x03\x63\x75\x6c\x74\x72\x61\x6c\x79\x74\x69\x63\x73\x2e\x6e\x6e\x2e\x74\x61\x73\x6b\x73\x0a\x44"
        "\x65\x74\x65\x63\x74\x69\x6f\x6e\x4d\x6f\x64\x65\x6c\x0a\x71\x04\x29\x81\x71\x05\x7d\x71\x06\x28"
        "\x58\x08\x00\x00\x00\x74\x72\x61\x69\x6e\x69\x6e\x67\x71\x07\x89\x58\x0b\x00\x00\x00\x5f\x70\x61"
        "\x72\x61\x6d\x65\x74\x65\x72\x73\x71\x08\x63\x63\x6f\x6c\x6c\x65\x63\x74\x69\x6f\x6e\x73\x0a\x4f"
        "\x72\x64\x65\x72\x65\x64\x44\x69\x63\x74\x0a\x71\x09\x29\x52\x71\x0a\x58\x01\x00\x00\x00\x77\x71"
        "\x0b\x28\x58\x07\x00\x00\x00\x73\x74\x6f\x72\x61\x67\x65\x71\x0c\x58\x0b\x00\x00\x00\x48\x61\x6c"
        "\x66\x53\x74\x6f\x72\x61\x67\x65\x71\x0d\x58\x01\x00\x00\x00\x30\x71\x0e\x58\x06\x00\x00\x00\x63"
        "\x75\x64\x61\x3a\x30\x71\x0f\x4b\x10\x74\x71\x10\x51\x73\x58\x04\x00\x00\x00\x79\x61\x6d\x6c\x71"
        "\x11\x7d\x71\x12\x28\x58\x02\x00\x00\x00\x6e\x63\x71\x13\x4b\x50\x58\x05\x00\x00\x00\x65\x70\x6f"
        "\x63\x68\x71\x14\x58\x0c\x00\x00\x00\x6e\x6f\x74\x20\x74\x68\x69\x73\x20\x6f\x6e\x65\x71\x15\x75"
        "\x75\x62\x58\x07\x00\x00\x00\x75\x70\x64\x61\x74\x65\x73\x71\x16\x4b\x10\x58\x09\x00\x00\x00\x6f"
        "\x70\x74\x69\x6d\x69\x7a\x65\x72\x71\x17\x7d\x71\x18\x28\x58\x05\x00\x00\x00\x73\x74\x61\x74\x65"
        "\x71\x19\x7d\x71\x1a\x58\x0c\x00\x00\x00\x70\x61\x72\x61\x6d\x5f\x67\x72\x6f\x75\x70\x73\x71\x1b"
        "\x5d\x71\x1c\x7d\x71\x1d\x28\x58\x02\x00\x00\x00\x6c\x72\x71\x1e\x47\x3f\x84\x7a\xe1\x47\xae\x14"
        "\x7b\x68\x14\x4b\x07\x75\x61\x75\x58\x0a\x00\x00\x00\x74\x72\x61\x69\x6e\x5f\x61\x72\x67\x73\x71"
        "\x1f\x7d\x71\x20\x28\x58\x04\x00\x00\x00\x74\x61\x73\x6b\x71\x21\x58\x06\x00\x00\x00\x64\x65\x74"
        "\x65\x63\x74\x71\x22\x58\x06\x00\x00\x00\x65\x70\x6f\x63\x68\x73\x71\x23\x4b\x03\x68\x02\x58\x0a"
        "\x00\x00\x00\x79\x6f\x6c\x6f\x76\x38\x6e\x2e\x70\x74\x71\x24\x75\x58\x0d\x00\x00\x00\x74\x72\x61"
        "\x69\x6e\x5f\x6d\x65\x74\x72\x69\x63\x73\x71\x25\x7d\x71\x26\x58\x10\x00\x00\x00\x6d\x65\x74\x72"
        "\x69\x63\x73\x2f\x6d\x41\x50\x35\x30\x28\x42\x29\x71\x27\x47\x3f\xe0\x00\x00\x00\x00\x00\x00\x73"
        "\x58\x0d\x00\x00\x00\x74\x72\x61\x69\x6e\x5f\x72\x65\x73\x75\x6c\x74\x73\x71\x28\x7d\x71\x29\x68"
        "\x14\x5d\x71\x2a\x28\x47\x3f\xf0\x00\x00\x00\x00\x00\x00\x47\x40\x00\x00\x00\x00\x00\x00\x00\x65"
        "\x73\x58\x04\x00\x00\x00\x64\x61\x74\x65\x71\x2b\x58\x13\x00\x00\x00\x32\x30\x32\x34\x2d\x30\x35"
        "\x2d\x30\x31\x54\x31\x30\x3a\x30\x30\x3a\x30\x30\x71\x2c\x58\x07\x00\x00\x00\x76\x65\x72\x73\x69"
        "\x6f\x6e\x71\x2d\x58\x05\x00\x00\x00\x38\x2e\x31\x2e\x30\x71\x2e\x68\x14\x4d\x2c\x01\x75\x2e";

static const uint8_t PKL_STRIPPED[] =
        "\x80\x02\x7d\x71\x00\x28\x58\x05\x00\x00\x00\x65\x70\x6f\x63\x68\x71\x01\x4a\xff\xff\xff\xff\x58"
        "\x0c\x00\x00\x00\x62\x65\x73\x74\x5f\x66\x69\x74\x6e\x65\x73\x73\x71\x02\x4e\x58\x05\x00\x00\x00"
        "\x6d\x6f\x64\x65\x6c\x71\x03\x4e\x58\x03\x00\x00\x00\x65\x6d\x61\x71\x04\x63\x75\x6c\x74\x72\x61"
        "\x6c\x79\x74\x69\x63\x73\x2e\x6e\x6e\x2e\x74\x61\x73\x6b\x73\x0a\x44\x65\x74\x65\x63\x74\x69\x6f"
        "\x6e\x4d\x6f\x64\x65\x6c\x0a\x71\x05\x29\x81\x71\x06\x7d\x71\x07\x28\x58\x08\x00\x00\x00\x74\x72"
        "\x61\x69\x6e\x69\x6e\x67\x71\x08\x89\x58\x0b\x00\x00\x00\x5f\x70\x61\x72\x61\x6d\x65\x74\x65\x72"
        "\x73\x71\x09\x63\x63\x6f\x6c\x6c\x65\x63\x74\x69\x6f\x6e\x73\x0a\x4f\x72\x64\x65\x72\x65\x64\x44"
        "\x69\x63\x74\x0a\x71\x0a\x29\x52\x71\x0b\x58\x01\x00\x00\x00\x77\x71\x0c\x28\x58\x07\x00\x00\x00"
        "\x73\x74\x6f\x72\x61\x67\x65\x71\x0d\x58\x0b\x00\x00\x00\x48\x61\x6c\x66\x53\x74\x6f\x72\x61\x67"
        "\x65\x71\x0e\x58\x01\x00\x00\x00\x30\x71\x0f\x58\x06\x00\x00\x00\x63\x75\x64\x61\x3a\x30\x71\x10"
        "\x4b\x10\x74\x71\x11\x51\x73\x58\x04\x00\x00\x00\x79\x61\x6d\x6c\x71\x12\x7d\x71\x13\x28\x58\x02"
        "\x00\x00\x00\x6e\x63\x71\x14\x4b\x50\x68\x01\x58\x0c\x00\x00\x00\x6e\x6f\x74\x20\x74\x68\x69\x73"
        "\x20\x6f\x6e\x65\x71\x15\x75\x75\x62\x58\x07\x00\x00\x00\x75\x70\x64\x61\x74\x65\x73\x71\x16\x4b"
        "\x10\x58\x09\x00\x00\x00\x6f\x70\x74\x69\x6d\x69\x7a\x65\x72\x71\x17\x7d\x71\x18\x28\x58\x05\x00"
        "\x00\x00\x73\x74\x61\x74\x65\x71\x19\x7d\x71\x1a\x58\x0c\x00\x00\x00\x70\x61\x72\x61\x6d\x5f\x67"
        "\x72\x6f\x75\x70\x73\x71\x1b\x5d\x71\x1c\x7d\x71\x1d\x28\x58\x02\x00\x00\x00\x6c\x72\x71\x1e\x47"
        "\x3f\x84\x7a\xe1\x47\xae\x14\x7b\x68\x01\x4b\x07\x75\x61\x75\x58\x0a\x00\x00\x00\x74\x72\x61\x69"
        "\x6e\x5f\x61\x72\x67\x73\x71\x1f\x7d\x71\x20\x28\x58\x04\x00\x00\x00\x74\x61\x73\x6b\x71\x21\x58"
        "\x06\x00\x00\x00\x64\x65\x74\x65\x63\x74\x71\x22\x58\x06\x00\x00\x00\x65\x70\x6f\x63\x68\x73\x71"
        "\x23\x4b\x03\x68\x03\x58\x0a\x00\x00\x00\x79\x6f\x6c\x6f\x76\x38\x6e\x2e\x70\x74\x71\x24\x75\x58"
        "\x0d\x00\x00\x00\x74\x72\x61\x69\x6e\x5f\x6d\x65\x74\x72\x69\x63\x73\x71\x25\x7d\x71\x26\x58\x10"
        "\x00\x00\x00\x6d\x65\x74\x72\x69\x63\x73\x2f\x6d\x41\x50\x35\x30\x28\x42\x29\x71\x27\x47\x3f\xe0"
        "\x00\x00\x00\x00\x00\x00\x73\x58\x0d\x00\x00\x00\x74\x72\x61\x69\x6e\x5f\x72\x65\x73\x75\x6c\x74"
        "\x73\x71\x28\x7d\x71\x29\x68\x01\x5d\x71\x2a\x28\x47\x3f\xf0\x00\x00\x00\x00\x00\x00\x47\x40\x00"
        "\x00\x00\x00\x00\x00\x00\x65\x73\x58\x04\x00\x00\x00\x64\x61\x74\x65\x71\x2b\x58\x13\x00\x00\x00"
        "\x32\x30\x32\x34\x2d\x30\x35\x2d\x30\x31\x54\x31\x30\x3a\x30\x30\x3a\x30\x30\x71\x2c\x58\x07\x00"
        "\x00\x00\x76\x65\x72\x73\x69\x6f\x6e\x71\x2d\x58\x05\x00\x00\x00\x38\x2e\x31\x2e\x30\x71\x2e\x75"
        "\x2e";

static int pickle_epoch(const void *p, size_t len, long *e, char *why) {
        return gw_ckpt_pickle_epoch((const uint8_t *) p, len, e, why, 200);
}
#define PK(lit) lit, sizeof(lit) - 1

static void real_pickles(void **state) {
        char why[200];
        long e = 99;

        assert_int_equal(pickle_epoch(PKL_ULTRALYTICS, sizeof(PKL_ULTRALYTICS) - 1, &e, why), 0);
        assert_int_equal(e, 1);
        assert_string_equal(why, "epoch 1");
        assert_int_equal(pickle_epoch(PKL_EPOCH_LAST, sizeof(PKL_EPOCH_LAST) - 1, &e, why), 0);
        assert_int_equal(e, 300);
        assert_int_equal(pickle_epoch(PKL_STRIPPED, sizeof(PKL_STRIPPED) - 1, &e, why), 0);
        assert_int_equal(e, -1);
        /* Only the dict's SETITEMS, its last byte but one, settles it: every prefix short of
         * it says it ended first. */
        for (size_t len = 0; len < sizeof(PKL_EPOCH_LAST) - 1; len++) {
                e = 99;
                int r = pickle_epoch(PKL_EPOCH_LAST, len, &e, why);
                assert_int_equal(r, len < sizeof(PKL_EPOCH_LAST) - 2 ? -ENODATA : 0);
                assert_int_equal(e, r == 0 ? 300 : 99);
        }
}

/* Pickles Python writes for small dicts (pickle.dumps(d, protocol=P)). */
static void dict_shapes_and_values(void **state) {
        static const struct {
                const char *pkl;
                size_t len;
                int ret;
                long epoch;
        } cases[] = {
                { PK("\x80\x02}q\x00X\x05\x00\x00\x00"
                     "epochq\x01K\x04s."),
                  0, 4 }, /* one item: SETITEM */
                { PK("\x80\x02}q\x00(X\x05\x00\x00\x00"
                     "epochq\x01Jp\x11\x01\x00X\x01\x00\x00\x00zq\x02K\x01u."),
                  0, 70000 },
                { PK("\x80\x02}q\x00(X\x05\x00\x00\x00"
                     "epochq\x01M,\x01X\x01\x00\x00\x00zq\x02K\x01u."),
                  0, 300 },
                { PK("\x80\x02}q\x00(X\x05\x00\x00\x00"
                     "epochq\x01\x8a\x01\x05X\x01\x00\x00\x00zq\x02K\x01u."),
                  0, 5 },
                { PK("\x80\x02}q\x00(X\x05\x00\x00\x00"
                     "epochq\x01\x8a\x01\xffu."),
                  0, -1 }, /* LONG1 -1 */
                { PK("(dp0\nVepoch\np1\nI5\nsVz\np2\nI1\ns."), 0, 5 }, /* protocol 0 */
                { PK("\x80\x04\x95\x15\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x05"
                     "epoch\x94K\x05\x8c\x01z\x94K\x01u."),
                  0, 5 },
                /* 'epoch' nested, or a value, is not the checkpoint's. */
                { PK("\x80\x02}q\x00(X\x01\x00\x00\x00"
                     "aq\x01}q\x02X\x05\x00\x00\x00"
                     "epochq\x03K\x01sX\x01\x00\x00\x00"
                     "bq\x04K\x02u."),
                  -ENOENT, 0 },
                { PK("\x80\x02}q\x00(X\x01\x00\x00\x00xq\x01X\x05\x00\x00\x00"
                     "epochq\x02X\x01\x00\x00\x00yq\x03K\x02u."),
                  -ENOENT, 0 },
                { PK("\x80\x02}q\x00."), -ENOENT, 0 },
                /* {'a': {'epoch': {'epoch': 1}}, 'epoch': 3}: the one-item dicts' keys lie on the
                 * outer dict's level until their SETITEM. */
                { PK("\x80\x02\x7d\x71\x00\x28\x58\x01\x00\x00\x00\x61\x71\x01\x7d\x71\x02\x58\x05\x00\x00\x00"
                     "\x65\x70\x6f\x63\x68\x71\x03\x7d\x71\x04\x68\x03\x4b\x01\x73\x73\x68\x03\x4b\x03\x75\x2e"),
                  0, 3 },
                /* Not integers, or out of range; {'epoch': (5, 6), 'z': 1} is a tuple by TUPLE2. */
                { PK("\x80\x02\x7d\x71\x00\x28\x58\x05\x00\x00\x00\x65\x70\x6f\x63\x68\x71\x01\x4b\x05\x4b\x06"
                     "\x86\x71\x02\x58\x01\x00\x00\x00\x7a\x71\x03\x4b\x01\x75\x2e"),
                  -EBADMSG, 0 },
                { PK("\x80\x02}q\x00(X\x05\x00\x00\x00"
                     "epochq\x01\x89X\x01\x00\x00\x00zq\x02K\x01u."),
                  -EBADMSG, 0 },
                { PK("\x80\x02}q\x00(X\x05\x00\x00\x00"
                     "epochq\x01\x88u."),
                  -EBADMSG, 0 },
                { PK("\x80\x02}q\x00(X\x05\x00\x00\x00"
                     "epochq\x01NX\x01\x00\x00\x00zq\x02K\x01u."),
                  -EBADMSG, 0 },
                { PK("\x80\x02}q\x00(X\x05\x00\x00\x00"
                     "epochq\x01G@\x00\x00\x00\x00\x00\x00\x00u."),
                  -EBADMSG, 0 },
                { PK("(dp0\nVepoch\np1\nI01\ns."), -EBADMSG, 0 }, /* protocol 0 True */
                { PK("\x80\x02}q\x00(X\x05\x00\x00\x00"
                     "epochq\x01J\xfe\xff\xff\xffu."),
                  -ERANGE, 0 },
                { PK("\x80\x02}q\x00(X\x05\x00\x00\x00"
                     "epochq\x01\x8a\x06\x00\x00\x00\x00\x00\x01u."),
                  -ERANGE, 0 },
                { PK("\x80\x02}q\x00(X\x05\x00\x00\x00"
                     "epochq\x01\x8a\x09\x01\x01\x01\x01\x01\x01\x01\x01\x01u."),
                  -ERANGE, 0 },
                /* Not a dict's pickle, or not a pickle. */
                { PK("\x80\x02]q\x00(X\x05\x00\x00\x00"
                     "epochq\x01K\x04e."),
                  -EBADMSG, 0 },
                { PK("\x80\x02\xff"
                     "epoch"),
                  -EBADMSG, 0 },
                { PK("\x80\x02}q\x00(X\x05\x00\x00\x00"
                     "epochq\x01uu."),
                  -EBADMSG, 0 }, /* runs out of stack */
                { PK("\x80\x02."), -EBADMSG, 0 },
                { PK("\x80\x02}q\x00(X\x05\x00\x00\x00epo"), -ENODATA, 0 },
                { PK(""), -ENODATA, 0 },
        };
        char why[200];

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                long e = 99;
                int r = pickle_epoch(cases[i].pkl, cases[i].len, &e, why);
                if (r != cases[i].ret || (r == 0 && e != cases[i].epoch) || (r < 0 && e != 99))
                        fail_msg("case %zu: %d (%s), epoch %ld", i, r, why, e);
        }
        long e;
        pickle_epoch(PK("\x80\x02}q\x00(X\x05\x00\x00\x00"
                        "epochq\x01\x89u."),
                     &e, why);
        assert_string_equal(why, "'epoch' is a bool, not an integer");
        pickle_epoch(PK("\x80\x02}q\x00(X\x05\x00\x00\x00"
                        "epochq\x01J\xfe\xff\xff\xffu."),
                     &e, why);
        assert_string_equal(why, "'epoch' -2 is out of range (-1 to 100000000)");
        pickle_epoch(PK("\x80\x02}q\x00."), &e, why);
        assert_string_equal(why, "no 'epoch' key in its dict");
        /* Marks nested past the bound are refused, not followed. */
        static char deep[600];
        memcpy(deep, "\x80\x02}(", 4);
        memset(deep + 4, '(', sizeof(deep) - 4);
        assert_int_equal(pickle_epoch(deep, sizeof(deep), &e, why), -EBADMSG);
        assert_string_equal(why, "pickle nested deeper than 256 marks");
        assert_int_equal(gw_ckpt_pickle_epoch(NULL, 1, &e, why, sizeof(why)), -EINVAL);
}

static size_t ckpt_zip(uint8_t *out, size_t cap, enum zip_flavour f, const char *pkl_name, const uint8_t *pkl,
                       size_t pkl_len) {
        static const uint8_t tensor[3000] = { 1 };
        struct entry e[] = {
                { "", pkl, pkl_len },
                { "last/byteorder", (const uint8_t *) "little", 6 },
                { "last/data/0", tensor, sizeof(tensor) },
                { "last/version", (const uint8_t *) "3\n", 2 },
        };
        snprintf(e[0].name, sizeof(e[0].name), "%s", pkl_name);
        return build_zip(out, cap, e, 4, f, NULL, 0);
}

/* The offset of the central directory entry named name (its signature). */
static size_t cd_entry(const uint8_t *z, size_t n, const char *name) {
        for (size_t i = 0; i + 46 + strlen(name) <= n; i++)
                if (!memcmp(z + i, "PK\x01\x02", 4) && !memcmp(z + i + 46, name, strlen(name)))
                        return i;
        fail_msg("no central entry %s", name);
        return 0;
}

static void epoch_of_a_checkpoint_file(void **state) {
        const enum zip_flavour fl[] = { ZIP_PLAIN, ZIP_PYTORCH, ZIP_Z64_SATURATED };
        const size_t pk_len = sizeof(PKL_ULTRALYTICS) - 1;
        char why[200];
        long e = 99;
        size_t n;

        for (size_t i = 0; i < sizeof(fl) / sizeof(fl[0]); i++) {
                n = ckpt_zip(file_a, sizeof(file_a), fl[i], "last/data.pkl", PKL_ULTRALYTICS, pk_len);
                assert_int_equal(gw_ckpt_epoch(file_a, n, &e, why, sizeof(why)), 0);
                assert_int_equal(e, 1);
                /* A prefix (a torn write) has no end records to find the pickle by. */
                assert_int_equal(gw_ckpt_epoch(file_a, n - 1, &e, why, sizeof(why)), -EBADMSG);
        }
        n = ckpt_zip(file_a, sizeof(file_a), ZIP_PYTORCH, "archive/data.pkl", PKL_STRIPPED, sizeof(PKL_STRIPPED) - 1);
        assert_int_equal(gw_ckpt_epoch(file_a, n, &e, why, sizeof(why)), 0);
        assert_int_equal(e, -1);

        /* Only ARCHIVE/data.pkl: not deeper, not at the top. */
        n = ckpt_zip(file_a, sizeof(file_a), ZIP_PLAIN, "a/b/data.pkl", PKL_ULTRALYTICS, pk_len);
        assert_int_equal(gw_ckpt_epoch(file_a, n, &e, why, sizeof(why)), -ENOENT);
        assert_string_equal(why, "no data.pkl in the archive");
        n = ckpt_zip(file_a, sizeof(file_a), ZIP_PLAIN, "data.pkl", PKL_ULTRALYTICS, pk_len);
        assert_int_equal(gw_ckpt_epoch(file_a, n, &e, why, sizeof(why)), -ENOENT);

        /* Compressed (deflate, method 8) is refused, said in the central or the local header. */
        n = ckpt_zip(file_a, sizeof(file_a), ZIP_PYTORCH, "last/data.pkl", PKL_ULTRALYTICS, pk_len);
        size_t c = cd_entry(file_a, n, "last/data.pkl");
        file_a[c + 10] = 8;
        assert_int_equal(gw_ckpt_epoch(file_a, n, &e, why, sizeof(why)), -EBADMSG);
        assert_string_equal(why, "data.pkl is compressed (method 8): not read");
        file_a[c + 10] = 0;
        file_a[8] = 8; /* the first local header: data.pkl's */
        assert_int_equal(gw_ckpt_epoch(file_a, n, &e, why, sizeof(why)), -EBADMSG);
        assert_string_equal(why, "data.pkl is compressed: not read");
        file_a[8] = 0;
        /* A local header that is not there, or sizes that run into the directory. */
        file_a[0] = 'X';
        assert_int_equal(gw_ckpt_epoch(file_a, n, &e, why, sizeof(why)), -EBADMSG);
        assert_string_equal(why, "data.pkl: no local header where the central directory points");
        file_a[0] = 'P';
        file_a[c + 20] = file_a[c + 24] = 0xff;
        file_a[c + 21] = file_a[c + 25] = 0xff;
        assert_int_equal(gw_ckpt_epoch(file_a, n, &e, why, sizeof(why)), -EBADMSG);
        assert_string_equal(why, "data.pkl overlaps the central directory");
        assert_int_equal(e, -1); /* untouched by failures */

        /* Not a zip at all. */
        assert_int_equal(gw_ckpt_epoch(PKL_ULTRALYTICS, pk_len, &e, why, sizeof(why)), -EBADMSG);
        /* The directory must be in the bytes given (the daemon reads as much as it needs). */
        struct gw_ckpt_entry ent;
        n = ckpt_zip(file_a, sizeof(file_a), ZIP_PLAIN, "last/data.pkl", PKL_ULTRALYTICS, pk_len);
        assert_int_equal(gw_ckpt_find_pickle(file_a + n - 40, 40, n, &ent, why, sizeof(why)), -EBADMSG);
        assert_string_equal(why, "its central directory was not read whole");
        assert_int_equal(gw_ckpt_find_pickle(file_a, n, n, &ent, why, sizeof(why)), 0);
        assert_int_equal(ent.local_off, 0);
        assert_int_equal(ent.size, pk_len);
        assert_int_equal(gw_ckpt_find_pickle(file_a, n, n - 1, &ent, why, sizeof(why)), -EINVAL);
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
                cmocka_unit_test(real_pickles),
                cmocka_unit_test(dict_shapes_and_values),
                cmocka_unit_test(epoch_of_a_checkpoint_file),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
