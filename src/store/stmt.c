/* The one-off statements of the store's smaller files (store.c keeps its frequent ones
 * prepared): preparing one, and running one that returns no rows, with the error mapped
 * before the statement is finalized so that the message is the statement's. */
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
