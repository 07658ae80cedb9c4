/* What the store's files share beyond store.h: the database handle and the errno mapping.
 * Only src/store/ includes this. */
#pragma once
#include <sqlite3.h>

#include "store/store.h"

sqlite3 *gw_store_db(struct gw_store *s);
/* checkpoint.c: WAL checkpoints on a thread with its own connection, woken by writer's
 * commits (NULL with the reason in err when it cannot start). */
struct gw_checkpointer;
struct gw_checkpointer *gw_checkpointer_start(sqlite3 *writer, char *err, size_t errlen);
struct gw_checkpointer *gw_checkpointer_stop(struct gw_checkpointer *c);
/* The last SQLite error as -errno (-ENOSPC, -EROFS, -EBUSY, -ENOMEM, -EEXIST, -EIO). */
int gw_store_sql_err(struct gw_store *s);
/* stmt.c: prepares sql on the store's connection into *ret, which the caller finalizes
 * (-errno as gw_store_sql_err's on failure, *ret untouched). */
int gw_store_prepare(struct gw_store *s, const char *sql, sqlite3_stmt **ret);
/* The smaller files' statements that run at a request's rate (a token's lookup on every
 * call of the TCP door): prepared once, at their first use, and kept with the store. */
enum gw_store_kept { GW_KEPT_TOKEN_FIND, GW_KEPT_JOB_CLOCK_PUT, _GW_KEPT_MAX };
sqlite3_stmt **gw_store_kept_slot(struct gw_store *s, enum gw_store_kept k);
/* Into *ret the kept statement k of sql, reset and unbound: the caller resets it after use
 * (gw_store_kept_done) instead of finalizing it. */
int gw_store_prepare_kept(struct gw_store *s, enum gw_store_kept k, const char *sql, sqlite3_stmt **ret);
void gw_store_kept_done(sqlite3_stmt *st);
/* Steps st, a statement that returns no rows, and finalizes it: 0 when it ran to its end. */
int gw_store_run(struct gw_store *s, sqlite3_stmt *st);
/* Finalizes st after a loop over its rows that stopped on rc, sqlite3_step's last answer: 0
 * when the rows ran to their end, else -errno as gw_store_sql_err's. */
int gw_store_rows_end(struct gw_store *s, sqlite3_stmt *st, int rc);
/* Copies column col of st's row into buf (n bytes), cut to fit; NULL reads "". */
void gw_store_column_text(sqlite3_stmt *st, int col, char *buf, size_t n);
/* Binds v, copied, to parameter i; NULL binds SQL NULL. */
void gw_store_bind_text(sqlite3_stmt *st, int i, const char *v);
/* gw_store_prepare, then binds the arguments to ?1, ?2, ... as fmt says, a letter each: 'i' an
 * int64_t (cast narrower integers: they are read as int64_t), 'd' a double, 's' a string or
 * NULL (as gw_store_bind_text). */
int gw_store_query(struct gw_store *s, const char *sql, sqlite3_stmt **ret, const char *fmt, ...);
/* gw_store_query, then gw_store_run: for a statement that returns no rows. */
int gw_store_exec(struct gw_store *s, const char *sql, const char *fmt, ...);
/* Tells the observer (the web event stream) that a booking was saved. */
void gw_store_booking_saved(struct gw_store *s, const struct gw_store_booking *b);
/* Migration k (0-based) takes the schema from user_version k to k + 1 (schema.c). */
extern const char *const gw_store_migrations[];
/* schema.c: refuses (-EPROTO, why in err) a database whose schema is newer than this build's,
 * before anything is written to it; then gw_store_migrate applies the missing migrations,
 * each in a transaction of its own. */
int gw_store_schema_check(sqlite3 *db, const char *path, char *err, size_t errlen);
int gw_store_migrate(sqlite3 *db, char *err, size_t errlen);
