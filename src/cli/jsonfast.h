/* A JSON reader for long replies (the job list): the same values jansson's json_loadb makes,
 * in a fraction of its time, for the JSON the daemon writes. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The value in buf[0..len), or NULL when buf is not JSON or uses what this reader leaves to
 * jansson (\u escapes, numbers jansson would refuse): the caller then asks json_loadb, which
 * also says what is wrong. */
json_t *cli_json_load_fast(const char *buf, size_t len);

/* A layout=rows reply, {"fields": [NAMES], "rows": [[VALUES], ...]}, read a row at a time:
 * 10,000 rows read whole were megabytes of jansson values, which a listing that reads a row at
 * a time into the same memory (cli/arena.h) does not need. */
struct cli_json_rows {
        const char *buf, *p, *end;
        json_t *fields; /* the names: an array, the reader's */
        size_t n; /* rows read */
        bool ended; /* the last row was read */
};
/* Reads buf[0..len) up to its first row: 0, or -EBADMSG when it does not begin as such a reply
 * does ("fields" first, then "rows"): the caller then reads it whole.  buf must outlive r. */
int cli_json_rows_open(struct cli_json_rows *r, const char *buf, size_t len);
/* The next row: 1 with *ret_row (a new reference; rows are arrays, but whatever value a row is
 * comes out) and *ret_at, its place for cli_json_rows_at; 0 after the last row, the reply's end
 * checked; -EBADMSG where it is not JSON (the caller reads it whole to say what is wrong). */
int cli_json_rows_next(struct cli_json_rows *r, json_t **ret_row, size_t *ret_at);
/* The row at at (as cli_json_rows_next gave it) again, a new reference; NULL if not JSON. */
json_t *cli_json_rows_at(const struct cli_json_rows *r, size_t at);
void cli_json_rows_done(struct cli_json_rows *r);
