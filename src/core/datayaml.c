#include "core/datayaml.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/text.h"

enum key { K_OTHER, K_PATH, K_SPLIT, K_LIST_ITEM };

struct line {
        const char *p; /* the line, without its '\n' */
        size_t len;
        enum key key;
        const char *val; /* K_PATH, K_SPLIT, K_LIST_ITEM: the value's first byte */
        size_t val_len; /* without quotes, comment and trailing blanks */
        size_t val_off; /* where the value (with its quotes) starts in the line */
        size_t val_end; /* where it ends, quotes included */
};

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* The scalar at p[0..len): quoted ('…' or "…", no escapes taken) or plain up to a " #"
 * comment.  Sets val/val_len and the span it takes. */
static void scalar(struct line *l, size_t off) {
        const char *p = l->p;
        size_t i = off;
        while (i < l->len && is_blank(p[i]))
                i++;
        l->val_off = i;
        if (i < l->len && (p[i] == '\'' || p[i] == '"')) {
                char q = p[i];
                const char *end = memchr(p + i + 1, q, l->len - i - 1);
                size_t e = end ? (size_t) (end - p) : l->len;
                l->val = p + i + 1;
                l->val_len = e - i - 1;
                l->val_end = end ? e + 1 : l->len;
                return;
        }
        size_t e = i;
        while (e < l->len && !(p[e] == '#' && (e == i || is_blank(p[e - 1]))))
                e++;
        while (e > i && is_blank(p[e - 1]))
                e--;
        l->val = p + i;
        l->val_len = e - i;
        l->val_end = e;
}

static bool key_is(const char *p, size_t len, const char *key) {
        size_t k = strlen(key);
        return len > k && !memcmp(p, key, k) && p[k] == ':';
}

/* Classifies one line; in_split: the previous key line was train/val/test with no value,
 * so "  - x" lines are its list's items. */
static void classify(struct line *l, bool *in_split) {
        l->key = K_OTHER;
        const char *p = l->p;
        if (l->len && !is_blank(p[0]) && p[0] != '#' && p[0] != '-') {
                *in_split = false;
                if (key_is(p, l->len, "path")) {
                        l->key = K_PATH;
                        scalar(l, 5);
                } else if (key_is(p, l->len, "train") || key_is(p, l->len, "val") || key_is(p, l->len, "test")) {
                        l->key = K_SPLIT;
                        scalar(l, (size_t) ((const char *) memchr(p, ':', l->len) - p) + 1);
                        *in_split = l->val_len == 0;
                }
                return;
        }
        size_t i = 0;
        while (i < l->len && is_blank(p[i]))
                i++;
        if (*in_split && i < l->len && p[i] == '-' && (i + 1 == l->len || is_blank(p[i + 1]))) {
                l->key = K_LIST_ITEM;
                scalar(l, i + 1);
        }
}

static int check_text(const char *text, size_t len, char *why, size_t nwhy) {
        if (len > GW_DATAYAML_MAX_SIZE) {
                gw_say(why, nwhy, "the data YAML is over %d bytes: not a data YAML", GW_DATAYAML_MAX_SIZE);
                return -EINVAL;
        }
        if (memchr(text, '\0', len)) {
                gw_say(why, nwhy, "the data YAML holds a NUL byte: not a text file");
                return -EINVAL;
        }
        return 0;
}

/* Reads the line at p into l (classified) and returns where the next one starts. */
static const char *next_line(const char *p, const char *end, struct line *l, bool *in_split) {
        const char *nl = memchr(p, '\n', (size_t) (end - p));
        *l = (struct line){ .p = p, .len = (size_t) ((nl ? nl : end) - p) };
        classify(l, in_split);
        return nl ? nl + 1 : end;
}

int gw_datayaml_root(const char *text, size_t len, char *root, size_t n, char *why, size_t nwhy) {
        int r = check_text(text, len, why, nwhy);
        if (r < 0)
                return r;
        bool in_split = false, found = false;
        for (const char *p = text, *end = text + len; p < end;) {
                struct line l;
                p = next_line(p, end, &l, &in_split);
                if (l.key != K_PATH)
                        continue;
                if (!l.val_len || l.val[0] != '/') {
                        gw_say(why, nwhy,
                               "path: '%.*s' is not an absolute directory; a staged data YAML "
                               "names its dataset's root with an absolute path:",
                               (int) (l.val_len > 200 ? 200 : l.val_len), l.val);
                        return -EINVAL;
                }
                if (l.val_len >= n || l.val_len >= GW_DATAYAML_MAX_PATH) {
                        gw_say(why, nwhy, "path: longer than %d bytes", GW_DATAYAML_MAX_PATH - 1);
                        return -EINVAL;
                }
                memcpy(root, l.val, l.val_len);
                root[l.val_len] = '\0';
                found = true;
        }
        if (!found) {
                gw_say(why, nwhy, "the data YAML has no top-level path: key naming the dataset's root");
                return -EINVAL;
        }
        /* "/data/coco/" and "/data/coco" are one root. */
        size_t k = strlen(root);
        while (k > 1 && root[k - 1] == '/')
                root[--k] = '\0';
        return 0;
}

struct out {
        char *buf;
        size_t len, cap;
};

static void put(struct out *o, const char *s, size_t n) {
        if (o->len + n + 1 > o->cap) {
                o->cap = (o->len + n + 1) * 2;
                o->buf = gw_xrealloc(o->buf, o->cap);
        }
        memcpy(o->buf + o->len, s, n);
        o->len += n;
        o->buf[o->len] = '\0';
}

static void put_s(struct out *o, const char *s) { put(o, s, strlen(s)); }

/* An entry's value for the copy: relative stays, under root moves under local. */
static int entry_value(const struct line *l, const char *root, const char *local, struct out *o, char *why,
                       size_t nwhy) {
        size_t rl = strlen(root);
        if (!l->val_len || l->val[0] != '/') {
                put(o, l->p + l->val_off, l->val_end - l->val_off);
                return 0;
        }
        bool under = l->val_len >= rl && !memcmp(l->val, root, rl) &&
                     (l->val_len == rl || l->val[rl] == '/' || !strcmp(root, "/"));
        if (!under) {
                gw_say(why, nwhy,
                       "'%.*s' is outside the data YAML's path: %s, so it would not be staged; "
                       "give it relative to path:",
                       (int) (l->val_len > 200 ? 200 : l->val_len), l->val, root);
                return -EINVAL;
        }
        put_s(o, "\"");
        put_s(o, local);
        put(o, l->val + rl, l->val_len - rl);
        put_s(o, "\"");
        return 0;
}

int gw_datayaml_rewrite(const char *text, size_t len, const char *local, char **ret, char *why, size_t nwhy) {
        char root[GW_DATAYAML_MAX_PATH];
        int r = gw_datayaml_root(text, len, root, sizeof root, why, nwhy);
        if (r < 0)
                return r;
        if (strchr(local, '"') || strchr(local, '\n')) {
                gw_say(why, nwhy, "the cache's folder holds a quote or newline");
                return -EINVAL;
        }
        struct out o = { NULL, 0, 0 };
        put(&o, "", 0);
        bool in_split = false;
        for (const char *p = text, *end = text + len; p < end;) {
                struct line l;
                p = next_line(p, end, &l, &in_split);
                if (l.key == K_PATH) {
                        put_s(&o, "path: \"");
                        put_s(&o, local);
                        put_s(&o, "\"");
                        put(&o, l.p + l.val_end, l.len - l.val_end);
                } else if (l.key == K_SPLIT || l.key == K_LIST_ITEM) {
                        put(&o, l.p, l.val_off);
                        if (entry_value(&l, root, local, &o, why, nwhy) < 0) {
                                free(o.buf);
                                return -EINVAL;
                        }
                        put(&o, l.p + l.val_end, l.len - l.val_end);
                } else
                        put(&o, l.p, l.len);
                put_s(&o, "\n");
        }
        *ret = o.buf;
        return 0;
}
