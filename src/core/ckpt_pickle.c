/* The 'epoch' of a checkpoint's pickle (core/ckpt.h).  The pickle is walked without being
 * run: each opcode's argument is skipped by its known length and only the number of items on
 * the stack above each MARK is kept, which is enough to tell the top-level dict's keys from
 * everything nested in it.  Nothing is allocated; the depth of MARKs is bounded. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/text.h"
#include "core/ckpt.h"

#define MAX_MARKS 256
#define EPOCH_MAX 100000000L

/* How an opcode's argument is laid out. */
enum arg {
        ARG_NONE,
        ARG_1, /* fixed 1, 2, 4, 8 bytes */
        ARG_2,
        ARG_4,
        ARG_8,
        ARG_LEN1, /* a 1-byte length, then that many bytes */
        ARG_LEN4, /* a 4-byte little-endian length */
        ARG_LEN8,
        ARG_LINE, /* text up to '\n' */
        ARG_LINE2, /* two such lines (GLOBAL, INST) */
        ARG_BAD, /* not an opcode */
};

/* What it does to the stack above the innermost MARK. */
enum effect {
        FX_PUSH, /* +1 */
        FX_NONE, /* 0: memo, framing, pops one and pushes one */
        FX_POP1, /* -1 */
        FX_POP2, /* -2 */
        FX_MARK,
        FX_POPMARK, /* pops to the mark */
        FX_POPMARK_PUSH, /* pops to the mark, pushes the result */
        FX_STOP,
};

struct op {
        enum arg arg;
        enum effect fx;
};

static struct op op_of(uint8_t c) {
        switch (c) {
        case '(':
                return (struct op){ ARG_NONE, FX_MARK };
        case '.':
                return (struct op){ ARG_NONE, FX_STOP };
        case '0':
                return (struct op){ ARG_NONE, FX_POP1 };
        case '1':
                return (struct op){ ARG_NONE, FX_POPMARK };
        case '2':
                return (struct op){ ARG_NONE, FX_PUSH }; /* DUP */
        case 'N':
        case 0x88:
        case 0x89:
        case ')':
        case ']':
        case '}':
        case 0x8f:
        case 0x97:
                return (struct op){ ARG_NONE, FX_PUSH };
        case 'R':
        case 'a':
        case 'b':
        case 0x81:
        case 0x86:
        case 0x93:
                return (struct op){ ARG_NONE, FX_POP1 };
        case 's':
        case 0x87:
        case 0x92:
                return (struct op){ ARG_NONE, FX_POP2 };
        case 'd':
        case 'l':
        case 't':
        case 'o':
        case 0x91:
                return (struct op){ ARG_NONE, FX_POPMARK_PUSH };
        case 'e':
        case 'u':
        case 0x90:
                return (struct op){ ARG_NONE, FX_POPMARK };
        case 'Q':
        case 0x85:
        case 0x94:
        case 0x98:
                return (struct op){ ARG_NONE, FX_NONE };
        case 'h':
        case 'K':
        case 0x82:
                return (struct op){ ARG_1, FX_PUSH };
        case 'q':
        case 0x80:
                return (struct op){ ARG_1, FX_NONE };
        case 'M':
        case 0x83:
                return (struct op){ ARG_2, FX_PUSH };
        case 'J':
        case 'j':
        case 0x84:
                return (struct op){ ARG_4, FX_PUSH };
        case 'r':
                return (struct op){ ARG_4, FX_NONE };
        case 'G':
                return (struct op){ ARG_8, FX_PUSH };
        case 0x95:
                return (struct op){ ARG_8, FX_NONE }; /* FRAME */
        case 'U':
        case 0x8c:
        case 'C':
        case 0x8a:
                return (struct op){ ARG_LEN1, FX_PUSH };
        case 'T':
        case 'X':
        case 'B':
        case 0x8b:
                return (struct op){ ARG_LEN4, FX_PUSH };
        case 0x8d:
        case 0x8e:
        case 0x96:
                return (struct op){ ARG_LEN8, FX_PUSH };
        case 'I':
        case 'L':
        case 'F':
        case 'S':
        case 'V':
        case 'P':
        case 'g':
                return (struct op){ ARG_LINE, FX_PUSH };
        case 'p':
                return (struct op){ ARG_LINE, FX_NONE };
        case 'c':
                return (struct op){ ARG_LINE2, FX_PUSH };
        case 'i':
                return (struct op){ ARG_LINE2, FX_POPMARK_PUSH };
        default:
                return (struct op){ ARG_BAD, FX_NONE };
        }
}

static int bad(char *why, size_t n, const char *msg) {
        gw_say(why, n, "%s", msg);
        return -EBADMSG;
}

static uint64_t le(const uint8_t *p, size_t n) {
        uint64_t v = 0;
        for (size_t i = n; i-- > 0;)
                v = v << 8 | p[i];
        return v;
}

/* The length of the argument at p (end: the bytes' end).  0 and *ret, -ENODATA past end. */
static int arg_len(enum arg a, const uint8_t *p, const uint8_t *end, size_t *ret) {
        size_t avail = (size_t) (end - p), hdr = 0, body = 0;
        const uint8_t *nl;

        switch (a) {
        case ARG_NONE:
                break;
        case ARG_1:
                body = 1;
                break;
        case ARG_2:
                body = 2;
                break;
        case ARG_4:
                body = 4;
                break;
        case ARG_8:
                body = 8;
                break;
        case ARG_LEN1:
        case ARG_LEN4:
        case ARG_LEN8: {
                hdr = a == ARG_LEN1 ? 1 : a == ARG_LEN4 ? 4 : 8;
                if (avail < hdr)
                        return -ENODATA;
                uint64_t l = le(p, hdr);
                if (l > avail - hdr)
                        return -ENODATA;
                body = (size_t) l;
                break;
        }
        case ARG_LINE2:
                nl = memchr(p, '\n', avail);
                if (!nl)
                        return -ENODATA;
                hdr = (size_t) (nl - p) + 1;
                /* fall through */
        case ARG_LINE:
                nl = memchr(p + hdr, '\n', avail - hdr);
                if (!nl)
                        return -ENODATA;
                body = (size_t) (nl - (p + hdr)) + 1;
                break;
        default:
                return -EBADMSG;
        }
        if (hdr + body > avail)
                return -ENODATA;
        *ret = hdr + body;
        return 0;
}

/* Whether the string pushed by op c with argument arg (len bytes) is "epoch". */
static bool is_epoch_key(uint8_t c, const uint8_t *arg, size_t len) {
        size_t hdr = c == 'U' || c == 0x8c ? 1 : c == 'T' || c == 'X' ? 4 : c == 0x8d ? 8 : 0;
        if (c == 'V') /* protocol 0: the text and its newline */
                return len == 6 && memcmp(arg, "epoch\n", 6) == 0;
        return hdr && len == hdr + 5 && memcmp(arg + hdr, "epoch", 5) == 0;
}

/* The integer an int opcode pushes.  0, -EBADMSG (not an int), -ERANGE. */
static int int_value(uint8_t c, const uint8_t *arg, size_t len, long *ret, char *why, size_t n) {
        int64_t v;

        switch (c) {
        case 'K':
                v = arg[0];
                break;
        case 'M':
                v = (int64_t) le(arg, 2);
                break;
        case 'J':
                v = (int32_t) (uint32_t) le(arg, 4);
                break;
        case 0x8a: {
                size_t k = len - 1;
                if (k > 8) {
                        gw_say(why, n, "'epoch' is an integer of %zu bytes", k);
                        return -ERANGE;
                }
                uint64_t u = k ? le(arg + 1, k) : 0;
                if (k && k < 8 && (arg[k] & 0x80)) /* two's complement: extend the sign */
                        u |= ~UINT64_C(0) << (8 * k);
                v = (int64_t) u;
                break;
        }
        case 'I': {
                /* Protocol 0: "I01\n" and "I00\n" are True and False. */
                if (len == 3 && arg[0] == '0' && (arg[1] == '0' || arg[1] == '1'))
                        return bad(why, n, "'epoch' is a bool, not an integer");
                size_t i = arg[0] == '-' ? 1 : 0;
                if (len - 1 <= i || len - 1 - i > 10)
                        return bad(why, n, "'epoch' is not an integer");
                v = 0;
                for (; i < len - 1; i++) {
                        if (arg[i] < '0' || arg[i] > '9')
                                return bad(why, n, "'epoch' is not an integer");
                        v = v * 10 + (arg[i] - '0');
                }
                if (arg[0] == '-')
                        v = -v;
                break;
        }
        case 0x88:
        case 0x89:
                return bad(why, n, "'epoch' is a bool, not an integer");
        case 'N':
                return bad(why, n, "'epoch' is None, not an integer");
        case 'G':
        case 'F':
                return bad(why, n, "'epoch' is a float, not an integer");
        default:
                gw_say(why, n, "'epoch' is not an integer (opcode 0x%02x)", c);
                return -EBADMSG;
        }
        if (v < -1 || v > EPOCH_MAX) {
                gw_say(why, n, "'epoch' %lld is out of range (-1 to %ld)", (long long) v, EPOCH_MAX);
                return -ERANGE;
        }
        *ret = (long) v;
        return 0;
}

/* A top-level 'epoch' key seen, not yet known to stay one: in {'a': {'epoch': 1}} Python
 * writes the inner one-item dict with SETITEM, its key on the same level as the outer keys,
 * and only the SETITEM that takes it away shows it was not the outer dict's. */
struct cand {
        bool on;
        size_t level, index; /* where the key lies on the stack */
        int vstate; /* its value: 0 not pushed yet, 1 an integer, < 0 the error */
        long v;
        char vmsg[96]; /* why the value is not an integer */
};

/* The walk's state: items above each MARK (level 0: the bottom of the stack). */
struct walk {
        size_t count[MAX_MARKS + 1];
        size_t level;
        bool root_seen; /* the first object finished, which must be a dict */
        int64_t epoch_memo; /* the memo slot holding the string 'epoch', -1 none */
        bool last_was_epoch; /* the last item pushed is the string 'epoch' (for BINPUT) */
        uint64_t memo_len; /* for MEMOIZE, which stores at len(memo) */
        struct cand k;
};

/* Whether an item pushed now would be a key of the top-level dict: at an even position right
 * above its MARK, or right above the dict itself (SETITEM of a one-item dict). */
static bool key_slot(const struct walk *w) {
        return (w->level == 1 && w->count[0] == 1 && w->count[1] % 2 == 0) || (w->level == 0 && w->count[0] == 1);
}

/* The memo ops: remembers where the string 'epoch' is stored, for a BINGET of it. */
static void memo_put(struct walk *w, uint8_t c, const uint8_t *arg, size_t len) {
        int64_t slot = c == 'q' ? arg[0] : c == 'r' ? (int64_t) le(arg, 4) : c == 0x94 ? (int64_t) w->memo_len : -1;
        if (c == 'p') { /* PUT: a decimal line */
                slot = 0;
                for (size_t i = 0; i + 1 < len && slot < INT32_MAX; i++)
                        slot = arg[i] >= '0' && arg[i] <= '9' ? slot * 10 + (arg[i] - '0') : INT32_MAX;
        }
        if (c == 0x94 || (uint64_t) slot == w->memo_len)
                w->memo_len++;
        if (w->last_was_epoch)
                w->epoch_memo = slot;
        else if (slot == w->epoch_memo)
                w->epoch_memo = -1;
}

/* The candidate's value is the item at index + 1: made by op c (int_ok: pushed by an int
 * opcode), or changed since (taken into a container, applied ...): then not an integer. */
static void set_value(struct walk *w, uint8_t c, const uint8_t *arg, size_t alen, bool pushed) {
        w->k.vstate = -EBADMSG;
        if (pushed) {
                int r = int_value(c, arg, alen, &w->k.v, w->k.vmsg, sizeof w->k.vmsg);
                w->k.vstate = r == 0 ? 1 : r;
        } else {
                gw_say(w->k.vmsg, sizeof w->k.vmsg, "'epoch' is not an integer");
        }
}

/* After an op that left count items at level lv, the top one made (pushed anew) or changed
 * by it: the candidate is dropped when its key or value left the stack, and its value is
 * known once the item above the key is made.  An integer value, though, may still become
 * part of a tuple (TUPLE2, TUPLE3): only the dict's own SETITEMS confirms it (step()). */
static void track(struct walk *w, size_t lv, bool made, bool changed, uint8_t c, const uint8_t *arg, size_t alen) {
        struct cand *k = &w->k;
        size_t count = w->count[lv];

        if (!k->on || lv != k->level)
                return;
        if (count < k->index + 2)
                k->on = false; /* the key, or its value, was taken off the stack */
        else if (count == k->index + 2 && (made || changed))
                set_value(w, c, arg, alen, made && !changed);
}

static void track_push(struct walk *w, size_t lv, uint8_t c, const uint8_t *arg, size_t alen) {
        w->count[lv]++;
        track(w, lv, true, false, c, arg, alen);
}

static int confirm(const struct walk *w, long *ret, char *why, size_t n) {
        if (w->k.vstate < 0) {
                gw_say(why, n, "%s", w->k.vmsg);
                return w->k.vstate;
        }
        *ret = w->k.v;
        gw_say(why, n, "epoch %ld", *ret);
        return 0;
}

static int runs_out(char *why, size_t n) { return bad(why, n, "malformed pickle: its stack runs out"); }

/* Carries out the op's stack effect.  1 when the candidate is confirmed, 0, or -EBADMSG. */
static int step(struct walk *w, uint8_t c, enum effect fx, const uint8_t *arg, size_t alen, char *why, size_t n) {
        size_t lv = w->level;

        switch (fx) {
        case FX_PUSH: {
                bool epoch_str = is_epoch_key(c, arg, alen) || (c == 'h' && arg[0] == w->epoch_memo) ||
                                 (c == 'j' && (int64_t) le(arg, 4) == w->epoch_memo);
                /* A second one while the first is on lies above it: nested in the first's
                 * value, or in a later one-item dict; never the dict's own key again. */
                if (epoch_str && key_slot(w) && !w->k.on)
                        w->k = (struct cand){ .on = true, .level = lv, .index = w->count[lv]++ };
                else
                        track_push(w, lv, c, arg, alen);
                w->last_was_epoch = epoch_str;
                return 0;
        }
        case FX_NONE: /* BINPERSID, TUPLE1: the top item replaced */
                if (w->count[lv] == 0)
                        return runs_out(why, n);
                track(w, lv, false, true, c, arg, alen);
                return 0;
        case FX_POP1:
        case FX_POP2: {
                size_t k = fx == FX_POP1 ? 1 : 2;
                if (w->count[lv] < k || (c != '0' && w->count[lv] == k))
                        return runs_out(why, n);
                /* SETITEM of the top-level one-item dict: its key and value taken into it. */
                if (c == 's' && lv == 0 && w->count[0] == 3 && w->k.on && w->k.level == 0 && w->k.index == 1)
                        return 1;
                w->count[lv] -= k;
                track(w, lv, false, c != '0', c, arg, alen);
                return 0;
        }
        case FX_MARK:
                if (lv == MAX_MARKS) {
                        gw_say(why, n, "pickle nested deeper than %d marks", MAX_MARKS);
                        return -EBADMSG;
                }
                w->count[++w->level] = 0;
                return 0;
        case FX_POPMARK:
        case FX_POPMARK_PUSH:
                if (lv == 0)
                        return runs_out(why, n);
                /* The top-level dict's SETITEMS, with the pair in it. */
                if (c == 'u' && lv == 1 && w->count[0] == 1 && w->k.on && w->k.level == 1 &&
                    w->count[1] >= w->k.index + 2)
                        return 1;
                if (w->k.on && w->k.level == lv)
                        w->k.on = false;
                w->level--;
                if (fx == FX_POPMARK_PUSH)
                        w->count[w->level]++;
                else if (w->count[w->level] == 0 && c != '1')
                        return runs_out(why, n);
                /* A new item (TUPLE, LIST ...), or the one below filled (APPENDS, SETITEMS). */
                track(w, w->level, fx == FX_POPMARK_PUSH, c != '1', c, arg, alen);
                return 0;
        default:
                return 0;
        }
}

int gw_ckpt_pickle_epoch(const uint8_t *pkl, size_t len, long *ret_epoch, char *why, size_t n) {
        struct walk w = { .epoch_memo = -1 };

        if ((!pkl && len > 0) || !ret_epoch)
                return -EINVAL;
        const uint8_t *p = pkl, *end = pkl + len;
        while (p < end) {
                uint8_t c = *p++;
                struct op op = op_of(c);
                size_t alen;
                int r;

                if (op.arg == ARG_BAD) {
                        gw_say(why, n, "not a pickle: byte 0x%02x at offset %zu", c, (size_t) (p - 1 - pkl));
                        return -EBADMSG;
                }
                if (arg_len(op.arg, p, end, &alen) < 0)
                        break;
                if (op.fx == FX_STOP) {
                        gw_say(why, n, w.root_seen ? "no 'epoch' key in its dict" : "an empty pickle");
                        return w.root_seen ? -ENOENT : -EBADMSG;
                }
                if (c == 'q' || c == 'r' || c == 'p' || c == 0x94)
                        memo_put(&w, c, p, alen);
                else if (c != 0x80 && c != 0x95) { /* PROTO and FRAME touch no item */
                        r = step(&w, c, op.fx, p, alen, why, n);
                        if (r < 0)
                                return r;
                        if (r > 0)
                                return confirm(&w, ret_epoch, why, n);
                }
                /* The first object finished at the bottom of the stack is the one loaded. */
                if (!w.root_seen && w.level == 0 && w.count[0] > 0) {
                        if (c != '}' && c != 'd')
                                return bad(why, n, "not a pickle of a dict");
                        w.root_seen = true;
                }
                p += alen;
        }
        gw_say(why, n, "its pickle ends before an 'epoch' key (%zu bytes read)", len);
        return -ENODATA;
}

int gw_ckpt_epoch(const uint8_t *file, size_t len, long *ret_epoch, char *why, size_t n) {
        struct gw_ckpt_entry e;
        uint64_t off;
        int r;

        if (!file && len > 0)
                return -EINVAL;
        r = gw_ckpt_find_pickle(file, len, len, &e, why, n);
        if (r < 0)
                return r;
        r = gw_ckpt_pickle_offset(file + e.local_off, (size_t) (len - e.local_off), &e, &off, why, n);
        if (r < 0)
                return r;
        return gw_ckpt_pickle_epoch(file + off, (size_t) (e.size < GW_CKPT_PICKLE_READ ? e.size : GW_CKPT_PICKLE_READ),
                                    ret_epoch, why, n);
}
