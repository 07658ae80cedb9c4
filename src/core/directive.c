#include "core/directive.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

#define MAX_WORDS 256

struct words {
        char **v;
        int n;
};

static void words_clear(struct words *w) {
        for (int i = 0; i < w->n; i++)
                free(w->v[i]);
        free(w->v);
        w->v = NULL;
        w->n = 0;
}

static int words_push(struct words *w, const char *s, size_t len, int base) {
        if (base + w->n >= MAX_WORDS)
                return -E2BIG;
        w->v = gw_xrealloc(w->v, (size_t) (w->n + 1) * sizeof(char *));
        char *copy = gw_xmalloc(len + 1);
        memcpy(copy, s, len);
        copy[len] = '\0';
        w->v[w->n++] = copy;
        return 0;
}

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* Splits [p, end) into words, shell style: '…' is literal, "…" allows \" and \\, a
 * backslash outside quotes escapes the next character, and an unquoted # at the start of
 * a word comments out the rest, so "#GPUWARD --gpus 2  # two" works. */
static int split_line(const char *p, const char *end, struct words *w, int base) {
        /* No word is longer than its line. */
        _cleanup_free_ char *scratch = gw_xmalloc((size_t) (end - p) + 1);

        for (;;) {
                while (p < end && is_blank(*p))
                        p++;
                if (p == end || *p == '#')
                        return 0;

                size_t len = 0;
                char quote = 0;
                for (; p < end && (quote || !is_blank(*p)); p++) {
                        if (quote && *p == quote)
                                quote = 0;
                        else if (!quote && (*p == '\'' || *p == '"'))
                                quote = *p;
                        else if (*p == '\\' && quote != '\'' && p + 1 < end && (!quote || p[1] == '"' || p[1] == '\\'))
                                scratch[len++] = *++p;
                        else
                                scratch[len++] = *p;
                }
                if (quote)
                        return -EINVAL;
                int r = words_push(w, scratch, len, base);
                if (r < 0)
                        return r;
        }
}

enum line_kind { LINE_BLANK, LINE_COMMENT, LINE_DIRECTIVE, LINE_CODE };

/* Classifies a line and, for a directive, points *ret_args past the prefix. */
static enum line_kind classify(const char *p, const char *end, const char *prefix, const char **ret_args) {
        const size_t plen = strlen(prefix);

        while (p < end && is_blank(*p))
                p++;
        if (p == end)
                return LINE_BLANK;
        if (*p != '#')
                return LINE_CODE;
        if ((size_t) (end - p) >= plen && memcmp(p, prefix, plen) == 0 && (p + plen == end || is_blank(p[plen]))) {
                *ret_args = p + plen;
                return LINE_DIRECTIVE;
        }
        return LINE_COMMENT;
}

/* Moves the parsed words onto the end of the caller's vector. */
static void words_append_to(struct words *w, char ***argv, int *argc) {
        int base = *argv ? *argc : 0;
        char **v = gw_xrealloc(*argv, (size_t) (base + w->n + 1) * sizeof(char *));

        if (w->n > 0)
                memcpy(v + base, w->v, (size_t) w->n * sizeof(char *));
        v[base + w->n] = NULL;
        *argv = v;
        *argc = base + w->n;
        free(w->v);
        w->v = NULL;
        w->n = 0;
}

int gw_directives_parse(const char *text, char ***argv, int *argc, int *ret_line) {
        return gw_directives_parse_prefix(text, "#GPUWARD", argv, argc, ret_line);
}

int gw_directives_parse_prefix(const char *text, const char *prefix, char ***argv, int *argc, int *ret_line) {
        struct words w = { NULL, 0 };
        int base, lines = 0, line_no = 0, r = 0;

        if (!text || !prefix || prefix[0] != '#' || !argv || !argc || (*argv && *argc < 0))
                return -EINVAL;
        base = *argv ? *argc : 0;

        for (const char *p = text; *p;) {
                const char *eol = strchr(p, '\n');
                const char *end = eol ? eol : p + strlen(p);
                const char *args = NULL;

                line_no++;
                enum line_kind k = classify(p, end, prefix, &args);
                if (k == LINE_CODE)
                        break;
                if (k == LINE_DIRECTIVE) {
                        r = split_line(args, end, &w, base);
                        if (r < 0)
                                break;
                        lines++;
                }
                p = eol ? eol + 1 : end;
        }
        if (r < 0) {
                words_clear(&w);
                if (ret_line)
                        *ret_line = line_no;
                return r;
        }
        words_append_to(&w, argv, argc);
        return lines;
}

void gw_strv_free(char **v) {
        if (!v)
                return;
        for (char **p = v; *p; p++)
                free(*p);
        free(v);
}
