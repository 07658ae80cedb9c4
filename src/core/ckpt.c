#include "core/ckpt.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/text.h"

#define SIG_EOCD UINT32_C(0x06054b50) /* PK\5\6 end of central directory */
#define SIG_Z64_LOC UINT32_C(0x07064b50) /* PK\6\7 zip64 end of central directory locator */
#define SIG_Z64_EOCD UINT32_C(0x06064b50) /* PK\6\6 zip64 end of central directory record */
#define SIG_CDH UINT32_C(0x02014b50) /* PK\1\2 central directory file header */
#define SIG_LFH UINT32_C(0x04034b50) /* PK\3\4 local file header */

#define EOCD_LEN 22
#define Z64_LOC_LEN 20
#define Z64_EOCD_LEN 56
#define CDH_LEN 46
#define LFH_LEN 30
#define MAX_COMMENT 65535

static uint16_t le16(const uint8_t *p) { return (uint16_t) (p[0] | p[1] << 8); }

static uint32_t le32(const uint8_t *p) {
        return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

static uint64_t le64(const uint8_t *p) { return (uint64_t) le32(p) | (uint64_t) le32(p + 4) << 32; }

/* What the end records say. */
struct zip_end {
        uint64_t entries;
        uint64_t cd_off, cd_size;
        uint64_t cd_end; /* where the central directory must end: the (zip64) end record */
        uint64_t need; /* bytes from the end of the file needed for the next step */
};

static int bad(char *why, size_t n, const char *msg) {
        gw_say(why, n, "%s", msg);
        return -EBADMSG;
}

/* Reads the ZIP64 end record the locator at tail[loc] points to.  0, 1 when the record
 * is outside the tail, -EBADMSG. */
static int read_zip64(const uint8_t *tail, size_t tail_len, uint64_t base, size_t loc, struct zip_end *z, char *why,
                      size_t n) {
        const uint8_t *l = tail + loc, *r;
        uint64_t loc_abs = base + loc, off = le64(l + 8), rec_size;
        uint32_t disks = le32(l + 16);

        if (le32(l + 4) != 0 || disks > 1)
                return bad(why, n, "multi-disk archives are not supported");
        if (off > loc_abs || loc_abs - off < Z64_EOCD_LEN)
                return bad(why, n, "zip64 end record points past its locator");
        if (off < base) {
                z->need = base + tail_len - off;
                gw_say(why, n, "zip64: not checked (its end record lies outside the tail)");
                return 1;
        }
        r = tail + (off - base);
        if (le32(r) != SIG_Z64_EOCD)
                return bad(why, n, "truncated: no zip64 end record where its locator points");
        rec_size = le64(r + 4);
        if (rec_size != loc_abs - off - 12)
                return bad(why, n, "zip64 end record does not end at its locator");
        if (le32(r + 16) != 0 || le32(r + 20) != 0)
                return bad(why, n, "multi-disk archives are not supported");
        if (le64(r + 24) != le64(r + 32))
                return bad(why, n, "entry counts in the zip64 end record disagree");
        z->entries = le64(r + 32);
        z->cd_size = le64(r + 40);
        z->cd_off = le64(r + 48);
        z->cd_end = off;
        return 0;
}

/* No end record: a zip cut before its end shows its entries' local headers (PyTorch writes
 * one per tensor), so with one in the tail it is said to be truncated; without any, nothing
 * says it was ever a zip, and "truncated" would send its owner looking for a crash. */
#define CUT_ZIP "truncated: a zip archive with no end-of-central-directory record"
#define NOT_ZIP "not a PyTorch zip archive (no zip end-of-central-directory record)"

static int no_end(const uint8_t *tail, size_t tail_len, char *why, size_t n) {
        for (size_t i = 0; i + 4 <= tail_len; i++)
                if (le32(tail + i) == SIG_LFH)
                        return bad(why, n, CUT_ZIP);
        return bad(why, n, NOT_ZIP);
}

/* Finds and checks the end records.  0, 1 (zip64 end record outside the tail), -EBADMSG. */
static int find_end(const uint8_t *tail, size_t tail_len, uint64_t file_size, struct zip_end *z, char *why, size_t n) {
        uint64_t base = file_size - tail_len;
        size_t i, lo;
        const uint8_t *e;
        uint16_t n_disk, n_total;
        uint32_t cd_size32, cd_off32;
        bool found = false;
        int r;

        if (tail_len < EOCD_LEN)
                return no_end(tail, tail_len, why, n);
        /* The comment must end exactly at the end of the file: a signature inside data or
         * in the comment itself does not satisfy that by chance. */
        lo = tail_len - EOCD_LEN > MAX_COMMENT ? tail_len - EOCD_LEN - MAX_COMMENT : 0;
        for (i = tail_len - EOCD_LEN;; i--) {
                if (le32(tail + i) == SIG_EOCD && le16(tail + i + 20) == tail_len - i - EOCD_LEN) {
                        found = true;
                        break;
                }
                if (i == lo)
                        break;
        }
        if (!found)
                return no_end(tail, tail_len, why, n);

        e = tail + i;
        if (le16(e + 4) != 0 || le16(e + 6) != 0)
                return bad(why, n, "multi-disk archives are not supported");
        n_disk = le16(e + 8);
        n_total = le16(e + 10);
        cd_size32 = le32(e + 12);
        cd_off32 = le32(e + 16);
        if (n_disk != n_total)
                return bad(why, n, "entry counts in the end-of-central-directory record disagree");

        if (i >= Z64_LOC_LEN && le32(e - Z64_LOC_LEN) == SIG_Z64_LOC) {
                r = read_zip64(tail, tail_len, base, i - Z64_LOC_LEN, z, why, n);
                if (r != 0)
                        return r;
                /* Writers put the real value in the 32-bit field when it fits, else saturate. */
                if ((n_total != UINT16_MAX && n_total != z->entries) ||
                    (cd_size32 != UINT32_MAX && cd_size32 != z->cd_size) ||
                    (cd_off32 != UINT32_MAX && cd_off32 != z->cd_off))
                        return bad(why, n, "end-of-central-directory and zip64 end records disagree");
        } else {
                if (cd_size32 == UINT32_MAX || cd_off32 == UINT32_MAX)
                        return bad(why, n, "zip64 archive without its end record locator");
                z->entries = n_total;
                z->cd_size = cd_size32;
                z->cd_off = cd_off32;
                z->cd_end = base + i;
        }

        if (z->cd_off > file_size || z->cd_size > file_size - z->cd_off)
                return bad(why, n, "central directory points past the end of the file");
        if (z->cd_off + z->cd_size != z->cd_end)
                return bad(why, n, "central directory does not end where the end record starts");
        if (z->cd_size / CDH_LEN < z->entries)
                return bad(why, n, "central directory too small for its entry count");
        z->need = file_size - z->cd_off;
        return 0;
}

/* The entry's name for messages: at most 64 bytes, non-printable bytes as '?'. */
static void entry_name(const uint8_t *p, size_t len, size_t avail, char *buf, size_t cap) {
        size_t k = 0;

        if (len > avail)
                len = avail;
        for (size_t j = 0; j < len && k + 1 < cap; j++)
                buf[k++] = p[j] >= 0x20 && p[j] < 0x7f ? (char) p[j] : '?';
        buf[k] = '\0';
}

/* Finds the zip64 values the central directory header leaves saturated.  0 or -EBADMSG. */
static int zip64_extra(const uint8_t *x, size_t xlen, uint64_t *usize, uint64_t *csize, uint64_t *loff) {
        bool need_u = *usize == UINT32_MAX, need_c = *csize == UINT32_MAX, need_o = *loff == UINT32_MAX;

        while (xlen >= 4) {
                uint16_t id = le16(x), sz = le16(x + 2);
                const uint8_t *d = x + 4;
                size_t want = 8u * ((size_t) need_u + need_c + need_o);

                if ((size_t) sz > xlen - 4)
                        return -EBADMSG;
                if (id == 0x0001) {
                        if (sz < want)
                                return -EBADMSG;
                        if (need_u)
                                *usize = le64(d), d += 8;
                        if (need_c)
                                *csize = le64(d), d += 8;
                        if (need_o)
                                *loff = le64(d);
                        return 0;
                }
                x += 4 + sz;
                xlen -= 4 + (size_t) sz;
        }
        return need_u || need_c || need_o ? -EBADMSG : 0;
}

/* Walks the central directory, which lies wholly in the tail. */
static int walk(const uint8_t *tail, size_t tail_len, uint64_t file_size, const struct zip_end *z, char *why,
                size_t n) {
        uint64_t base = file_size - tail_len;
        size_t pos = (size_t) (z->cd_off - base), end = (size_t) (z->cd_end - base);
        char name[72];

        for (uint64_t k = 1; k <= z->entries; k++) {
                const uint8_t *h = tail + pos;
                uint64_t usize, csize, loff;
                size_t nlen, xlen, clen;

                if (end - pos < CDH_LEN || le32(h) != SIG_CDH) {
                        gw_say(why, n, "central directory entry %llu of %llu is missing", (unsigned long long) k,
                               (unsigned long long) z->entries);
                        return -EBADMSG;
                }
                csize = le32(h + 20);
                usize = le32(h + 24);
                nlen = le16(h + 28);
                xlen = le16(h + 30);
                clen = le16(h + 32);
                loff = le32(h + 42);
                entry_name(h + CDH_LEN, nlen, end - pos - CDH_LEN, name, sizeof(name));
                if (end - pos - CDH_LEN < nlen + xlen + clen) {
                        gw_say(why, n, "central directory entry %llu ('%s') runs past the directory",
                               (unsigned long long) k, name);
                        return -EBADMSG;
                }
                if (zip64_extra(h + CDH_LEN + nlen, xlen, &usize, &csize, &loff) < 0) {
                        gw_say(why, n, "entry %llu ('%s'): bad or missing zip64 extra field", (unsigned long long) k,
                               name);
                        return -EBADMSG;
                }
                if (loff >= file_size) {
                        gw_say(why, n, "entry %llu ('%s') points past the end of the file", (unsigned long long) k,
                               name);
                        return -EBADMSG;
                }
                /* The local header, name and data come before the central directory (the
                 * local extra field may differ in length from the central one: not counted). */
                if (loff > z->cd_off || z->cd_off - loff < LFH_LEN || z->cd_off - loff - LFH_LEN < nlen ||
                    z->cd_off - loff - LFH_LEN - nlen < csize) {
                        gw_say(why, n, "entry %llu ('%s') overlaps the central directory", (unsigned long long) k,
                               name);
                        return -EBADMSG;
                }
                if (loff >= base && le32(tail + (loff - base)) != SIG_LFH) {
                        gw_say(why, n, "entry %llu ('%s'): no local header at offset %llu", (unsigned long long) k,
                               name, (unsigned long long) loff);
                        return -EBADMSG;
                }
                pos += CDH_LEN + nlen + xlen + clen;
        }
        if (pos != end)
                return bad(why, n, "central directory holds more than its entry count");
        gw_say(why, n, "complete: %llu entries", (unsigned long long) z->entries);
        return 0;
}

int gw_ckpt_check(const uint8_t *tail, size_t tail_len, uint64_t file_size, char *why, size_t n) {
        struct zip_end z = { 0 };
        int r;

        if ((uint64_t) tail_len > file_size || (!tail && tail_len > 0)) {
                gw_say(why, n, "invalid arguments: the tail is longer than the file");
                return -EINVAL;
        }
        if (file_size == 0)
                return bad(why, n, "truncated: empty file");
        r = find_end(tail, tail_len, file_size, &z, why, n);
        if (r != 0)
                return r;
        if (z.cd_off < file_size - tail_len) {
                gw_say(why, n,
                       "end records consistent; central directory (%llu entries, %llu bytes) not in the "
                       "tail: entries not walked",
                       (unsigned long long) z.entries, (unsigned long long) z.cd_size);
                return 1;
        }
        return walk(tail, tail_len, file_size, &z, why, n);
}

int gw_ckpt_check_file(const uint8_t *head, size_t head_len, const uint8_t *tail, size_t tail_len, uint64_t file_size,
                       char *why, size_t n) {
        char w[512];
        int r = gw_ckpt_check(tail, tail_len, file_size, w, sizeof(w));

        /* A tail of one big tensor's bytes shows no header; the file's first does. */
        if (r == -EBADMSG && strcmp(w, NOT_ZIP) == 0 && head && head_len >= 4 && le32(head) == SIG_LFH)
                snprintf(w, sizeof(w), "%s", CUT_ZIP);
        gw_say(why, n, "%s", w);
        return r;
}

int gw_ckpt_tail_wanted(const uint8_t *tail, size_t tail_len, uint64_t file_size, uint64_t *ret_len) {
        struct zip_end z = { 0 };
        int r;

        if ((uint64_t) tail_len > file_size || (!tail && tail_len > 0))
                return -EINVAL;
        if (file_size == 0)
                return -EBADMSG;
        r = find_end(tail, tail_len, file_size, &z, NULL, 0);
        if (r < 0)
                return r;
        *ret_len = z.need > tail_len ? z.need : tail_len;
        return 0;
}

/* Whether the entry's name is "ARCHIVE/data.pkl": one folder, as torch.save names them. */
static bool is_pickle_name(const uint8_t *name, size_t len) {
        static const char want[] = "/data.pkl";
        size_t wl = sizeof(want) - 1;

        if (len <= wl || memcmp(name + len - wl, want, wl) != 0)
                return false;
        return memchr(name, '/', len - wl) == NULL;
}

int gw_ckpt_find_pickle(const uint8_t *tail, size_t tail_len, uint64_t file_size, struct gw_ckpt_entry *ret, char *why,
                        size_t n) {
        struct zip_end z = { 0 };
        uint64_t base;
        size_t pos, end;
        int r;

        if ((uint64_t) tail_len > file_size || (!tail && tail_len > 0) || !ret)
                return -EINVAL;
        if (file_size == 0)
                return bad(why, n, "empty file");
        r = find_end(tail, tail_len, file_size, &z, why, n);
        if (r < 0)
                return r;
        base = file_size - tail_len;
        if (r > 0 || z.cd_off < base)
                return bad(why, n, "its central directory was not read whole");
        pos = (size_t) (z.cd_off - base);
        end = (size_t) (z.cd_end - base);
        for (uint64_t k = 0; k < z.entries; k++) {
                const uint8_t *h = tail + pos;
                uint64_t usize, csize, loff;
                size_t nlen, xlen, clen;

                if (end - pos < CDH_LEN || le32(h) != SIG_CDH)
                        return bad(why, n, "a central directory entry is missing");
                nlen = le16(h + 28);
                xlen = le16(h + 30);
                clen = le16(h + 32);
                if (end - pos - CDH_LEN < nlen + xlen + clen)
                        return bad(why, n, "a central directory entry runs past the directory");
                if (is_pickle_name(h + CDH_LEN, nlen)) {
                        csize = le32(h + 20);
                        usize = le32(h + 24);
                        loff = le32(h + 42);
                        if (zip64_extra(h + CDH_LEN + nlen, xlen, &usize, &csize, &loff) < 0)
                                return bad(why, n, "data.pkl: bad or missing zip64 extra field");
                        if (le16(h + 8) & 1)
                                return bad(why, n, "data.pkl is encrypted");
                        if (le16(h + 10) != 0) {
                                gw_say(why, n, "data.pkl is compressed (method %u): not read", le16(h + 10));
                                return -EBADMSG;
                        }
                        if (csize != usize)
                                return bad(why, n, "data.pkl is stored but its two sizes differ");
                        if (loff > z.cd_off || z.cd_off - loff < LFH_LEN + nlen ||
                            z.cd_off - loff - LFH_LEN - nlen < csize)
                                return bad(why, n, "data.pkl overlaps the central directory");
                        *ret = (struct gw_ckpt_entry){ .local_off = loff, .size = csize, .cd_off = z.cd_off };
                        gw_say(why, n, "data.pkl: %llu bytes", (unsigned long long) csize);
                        return 0;
                }
                pos += CDH_LEN + nlen + xlen + clen;
        }
        gw_say(why, n, "no data.pkl in the archive");
        return -ENOENT;
}

int gw_ckpt_pickle_offset(const uint8_t *lfh, size_t len, const struct gw_ckpt_entry *e, uint64_t *ret_off, char *why,
                          size_t n) {
        uint64_t off;

        if (!lfh || !e || !ret_off || len < LFH_LEN || le32(lfh) != SIG_LFH)
                return bad(why, n, "data.pkl: no local header where the central directory points");
        if (le16(lfh + 6) & 1)
                return bad(why, n, "data.pkl is encrypted");
        if (le16(lfh + 8) != 0)
                return bad(why, n, "data.pkl is compressed: not read");
        off = e->local_off + LFH_LEN + le16(lfh + 26) + le16(lfh + 28);
        /* The local header's extra field (PyTorch's alignment padding) may differ from the
         * central one: the data must still end before the central directory. */
        if (off > e->cd_off || e->cd_off - off < e->size)
                return bad(why, n, "data.pkl runs into the central directory");
        *ret_off = off;
        return 0;
}

char *gw_ckpt_id(char *buf, size_t n, gw_usec_t mtime, uint64_t size) {
        if (buf && n > 0)
                (void) snprintf(buf, n, "%lld:%llu", (long long) mtime, (unsigned long long) size);
        return buf;
}
