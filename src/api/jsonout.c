/* Compact JSON text written straight into one growing buffer (jsonout.h). */
#include "api/jsonout.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

#define JSONOUT_MAX_DEPTH 2048 /* jansson's JSON_PARSER_MAX_DEPTH: it dumps no deeper */

struct jbuf {
        char *p;
        size_t n, cap;
};

static void jbuf_room(struct jbuf *b, size_t more) {
        if (b->n + more < b->cap)
                return;
        size_t cap = b->cap ? b->cap : 256;
        while (b->n + more >= cap)
                cap *= 2;
        b->p = gw_xrealloc(b->p, cap);
        b->cap = cap;
}

static void put(struct jbuf *b, const char *s, size_t n) {
        jbuf_room(b, n);
        memcpy(b->p + b->n, s, n);
        b->n += n;
}

static void put_c(struct jbuf *b, char c) {
        jbuf_room(b, 1);
        b->p[b->n++] = c;
}

/* Runs of bytes that need no escape are copied whole.  A json_t string is valid UTF-8, whose
 * multi-byte sequences hold no byte below 0x80, so escaping byte by byte is escaping code
 * point by code point, as jansson does: '"', '\\' and the controls, these as \uXXXX in
 * upper case unless they have a short form; '/' and DEL as they are. */
static void put_string(struct jbuf *b, const char *s, size_t len) {
        put_c(b, '"');
        size_t run = 0;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char) s[i];
                if (c >= 0x20 && c != '"' && c != '\\')
                        continue;
                put(b, s + run, i - run);
                run = i + 1;
                char esc[8];
                const char *short_form = c == '"'    ? "\\\""
                                         : c == '\\' ? "\\\\"
                                         : c == '\b' ? "\\b"
                                         : c == '\f' ? "\\f"
                                         : c == '\n' ? "\\n"
                                         : c == '\r' ? "\\r"
                                         : c == '\t' ? "\\t"
                                                     : NULL;
                if (short_form)
                        put(b, short_form, 2);
                else {
                        snprintf(esc, sizeof esc, "\\u%04X", c);
                        put(b, esc, 6);
                }
        }
        put(b, s + run, len - run);
        put_c(b, '"');
}

size_t gw_json_int_text(long long v, char *buf) {
        char tmp[24], *p = tmp + sizeof tmp;
        unsigned long long u = v < 0 ? 0ULL - (unsigned long long) v : (unsigned long long) v;
        do
                *--p = (char) ('0' + u % 10);
        while (u /= 10);
        if (v < 0)
                *--p = '-';
        size_t n = (size_t) (tmp + sizeof tmp - p);
        memcpy(buf, p, n);
        buf[n] = '\0';
        return n;
}

size_t gw_json_real_text(double v, int precision, char *buf) {
        int n = snprintf(buf, GW_JSON_NUMBER_SIZE - 3, "%.*g", precision > 0 && precision < 32 ? precision : 17, v);
        if (n <= 0 || n >= GW_JSON_NUMBER_SIZE - 3) /* not reached: 31 digits and an exponent fit */
                return (size_t) snprintf(buf, GW_JSON_NUMBER_SIZE, "null");
        char *e = strchr(buf, 'e');
        if (!e && !strchr(buf, '.')) {
                memcpy(buf + n, ".0", 3);
                return (size_t) n + 2;
        }
        if (e) {
                char *digits = e + 1 + (e[1] == '-'), *from = e + 2;
                while (*from == '0')
                        from++;
                memmove(digits, from, strlen(from) + 1);
        }
        return strlen(buf);
}

static bool put_value(struct jbuf *b, const json_t *v, int precision, int depth) {
        if (depth > JSONOUT_MAX_DEPTH)
                return false;
        switch (json_typeof(v)) {
        case JSON_OBJECT: {
                put_c(b, '{');
                bool first = true;
                for (void *it = json_object_iter((json_t *) v); it; it = json_object_iter_next((json_t *) v, it)) {
                        if (!first)
                                put_c(b, ',');
                        first = false;
                        put_string(b, json_object_iter_key(it), json_object_iter_key_len(it));
                        put_c(b, ':');
                        if (!put_value(b, json_object_iter_value(it), precision, depth + 1))
                                return false;
                }
                put_c(b, '}');
                return true;
        }
        case JSON_ARRAY: {
                put_c(b, '[');
                for (size_t i = 0, n = json_array_size(v); i < n; i++) {
                        if (i)
                                put_c(b, ',');
                        if (!put_value(b, json_array_get(v, i), precision, depth + 1))
                                return false;
                }
                put_c(b, ']');
                return true;
        }
        case JSON_STRING:
                put_string(b, json_string_value(v), json_string_length(v));
                return true;
        case JSON_INTEGER: {
                char num[GW_JSON_NUMBER_SIZE];
                put(b, num, gw_json_int_text(json_integer_value(v), num));
                return true;
        }
        case JSON_REAL: {
                char num[GW_JSON_NUMBER_SIZE];
                put(b, num, gw_json_real_text(json_real_value(v), precision, num));
                return true;
        }
        case JSON_TRUE:
                put(b, "true", 4);
                return true;
        case JSON_FALSE:
                put(b, "false", 5);
                return true;
        case JSON_NULL:
                put(b, "null", 4);
                return true;
        }
        return false;
}

char *gw_json_compact(const json_t *v, int precision, size_t *ret_len) {
        if (!v)
                return NULL;
        struct jbuf b = { 0 };
        if (!put_value(&b, v, precision > 0 && precision < 32 ? precision : 17, 0)) {
                free(b.p);
                return NULL;
        }
        put_c(&b, '\0');
        if (ret_len)
                *ret_len = b.n - 1;
        return b.p;
}
