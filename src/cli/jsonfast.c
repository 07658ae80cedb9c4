/* The fast JSON reader (see jsonfast.h).  jansson reads a byte at a time through a stream and
 * a growing buffer; 10,000 rows of 20 fields spent most of `gpuward queue` there.  This one
 * scans the buffer in place and builds the values with jansson's own constructors (so they
 * come from the caller's allocator, the CLI's arena). */
#include "cli/jsonfast.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64 /* deeper than any reply; jansson's own limit is 2048 */

struct rd {
        const char *p, *end;
        char *tmp; /* unescaped text of a string with escapes */
        size_t tmp_size;
};

static json_t *value(struct rd *r, int depth);

static void skip_ws(struct rd *r) {
        while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\t' || *r->p == '\r'))
                r->p++;
}

static bool take(struct rd *r, char c) {
        skip_ws(r);
        if (r->p < r->end && *r->p == c) {
                r->p++;
                return true;
        }
        return false;
}

/* The text of a string (r->p after its opening quote), unescaped: into *ret and *ret_len,
 * pointing into the buffer when it has no escape.  -1 for what is left to jansson. */
static int text(struct rd *r, const char **ret, size_t *ret_len, bool *ret_ascii) {
        const char *s = r->p;
        bool ascii = true, escaped = false;
        while (r->p < r->end && *r->p != '"') {
                unsigned char c = (unsigned char) *r->p;
                if (c < 0x20)
                        return -1;
                ascii &= c < 0x80;
                if (c == '\\') {
                        escaped = true;
                        r->p++;
                }
                r->p++;
        }
        if (r->p >= r->end)
                return -1;
        size_t n = (size_t) (r->p - s);
        r->p++;
        *ret_ascii = ascii;
        if (!escaped) {
                *ret = s;
                *ret_len = n;
                return 0;
        }
        if (n > r->tmp_size) {
                char *t = realloc(r->tmp, n);
                if (!t)
                        return -1;
                r->tmp = t;
                r->tmp_size = n;
        }
        size_t o = 0;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (c == '\\') {
                        const char *esc = strchr("\"\"\\\\//b\bf\fn\nr\rt\t", s[++i]);
                        if (!esc || s[i] == '\0' || (esc - "\"\"\\\\//b\bf\fn\nr\rt\t") % 2)
                                return -1; /* \u, or not an escape */
                        c = esc[1];
                }
                r->tmp[o++] = c;
        }
        *ret = r->tmp;
        *ret_len = o;
        return 0;
}

static json_t *string(struct rd *r) {
        const char *s;
        size_t n;
        bool ascii;
        if (text(r, &s, &n, &ascii) < 0)
                return NULL;
        /* Not ASCII: jansson checks that it is UTF-8, as json_loadb does. */
        return ascii ? json_stringn_nocheck(s, n) : json_stringn(s, n);
}

/* JSON's grammar exactly; an integer unless it has a fraction or an exponent, as in jansson. */
static json_t *number(struct rd *r) {
        const char *s = r->p, *q = s;
        bool real = false;
        if (q < r->end && *q == '-')
                q++;
        if (q >= r->end || *q < '0' || *q > '9')
                return NULL;
        if (*q == '0')
                q++;
        else
                while (q < r->end && *q >= '0' && *q <= '9')
                        q++;
        if (q < r->end && *q == '.') {
                real = true;
                if (++q >= r->end || *q < '0' || *q > '9')
                        return NULL;
                while (q < r->end && *q >= '0' && *q <= '9')
                        q++;
        }
        if (q < r->end && (*q == 'e' || *q == 'E')) {
                real = true;
                if (++q < r->end && (*q == '+' || *q == '-'))
                        q++;
                if (q >= r->end || *q < '0' || *q > '9')
                        return NULL;
                while (q < r->end && *q >= '0' && *q <= '9')
                        q++;
        }
        char buf[64];
        if ((size_t) (q - s) >= sizeof buf)
                return NULL;
        memcpy(buf, s, (size_t) (q - s));
        buf[q - s] = '\0';
        r->p = q;
        errno = 0;
        if (real) {
                double d = strtod(buf, NULL);
                return errno || !isfinite(d) ? NULL : json_real(d);
        }
        long long v = strtoll(buf, NULL, 10);
        return errno ? NULL : json_integer(v);
}

static json_t *array(struct rd *r, int depth) {
        json_t *a = json_array();
        if (!a || take(r, ']'))
                return a;
        do {
                json_t *v = value(r, depth + 1);
                if (!v || json_array_append_new(a, v) < 0)
                        goto fail;
        } while (take(r, ','));
        if (take(r, ']'))
                return a;
fail:
        json_decref(a);
        return NULL;
}

static json_t *object(struct rd *r, int depth) {
        json_t *o = json_object();
        if (!o || take(r, '}'))
                return o;
        do {
                const char *k;
                size_t n;
                bool ascii;
                if (!take(r, '"') || text(r, &k, &n, &ascii) < 0 || !ascii || memchr(k, '\0', n) || !take(r, ':'))
                        goto fail;
                char *key = strndup(k, n); /* k may be r->tmp, which the value reuses */
                json_t *v = key ? value(r, depth + 1) : NULL;
                int e = v ? json_object_setn_new_nocheck(o, key, n, v) : -1;
                free(key);
                if (e < 0)
                        goto fail;
        } while (take(r, ','));
        if (take(r, '}'))
                return o;
fail:
        json_decref(o);
        return NULL;
}

static json_t *literal(struct rd *r, const char *word, json_t *v) {
        size_t n = strlen(word);
        if ((size_t) (r->end - r->p) < n || memcmp(r->p, word, n))
                return NULL;
        r->p += n;
        return v;
}

static json_t *value(struct rd *r, int depth) {
        skip_ws(r);
        if (depth > MAX_DEPTH || r->p >= r->end)
                return NULL;
        switch (*r->p++) {
        case '{':
                return object(r, depth);
        case '[':
                return array(r, depth);
        case '"':
                return string(r);
        case 't':
                return literal(r, "rue", json_true());
        case 'f':
                return literal(r, "alse", json_false());
        case 'n':
                return literal(r, "ull", json_null());
        default:
                r->p--;
                return number(r);
        }
}

json_t *cli_json_load_fast(const char *buf, size_t len) {
        struct rd r = { .p = buf, .end = buf + len };
        json_t *v = value(&r, 0);
        skip_ws(&r);
        if (v && r.p != r.end) {
                json_decref(v);
                v = NULL;
        }
        free(r.tmp);
        return v;
}

/* The value at p (a row), read fast, else by jansson (\u escapes): with *ret_end past it. */
static json_t *value_at(const char *p, const char *end, const char **ret_end) {
        struct rd r = { .p = p, .end = end };
        json_t *v = value(&r, 0);
        free(r.tmp);
        if (v) {
                *ret_end = r.p;
                return v;
        }
        json_error_t err;
        v = json_loadb(p, (size_t) (end - p), JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, &err);
        if (v)
                *ret_end = p + err.position; /* jansson tells how far it read */
        return v;
}

/* Takes word, whitespace around it. */
static bool take_word(struct rd *r, const char *word) {
        size_t n = strlen(word);
        skip_ws(r);
        if ((size_t) (r->end - r->p) < n || memcmp(r->p, word, n))
                return false;
        r->p += n;
        return true;
}

int cli_json_rows_open(struct cli_json_rows *r, const char *buf, size_t len) {
        struct rd rd = { .p = buf, .end = buf + len };
        *r = (struct cli_json_rows){ .buf = buf, .end = buf + len };
        if (!take(&rd, '{') || !take_word(&rd, "\"fields\"") || !take(&rd, ':'))
                return -EBADMSG;
        skip_ws(&rd);
        const char *after;
        r->fields = value_at(rd.p, rd.end, &after);
        rd.p = r->fields ? after : rd.p;
        if (!json_is_array(r->fields) || !take(&rd, ',') || !take_word(&rd, "\"rows\"") || !take(&rd, ':') ||
            !take(&rd, '[')) {
                cli_json_rows_done(r);
                return -EBADMSG;
        }
        r->p = rd.p;
        return 0;
}

int cli_json_rows_next(struct cli_json_rows *r, json_t **ret_row, size_t *ret_at) {
        struct rd rd = { .p = r->p, .end = r->end };
        if (r->ended)
                return 0;
        if (take(&rd, ']')) {
                bool whole = take(&rd, '}');
                skip_ws(&rd);
                if (!whole || rd.p != rd.end)
                        return -EBADMSG;
                r->ended = true;
                return 0;
        }
        if (r->n && !take(&rd, ','))
                return -EBADMSG;
        skip_ws(&rd);
        const char *after;
        json_t *row = value_at(rd.p, rd.end, &after);
        if (!row)
                return -EBADMSG;
        *ret_at = (size_t) (rd.p - r->buf);
        *ret_row = row;
        r->p = after;
        r->n++;
        return 1;
}

json_t *cli_json_rows_at(const struct cli_json_rows *r, size_t at) {
        const char *after;
        return at < (size_t) (r->end - r->buf) ? value_at(r->buf + at, r->end, &after) : NULL;
}

void cli_json_rows_done(struct cli_json_rows *r) {
        json_decref(r->fields);
        r->fields = NULL;
}
