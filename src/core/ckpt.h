/* Is a checkpoint file complete?  Pure: the caller reads the file's last bytes, this checks
 * them.  No I/O, no allocation.
 *
 * torch.save() writes a ZIP archive (PyTorch's miniz writer, always in ZIP64 form) front
 * to back over the old file (Ultralytics overwrites weights/last.pt in place), and the
 * end-of-central-directory record is the last thing written.  A file torn by a kill
 * mid-write is therefore a prefix with no end record, or (after a crash that lost page
 * cache) one whose end records point outside the file.  The check:
 *   1. find the End Of Central Directory record (PK\5\6), scanning back over the at most
 *      65,535-byte comment; its comment must end exactly at the end of the file;
 *   2. with a ZIP64 locator (PK\6\7) right before it, read the ZIP64 end record (PK\6\6)
 *      it points to, which must end at the locator; the 32-bit fields of the EOCD must agree
 *      with it unless they are saturated (0xFFFF / 0xFFFFFFFF);
 *   3. the central directory (offset + size) must lie in the file and end exactly where the
 *      (ZIP64) end record starts;
 *   4. if the whole central directory is in the tail, walk its entries (PK\1\2): each
 *      entry's local header plus name and data must lie before the central directory, the
 *      local header signature (PK\3\4) must be there when it is in the tail, and the entries
 *      must fill the central directory exactly. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"

/* Read at least min(file size, GW_CKPT_TAIL_LEN) bytes from the end of the file: the EOCD
 * (22) with the longest comment (65,535), the ZIP64 locator (20) and ZIP64 end record (56). */
#define GW_CKPT_TAIL_LEN (22 + 65535 + 20 + 56)

/* tail: the last tail_len bytes of a file of file_size bytes (tail_len <= file_size).
 * Returns
 *    0         complete: end records consistent and every central directory entry checked;
 *    1         end records consistent, but the central directory is not all inside the tail,
 *              so its entries were not walked (gw_ckpt_tail_wanted() says how much to read),
 *              or a ZIP64 end record lies outside the tail ("zip64: not checked");
 *   -EBADMSG   not a complete archive;
 *   -EINVAL    tail_len > file_size, or tail NULL with tail_len > 0.
 * why (may be NULL) receives a one-line reason in every case, e.g. "complete: 412 entries",
 * "truncated: a zip archive with no end-of-central-directory record" (local headers in
 * the tail: a zip cut short), "not a PyTorch zip archive (no zip end-of-central-directory
 * record)" (nothing zip-like in the tail),
 * "central directory points past the end of the file". */
int gw_ckpt_check(const uint8_t *tail, size_t tail_len, uint64_t file_size, char *why, size_t n);

/* gw_ckpt_check() with the file's first head_len bytes too (head may be NULL): a file with
 * no end record that starts with a zip local header is a zip cut short ("truncated: ..."),
 * though its tail, all one tensor's data, shows no header. */
int gw_ckpt_check_file(const uint8_t *head, size_t head_len, const uint8_t *tail, size_t tail_len, uint64_t file_size,
                       char *why, size_t n);

/* How many bytes from the end of the file gw_ckpt_check() needs to walk every central
 * directory entry (at least the bytes given).  0 and *ret_len, or gw_ckpt_check()'s
 * negative error. */
int gw_ckpt_tail_wanted(const uint8_t *tail, size_t tail_len, uint64_t file_size, uint64_t *ret_len);

/* ---- the checkpoint's own epoch ----
 *
 * An Ultralytics checkpoint is torch.save() of a dict: its pickle, ARCHIVE/data.pkl in the
 * zip (ARCHIVE: the file's stem or "archive"), stored uncompressed, starts
 *   PROTO 2, EMPTY_DICT, BINPUT 0, MARK, BINUNICODE 'epoch', BINPUT 1, BININT1 <epoch>, ...
 * 'epoch' is the 0-based index of the last epoch it finished (Ultralytics resumes at epoch + 1),
 * -1 in a finished run's stripped checkpoint.  Ultralytics writes the epoch's results.csv row
 * before last.pt: a kill between them leaves a row the checkpoint does not hold, so only the
 * checkpoint says where a resume starts.  The steps, each on bytes the caller read: */

/* Bytes of data.pkl read at most.  Though 'epoch' is the dict's first key, only the dict's
 * SETITEMS at the end of the pickle shows it to be the dict's (an integer followed by others
 * may yet become a tuple), so the whole pickle is walked: the model's structure, its tensors
 * being other entries, is some hundreds of KiB for a YOLO model. */
#define GW_CKPT_PICKLE_READ (16u << 20)
/* The largest local header with its name and extra field. */
#define GW_CKPT_LOCAL_MAX (30 + 65535 + 65535)

struct gw_ckpt_entry {
        uint64_t local_off; /* its local header */
        uint64_t size; /* its data's (stored: compressed = uncompressed) */
        uint64_t cd_off; /* the central directory's: the data must end before it */
};

/* Finds the stored "ARCHIVE/data.pkl" (one folder, no other) in the central directory, which
 * must lie wholly in tail (gw_ckpt_tail_wanted() says how much to read).  0 and *ret;
 * -ENOENT none; -EBADMSG malformed, compressed or encrypted; -EINVAL bad arguments.  why (may
 * be NULL) gets the reason. */
int gw_ckpt_find_pickle(const uint8_t *tail, size_t tail_len, uint64_t file_size, struct gw_ckpt_entry *ret, char *why,
                        size_t n);
/* Where the entry's data starts, from its local header: lfh holds the file's bytes from
 * e->local_off on (at least 30, at most GW_CKPT_LOCAL_MAX are looked at).  0 and *ret_off,
 * -EBADMSG (no local header there, compressed, or data running into the central directory). */
int gw_ckpt_pickle_offset(const uint8_t *lfh, size_t len, const struct gw_ckpt_entry *e, uint64_t *ret_off, char *why,
                          size_t n);
/* The value of the top-level dict's 'epoch' key in the pickle pkl (its first len bytes: it
 * may be a prefix), walked opcode by opcode (protocols 0 to 5) with its stack counted, so that
 * an 'epoch' inside a nested dict or as a value is not taken; the dict's own SETITEMS (or
 * SETITEM) settles it.  0 and *ret_epoch; -ENOENT no
 * such key; -ENODATA the bytes end before it; -EBADMSG not a pickle of a dict, malformed, or
 * 'epoch' not an integer (a bool, None, a float ...); -ERANGE outside -1 .. 10^8. */
int gw_ckpt_pickle_epoch(const uint8_t *pkl, size_t len, long *ret_epoch, char *why, size_t n);
/* The three over a whole file in memory (tests, the fuzzer). */
int gw_ckpt_epoch(const uint8_t *file, size_t len, long *ret_epoch, char *why, size_t n);

/* A checkpoint's identity for the crash-loop rule (core/retry.h): "<mtime usec>:<size>".
 * Returns buf. */
char *gw_ckpt_id(char *buf, size_t n, gw_usec_t mtime, uint64_t size);
