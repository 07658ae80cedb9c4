/* Human output of the CLI: aligned tables, local times, short durations, safe strings. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

struct cli_table;

/* Text written through a FILE into memory (open_memstream), for code that builds a string
 * with fprintf. */
struct cli_text {
        FILE *f;
        char *buf;
        size_t len; /* what was written, once taken */
};
/* Opens t->f for writing: 0, or -ENOMEM. */
int cli_text_open(struct cli_text *t);
/* Closes t->f and hands out the text written, malloc'ed; NULL when writing it failed or when
 * ok is false (the caller's own failure), the text then freed. */
char *cli_text_take(struct cli_text *t, bool ok);

/* A table with ncols columns titled headers (copied). */
struct cli_table *cli_table_new(const char *const *headers, size_t ncols);
/* Cells longer than width display columns are cut with an ellipsis. 0: no limit. */
void cli_table_set_max_width(struct cli_table *t, size_t col, size_t width);
/* Leaves column col out of the print and of the widths, as if the table had been made
 * without it (a column known to be of no use only once the rows are in). */
void cli_table_hide_col(struct cli_table *t, size_t col);
/* Appends a row of ncols cells; copies them, NULL reads "-", control characters are
 * neutralised.  0 or -ENOMEM. */
int cli_table_add(struct cli_table *t, const char *const *cells);
/* Appends a line printed as is between the rows (copied, control characters neutralised):
 * not split into columns and not counted in their widths, so that a note under a row
 * (`gpus` lists rogue processes under their GPU) leaves the columns alone.  0 or -ENOMEM. */
int cli_table_add_line(struct cli_table *t, const char *line);
/* Rows and lines added so far. */
size_t cli_table_rows(const struct cli_table *t);
/* Display columns of column col (its header or widest cell), and of the whole table as
 * cli_table_print prints it (the free-form lines not counted). */
size_t cli_table_col_width(const struct cli_table *t, size_t col);
size_t cli_table_width(const struct cli_table *t);
/* Prints header and rows, columns padded to their widest cell, two spaces apart. */
void cli_table_print(const struct cli_table *t, FILE *f);
struct cli_table *cli_table_free(struct cli_table *t);

/* A copy of s safe to print on a terminal (gw_text_neutralize): control characters (escape
 * sequences!), bidirectional controls and bytes that are not UTF-8 become '?'.
 * malloc'ed; NULL only when out of memory. */
char *cli_sanitize(const char *s);
/* Columns s takes on a UTF-8 terminal (code points; wide glyphs count as one). */
size_t cli_display_width(const char *s);
/* How many of the first len bytes of s fit in cols display columns (counted as
 * cli_display_width does), never splitting a UTF-8 sequence. */
size_t cli_fit_bytes(const char *s, size_t len, size_t cols);

/* An instant from the API (Unix seconds) as local time: "%H:%M:%S" when it is today,
 * "%m-%d %H:%M:%S" otherwise ("%Y-%m-%d %H:%M" in another year); "-" when absent.
 * Writes at most n bytes into buf and returns buf. */
char *cli_format_time(double unix_s, time_t now, char *buf, size_t n);
/* A number of seconds as a short duration ("1h30m", "45s"); "-" when absent or negative. */
char *cli_format_secs(double secs, char *buf, size_t n);
/* Bytes as "16.0 GiB"; "-" when absent. */
char *cli_format_bytes(double bytes, char *buf, size_t n);

/* Typed reads of API objects; absent, null and wrong types read as missing. */
const char *cli_jstr(const json_t *o, const char *key);
bool cli_jint(const json_t *o, const char *key, long long *ret);
double cli_jnum(const json_t *o, const char *key); /* NAN when missing */

/* Prints a JSON value as the API gave it, indented, with a final newline.  0 or -EIO. */
int cli_print_json(const json_t *j);
