#include "base/text.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

void gw_say(char *buf, size_t n, const char *fmt, ...) {
        va_list ap;

        if (!buf || n == 0)
                return;
        va_start(ap, fmt);
        (void) vsnprintf(buf, n, fmt, ap);
        va_end(ap);
}

/* The length of the well-formed UTF-8 sequence at s (overlong forms and surrogates are
 * not), 0 when there is none; *ret_cp is its code point. */
static size_t utf8_decode(const unsigned char *s, uint32_t *ret_cp) {
        size_t len;
        uint32_t cp, min;
        if (s[0] < 0x80) {
                *ret_cp = s[0];
                return 1;
        }
        if ((s[0] & 0xE0) == 0xC0)
                len = 2, cp = s[0] & 0x1F, min = 0x80;
        else if ((s[0] & 0xF0) == 0xE0)
                len = 3, cp = s[0] & 0x0F, min = 0x800;
        else if ((s[0] & 0xF8) == 0xF0)
                len = 4, cp = s[0] & 0x07, min = 0x10000;
        else
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xC0) != 0x80) /* also stops at the terminating NUL */
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                return 0;
        *ret_cp = cp;
        return len;
}

/* Code points a terminal acts on instead of showing, or that reorder the text around them
 * (U+202E turns "exe.txt" into what looks like "txt.exe"). */
static bool unsafe_cp(uint32_t cp) {
        return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
               (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

size_t gw_text_neutralize(char *s) {
        if (!s)
                return 0;
        /* Printable ASCII stays as it is: most text is nothing else (a table's cells, 100,000
         * of them in a long queue), and it need not be decoded a code point at a time. */
        size_t w = 0;
        while ((unsigned char) s[w] >= 0x20 && (unsigned char) s[w] < 0x7F)
                w++;
        for (size_t r = w; s[r];) {
                uint32_t cp;
                size_t len = utf8_decode((const unsigned char *) s + r, &cp);
                if (len == 0 || unsafe_cp(cp)) {
                        s[w++] = '?';
                        r += len ? len : 1;
                        continue;
                }
                memmove(s + w, s + r, len);
                w += len;
                r += len;
        }
        s[w] = '\0';
        return w;
}

char *gw_text_private_wrap(char *dst, size_t n, const char *s) {
        if (n < 3) {
                if (n)
                        dst[0] = '\0';
                return dst;
        }
        size_t len = strlen(s ? s : "");
        if (len > n - 3) {
                len = n - 3;
                while (len > 0 && ((unsigned char) s[len] & 0xC0) == 0x80)
                        len--;
        }
        dst[0] = GW_TEXT_PRIVATE_OPEN;
        for (size_t i = 0; i < len; i++)
                dst[1 + i] = s[i] == GW_TEXT_PRIVATE_OPEN || s[i] == GW_TEXT_PRIVATE_CLOSE ? '?' : s[i];
        dst[1 + len] = GW_TEXT_PRIVATE_CLOSE;
        dst[2 + len] = '\0';
        return dst;
}

char *gw_text_private_render(const char *s, bool show, const char *instead) {
        if (!s)
                s = "";
        size_t add = instead ? strlen(instead) : 0, n = 0;
        for (const char *p = s; *p; p++)
                n += *p == GW_TEXT_PRIVATE_OPEN ? add + 1 : 1;
        char *out = gw_xmalloc(n + 1), *w = out;
        bool inside = false;
        for (const char *p = s; *p; p++) {
                if (*p == GW_TEXT_PRIVATE_OPEN && !inside) {
                        inside = true;
                        if (!show && add) {
                                memcpy(w, instead, add);
                                w += add;
                        }
                } else if (*p == GW_TEXT_PRIVATE_CLOSE && inside)
                        inside = false;
                else if (*p == GW_TEXT_PRIVATE_OPEN || *p == GW_TEXT_PRIVATE_CLOSE)
                        continue; /* a stray marker: never shown */
                else if (show || !inside)
                        *w++ = *p;
        }
        *w = '\0';
        return out;
}

bool gw_text_has_private(const char *s) {
        static const char markers[] = { GW_TEXT_PRIVATE_OPEN, GW_TEXT_PRIVATE_CLOSE, '\0' };
        return s && strpbrk(s, markers);
}

void gw_text_put_markup(FILE *f, const char *text) {
        for (const unsigned char *p = (const unsigned char *) (text ? text : ""); *p; p++) {
                switch (*p) {
                case '&':
                        fputs("&amp;", f);
                        break;
                case '<':
                        fputs("&lt;", f);
                        break;
                case '>':
                        fputs("&gt;", f);
                        break;
                case '"':
                        fputs("&quot;", f);
                        break;
                case '\'':
                        fputs("&#39;", f);
                        break;
                default:
                        if (*p >= 0x20 || *p == '\t' || *p == '\n')
                                fputc(*p, f);
                }
        }
}
