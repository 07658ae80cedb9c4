/* Human output of the CLI (see format.h). */
#include "cli/format.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "base/text.h"
#include "base/parse.h"
#include "base/time.h"

#define COL_GAP 2
#define OUT_BYTES ((size_t) 64 * 1024)

/* The cells' texts lie one after another, row after row, in one buffer, and each column's
 * width grows as rows come: a table of 10,000 rows and 12 columns was 120,000 strings
 * malloc'ed and freed one by one, and every cell measured again for each column's width. */
struct cli_table {
        size_t ncols;
        char **headers;
        size_t *max_width; /* 0: unlimited */
        size_t *widths; /* the widest cell of each column, its header's included */
        bool *hidden;
        bool *is_line; /* per row: a free-form line, one text in place of the cells */
        size_t rows, cap_rows;
        char *text; /* each cell's text, NUL-terminated */
        size_t text_len, text_cap;
};

struct cli_table *cli_table_new(const char *const *headers, size_t ncols) {
        struct cli_table *t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        t->ncols = ncols;
        t->headers = calloc(ncols ? ncols : 1, sizeof(char *));
        t->max_width = calloc(ncols ? ncols : 1, sizeof(size_t));
        t->widths = calloc(ncols ? ncols : 1, sizeof(size_t));
        t->hidden = calloc(ncols ? ncols : 1, sizeof(bool));
        if (!t->headers || !t->max_width || !t->widths || !t->hidden)
                return cli_table_free(t);
        for (size_t i = 0; i < ncols; i++) {
                t->headers[i] = strdup(headers[i]);
                if (!t->headers[i])
                        return cli_table_free(t);
                t->widths[i] = cli_display_width(t->headers[i]);
        }
        return t;
}

void cli_table_set_max_width(struct cli_table *t, size_t col, size_t width) {
        if (t && col < t->ncols)
                t->max_width[col] = width;
}

void cli_table_hide_col(struct cli_table *t, size_t col) {
        if (t && col < t->ncols)
                t->hidden[col] = true;
}

static int grow(struct cli_table *t) {
        if (t->rows < t->cap_rows)
                return 0;
        size_t ncap = t->cap_rows ? t->cap_rows * 2 : 16;
        bool *l = realloc(t->is_line, ncap * sizeof(bool));
        if (!l)
                return -ENOMEM;
        t->is_line = l;
        t->cap_rows = ncap;
        return 0;
}

/* s, neutralised (cli_sanitize), at the end of the table's text; cut to width display
 * columns (0: any), the last being an ellipsis.  Its display width, or -ENOMEM. */
static ssize_t put_text(struct cli_table *t, const char *s, size_t width) {
        size_t n = strlen(s);
        /* Room for s, an ellipsis (3 bytes) in place of its cut tail, and the NUL. */
        if (t->text_cap - t->text_len < n + 4) {
                size_t ncap = t->text_cap ? t->text_cap : 4096;
                while (ncap - t->text_len < n + 4)
                        ncap *= 2;
                char *p = realloc(t->text, ncap);
                if (!p)
                        return -ENOMEM;
                t->text = p;
                t->text_cap = ncap;
        }
        char *p = t->text + t->text_len;
        memcpy(p, s, n + 1);
        n = gw_text_neutralize(p);
        size_t w = cli_display_width(p);
        if (width && w > width) {
                n = cli_fit_bytes(p, n, width - 1);
                memcpy(p + n, "\xe2\x80\xa6", 4);
                n += 3;
                w = width;
        }
        t->text_len += n + 1;
        return (ssize_t) w;
}

int cli_table_add(struct cli_table *t, const char *const *cells) {
        if (grow(t) < 0)
                return -ENOMEM;
        size_t text_len = t->text_len;
        for (size_t i = 0; i < t->ncols; i++) {
                ssize_t w = put_text(t, cells[i] ? cells[i] : "-", t->max_width[i]);
                if (w < 0) {
                        t->text_len = text_len;
                        return -ENOMEM;
                }
                if ((size_t) w > t->widths[i])
                        t->widths[i] = (size_t) w;
        }
        t->is_line[t->rows++] = false;
        return 0;
}

int cli_table_add_line(struct cli_table *t, const char *line) {
        if (grow(t) < 0 || put_text(t, line ? line : "", 0) < 0)
                return -ENOMEM;
        t->is_line[t->rows++] = true;
        return 0;
}

size_t cli_table_rows(const struct cli_table *t) { return t->rows; }

size_t cli_table_col_width(const struct cli_table *t, size_t col) {
        return col < t->ncols && !t->hidden[col] ? t->widths[col] : 0;
}

size_t cli_table_width(const struct cli_table *t) {
        size_t sum = 0, shown = 0;
        for (size_t i = 0; i < t->ncols; i++)
                if (!t->hidden[i])
                        sum += t->widths[i] + (shown++ ? COL_GAP : 0);
        return sum;
}

/* Output gathered into large writes: a long table is hundreds of kilobytes, and a stdio call
 * per cell and per pad was a fifth of `gpuward queue`. */
struct out {
        FILE *f;
        size_t len;
        char buf[OUT_BYTES];
};

static void out_flush(struct out *o) {
        if (o->len)
                (void) fwrite(o->buf, 1, o->len, o->f);
        o->len = 0;
}

static void out_put(struct out *o, const char *s, size_t n) {
        if (n > OUT_BYTES - o->len) {
                out_flush(o);
                if (n > OUT_BYTES) {
                        (void) fwrite(s, 1, n, o->f);
                        return;
                }
        }
        memcpy(o->buf + o->len, s, n);
        o->len += n;
}

static void out_spaces(struct out *o, size_t n) {
        static const char spaces[] = "                                                                ";
        for (size_t k; n > 0; n -= k) {
                k = n < sizeof spaces - 1 ? n : sizeof spaces - 1;
                out_put(o, spaces, k);
        }
}

/* The row whose first cell is at *text, each cell but the last padded to its column's width
 * and gap, hidden columns left out; *text is then past the row.  cells: the header's texts,
 * instead of the table's. */
static void print_row(const struct cli_table *t, const char **text, char *const *cells, size_t gap, struct out *o) {
        size_t last = t->ncols;
        while (last > 0 && t->hidden[last - 1])
                last--;
        for (size_t i = 0; i < t->ncols; i++) {
                const char *s = cells ? cells[i] : *text;
                size_t n = strlen(s);
                if (!cells)
                        *text += n + 1;
                if (t->hidden[i] || i >= last)
                        continue;
                out_put(o, s, n);
                if (i + 1 < last)
                        out_spaces(o, t->widths[i] + gap - cli_display_width(s));
        }
        out_put(o, "\n", 1);
}

void cli_table_print(const struct cli_table *t, FILE *f) {
        struct out *o = malloc(sizeof *o);
        if (!o)
                return;
        o->f = f;
        o->len = 0;
        size_t total = 0, shown = 0;
        for (size_t i = 0; i < t->ncols; i++)
                if (!t->hidden[i]) {
                        total += t->widths[i];
                        shown++;
                }
        /* Narrower gaps before a line passes 80 columns: a table stays one line a row in a
         * default terminal as long as its cells allow. */
        size_t gap = shown && total + (shown - 1) * COL_GAP > 80 ? 1 : COL_GAP;
        const char *text = t->text;
        print_row(t, &text, t->headers, gap, o);
        for (size_t r = 0; r < t->rows; r++) {
                if (!t->is_line[r]) {
                        print_row(t, &text, NULL, gap, o);
                        continue;
                }
                size_t n = strlen(text);
                out_put(o, text, n);
                out_put(o, "\n", 1);
                text += n + 1;
        }
        out_flush(o);
        free(o);
}

struct cli_table *cli_table_free(struct cli_table *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; t->headers && i < t->ncols; i++)
                free(t->headers[i]);
        free(t->headers);
        free(t->max_width);
        free(t->widths);
        free(t->hidden);
        free(t->is_line);
        free(t->text);
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
