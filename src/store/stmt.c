/* The one-off statements of the store's smaller files (store.c keeps its frequent ones
 * prepared): preparing one, binding its parameters, running one that returns no rows, and
 * ending a loop over one that does, with the error mapped before the statement is finalized so
 * that the message is the statement's. */
#include <stdarg.h>
#include <stdio.h>

#include "store/store_internal.h"

int gw_store_prepare(struct gw_store *s, const char *sql, sqlite3_stmt **ret) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(gw_store_db(s), sql, -1, &st, NULL) != SQLITE_OK)
                return gw_store_sql_err(s);
        *ret = st;
        return 0;
}

int gw_store_prepare_kept(struct gw_store *s, enum gw_store_kept k, const char *sql, sqlite3_stmt **ret) {
        sqlite3_stmt **slot = gw_store_kept_slot(s, k);
        if (!*slot && sqlite3_prepare_v3(gw_store_db(s), sql, -1, SQLITE_PREPARE_PERSISTENT, slot, NULL) != SQLITE_OK)
                return gw_store_sql_err(s);
        *ret = *slot;
        return 0;
}

void gw_store_kept_done(sqlite3_stmt *st) {
        (void) sqlite3_reset(st);
        (void) sqlite3_clear_bindings(st);
}

int gw_store_run(struct gw_store *s, sqlite3_stmt *st) {
        int r = sqlite3_step(st) == SQLITE_DONE ? 0 : gw_store_sql_err(s);
        sqlite3_finalize(st);
        return r;
}

int gw_store_rows_end(struct gw_store *s, sqlite3_stmt *st, int rc) {
        int r = rc == SQLITE_DONE ? 0 : gw_store_sql_err(s);
        sqlite3_finalize(st);
        return r;
}

void gw_store_column_text(sqlite3_stmt *st, int col, char *buf, size_t n) {
        const unsigned char *t = sqlite3_column_text(st, col);
        snprintf(buf, n, "%s", t ? (const char *) t : "");
}

void gw_store_bind_text(sqlite3_stmt *st, int i, const char *v) {
        if (v)
                sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
        else
                sqlite3_bind_null(st, i);
}

static int prepare_bound(struct gw_store *s, const char *sql, sqlite3_stmt **ret, const char *fmt, va_list ap) {
        sqlite3_stmt *st = NULL;
        int r = gw_store_prepare(s, sql, &st);
        if (r < 0)
                return r;
        for (int i = 1; fmt[i - 1]; i++) {
                if (fmt[i - 1] == 'i')
                        sqlite3_bind_int64(st, i, va_arg(ap, int64_t));
                else if (fmt[i - 1] == 'd')
                        sqlite3_bind_double(st, i, va_arg(ap, double));
                else
                        gw_store_bind_text(st, i, va_arg(ap, const char *));
        }
        *ret = st;
        return 0;
}

int gw_store_query(struct gw_store *s, const char *sql, sqlite3_stmt **ret, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = prepare_bound(s, sql, ret, fmt, ap);
        va_end(ap);
        return r;
}

int gw_store_exec(struct gw_store *s, const char *sql, const char *fmt, ...) {
        sqlite3_stmt *st = NULL;
        va_list ap;
        va_start(ap, fmt);
        int r = prepare_bound(s, sql, &st, fmt, ap);
        va_end(ap);
        return r < 0 ? r : gw_store_run(s, st);
}
