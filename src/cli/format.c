/* Human output of the CLI (see format.h). */
#include "cli/format.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "base/parse.h"
#include "base/time.h"

#define COL_GAP 2

struct cli_table {
        size_t ncols;
        char **headers;
        size_t *max_width; /* 0: unlimited */
        char **cells; /* rows * ncols */
        bool *is_line; /* per row: a free-form line in cells[row * ncols], the rest NULL */
        size_t rows, cap_rows;
};

struct cli_table *cli_table_new(const char *const *headers, size_t ncols) {
        struct cli_table *t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        t->ncols = ncols;
        t->headers = calloc(ncols, sizeof(char *));
        t->max_width = calloc(ncols, sizeof(size_t));
        if (!t->headers || !t->max_width)
                return cli_table_free(t);
        for (size_t i = 0; i < ncols; i++) {
                t->headers[i] = strdup(headers[i]);
                if (!t->headers[i])
                        return cli_table_free(t);
        }
        return t;
}

void cli_table_set_max_width(struct cli_table *t, size_t col, size_t width) {
        if (t && col < t->ncols)
                t->max_width[col] = width;
}

/* s cut to at most width display columns, the last being an ellipsis.  Takes s; returns
 * it or a new string, NULL when out of memory. */
static char *truncated(char *s, size_t width) {
        if (!s || width == 0 || cli_display_width(s) <= width)
                return s;
        size_t cols = 0;
        const char *p = s;
        for (; *p; p++) {
                if (((unsigned char) *p & 0xC0) == 0x80)
                        continue;
                if (cols == width - 1)
                        break;
                cols++;
        }
        char *out = NULL;
        if (asprintf(&out, "%.*s\xe2\x80\xa6", (int) (p - s), s) < 0)
                out = NULL;
        free(s);
        return out;
}

static int grow(struct cli_table *t) {
        if (t->rows < t->cap_rows)
                return 0;
        size_t ncap = t->cap_rows ? t->cap_rows * 2 : 16;
        char **p = realloc(t->cells, ncap * t->ncols * sizeof(char *));
        if (!p)
                return -ENOMEM;
        t->cells = p;
        bool *l = realloc(t->is_line, ncap * sizeof(bool));
        if (!l)
                return -ENOMEM;
        t->is_line = l;
        t->cap_rows = ncap;
        return 0;
}

int cli_table_add(struct cli_table *t, const char *const *cells) {
        if (grow(t) < 0)
                return -ENOMEM;
        char **row = t->cells + t->rows * t->ncols;
        for (size_t i = 0; i < t->ncols; i++) {
                row[i] = truncated(cli_sanitize(cells[i] ? cells[i] : "-"), t->max_width[i]);
                if (!row[i]) {
                        while (i-- > 0)
                                free(row[i]);
                        return -ENOMEM;
                }
        }
        t->is_line[t->rows++] = false;
        return 0;
}

int cli_table_add_line(struct cli_table *t, const char *line) {
        if (grow(t) < 0)
                return -ENOMEM;
        char **row = t->cells + t->rows * t->ncols;
        row[0] = cli_sanitize(line);
        if (!row[0])
                return -ENOMEM;
        for (size_t i = 1; i < t->ncols; i++)
                row[i] = NULL;
        t->is_line[t->rows++] = true;
        return 0;
}

size_t cli_table_rows(const struct cli_table *t) { return t->rows; }

static void print_row(char *const *row, const size_t *widths, size_t ncols, size_t gap, FILE *f) {
        for (size_t i = 0; i < ncols; i++) {
                fputs(row[i], f);
                if (i + 1 == ncols)
                        break;
                size_t w = cli_display_width(row[i]);
                size_t pad = widths[i] + gap - w;
                fprintf(f, "%*s", (int) (pad < INT_MAX ? pad : INT_MAX), "");
        }
        fputc('\n', f);
}

/* Display width of column col: its header or widest cell. */
size_t cli_table_col_width(const struct cli_table *t, size_t col) {
        if (col >= t->ncols)
                return 0;
        size_t width = cli_display_width(t->headers[col]);
        for (size_t r = 0; r < t->rows; r++) {
                if (t->is_line[r])
                        continue;
                size_t w = cli_display_width(t->cells[r * t->ncols + col]);
                if (w > width)
                        width = w;
        }
        return width;
}

size_t cli_table_width(const struct cli_table *t) {
        size_t sum = 0;
        for (size_t i = 0; i < t->ncols; i++)
                sum += cli_table_col_width(t, i) + (i ? COL_GAP : 0);
        return sum;
}

void cli_table_print(const struct cli_table *t, FILE *f) {
        size_t *widths = calloc(t->ncols ? t->ncols : 1, sizeof(size_t));
        if (!widths)
                return;
        size_t total = 0;
        for (size_t i = 0; i < t->ncols; i++)
                total += widths[i] = cli_table_col_width(t, i);
        /* Narrower gaps before a line passes 80 columns: a table stays one line a row in a
         * default terminal as long as its cells allow. */
        size_t gap = t->ncols && total + (t->ncols - 1) * COL_GAP > 80 ? 1 : COL_GAP;
        print_row(t->headers, widths, t->ncols, gap, f);
        for (size_t r = 0; r < t->rows; r++) {
                if (t->is_line[r])
                        fprintf(f, "%s\n", t->cells[r * t->ncols]);
                else
                        print_row(t->cells + r * t->ncols, widths, t->ncols, gap, f);
        }
        free(widths);
}

struct cli_table *cli_table_free(struct cli_table *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; t->headers && i < t->ncols; i++)
                free(t->headers[i]);
        for (size_t i = 0; i < t->rows * t->ncols; i++)
                free(t->cells[i]);
        free(t->headers);
        free(t->max_width);
        free(t->cells);
        free(t->is_line);
        free(t);
        return NULL;
}

char *cli_sanitize(const char *s) {
        char *out = strdup(s ? s : "");
        if (out)
                (void) gw_text_neutralize(out);
        return out;
}

size_t cli_display_width(const char *s) {
        size_t n = 0;
        for (; *s; s++)
                if (((unsigned char) *s & 0xC0) != 0x80)
                        n++;
        return n;
}

size_t cli_fit_bytes(const char *s, size_t len, size_t cols) {
        size_t i = 0, used = 0;
        while (i < len) {
                size_t next = i + 1;
                while (next < len && ((unsigned char) s[next] & 0xC0) == 0x80)
                        next++;
                if (used == cols)
                        break;
                used++;
                i = next;
        }
        return i;
}

char *cli_format_time(double unix_s, time_t now, char *buf, size_t n) {
        if (!isfinite(unix_s) || unix_s <= 0 || unix_s > 1e15) {
                snprintf(buf, n, "-");
                return buf;
        }
        time_t t = (time_t) unix_s;
        struct tm tm, tm_now;
        if (!localtime_r(&t, &tm) || !localtime_r(&now, &tm_now)) {
                snprintf(buf, n, "-");
                return buf;
        }
        size_t k;
        /* Literal formats only: the compiler checks them. */
        if (tm.tm_year != tm_now.tm_year)
                k = strftime(buf, n, "%Y-%m-%d %H:%M", &tm);
        else if (tm.tm_yday == tm_now.tm_yday)
                k = strftime(buf, n, "%H:%M:%S", &tm);
        else
                k = strftime(buf, n, "%m-%d %H:%M:%S", &tm);
        if (k == 0)
                snprintf(buf, n, "-");
        return buf;
}

char *cli_format_secs(double secs, char *buf, size_t n) {
        if (!isfinite(secs) || secs < 0 || secs > 1e12) {
                snprintf(buf, n, "-");
                return buf;
        }
        /* Rounded by hand, not llround: that one function would make every gpuward command
         * load libm (secs is finite and not negative here). */
        return gw_format_duration((gw_usec_t) (secs + 0.5) * GW_USEC_PER_SEC, buf, n);
}

char *cli_format_bytes(double bytes, char *buf, size_t n) {
        if (!isfinite(bytes) || bytes < 0 || bytes > 1.8e19) {
                snprintf(buf, n, "-");
                return buf;
        }
        return gw_format_size((uint64_t) bytes, buf, n);
}

const char *cli_jstr(const json_t *o, const char *key) { return json_string_value(json_object_get(o, key)); }

bool cli_jint(const json_t *o, const char *key, long long *ret) {
        const json_t *v = json_object_get(o, key);
        if (json_is_integer(v)) {
                *ret = (long long) json_integer_value(v);
                return true;
        }
        if (json_is_real(v) && fabs(json_real_value(v)) < 9e18) {
                *ret = (long long) json_real_value(v);
                return true;
        }
        return false;
}

double cli_jnum(const json_t *o, const char *key) {
        const json_t *v = json_object_get(o, key);
        return json_is_number(v) ? json_number_value(v) : NAN;
}

int cli_print_json(const json_t *j) {
        if (json_dumpf(j, stdout, JSON_INDENT(2) | JSON_ENCODE_ANY) < 0)
                return -EIO;
        fputc('\n', stdout);
        return 0;
}

int cli_text_open(struct cli_text *t) {
        *t = (struct cli_text){ 0 };
        t->f = open_memstream(&t->buf, &t->len);
        return t->f ? 0 : -ENOMEM;
}

char *cli_text_take(struct cli_text *t, bool ok) {
        if (fclose(t->f) != 0 || !ok) {
                free(t->buf);
                t->buf = NULL;
        }
        t->f = NULL;
        return t->buf;
}
