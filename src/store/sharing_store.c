/* Bookings, quotas and API tokens in the store: rarely written, so each call prepares its
 * statement. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/job.h"
#include "store/store_internal.h"

int gw_store_booking_save(struct gw_store *s, struct gw_store_booking *b) {
        int r;
        if (b->id == 0) {
                if (b->created == 0)
                        b->created = gw_now_wall();
                r = gw_store_exec(s,
                                  "INSERT INTO bookings (uid, user, name, ngpus, start_time, end_time, gpu_mask, "
                                  "state, last_used, created, note, resv_drop) "
                                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                                  "issiiiiiiisi", (int64_t) b->uid, b->user, b->name, (int64_t) b->ngpus, b->start,
                                  b->end, (int64_t) b->gpu_mask, (int64_t) b->state, b->last_used, b->created, b->note,
                                  (int64_t) b->resv_drop);
                if (r == 0)
                        b->id = sqlite3_last_insert_rowid(gw_store_db(s));
        } else
                r = gw_store_exec(s,
                                  "UPDATE bookings SET ngpus = ?2, start_time = ?3, end_time = ?4, gpu_mask = ?5, "
                                  "state = ?6, last_used = ?7, note = ?8, resv_drop = ?9 WHERE id = ?1",
                                  "iiiiiiisi", b->id, (int64_t) b->ngpus, b->start, b->end, (int64_t) b->gpu_mask,
                                  (int64_t) b->state, b->last_used, b->note, (int64_t) b->resv_drop);
        if (r == 0)
                gw_store_booking_saved(s, b);
        return r;
}

int gw_store_booking_resv_dropped(struct gw_store *s, int64_t id) {
        return gw_store_exec(s, "UPDATE bookings SET resv_drop = 0 WHERE id = ?1", "i", id);
}

#define BOOKING_COLUMNS                                                                        \
        "id, uid, user, name, ngpus, start_time, end_time, gpu_mask, state, last_used, note, " \
        "created, resv_drop FROM bookings "

int gw_store_bookings(struct gw_store *s, enum gw_store_bookings_which which, gw_store_booking_cb cb, void *userdata) {
        static const char *const sql[] = {
                [GW_STORE_BOOKINGS_OPEN] = "SELECT " BOOKING_COLUMNS "WHERE state IN (0, 1, 2) ORDER BY start_time, id",
                [GW_STORE_BOOKINGS_RECENT] = "SELECT " BOOKING_COLUMNS "ORDER BY id DESC LIMIT 1000",
                [GW_STORE_BOOKINGS_RESV_DROP] = "SELECT " BOOKING_COLUMNS "WHERE resv_drop != 0 ORDER BY id",
        };
        sqlite3_stmt *st;
        if ((unsigned) which >= ELEMENTSOF(sql))
                return -EINVAL;
        int r = gw_store_prepare(s, sql[which], &st);
        if (r < 0)
                return r;
        while (sqlite3_step(st) == SQLITE_ROW) {
                struct gw_store_booking b = {
                        .id = sqlite3_column_int64(st, 0),
                        .uid = (uint32_t) sqlite3_column_int64(st, 1),
                        .ngpus = sqlite3_column_int(st, 4),
                        .start = sqlite3_column_int64(st, 5),
                        .end = sqlite3_column_int64(st, 6),
                        .gpu_mask = (uint64_t) sqlite3_column_int64(st, 7),
                        .state = sqlite3_column_int(st, 8),
                        .last_used = sqlite3_column_int64(st, 9),
                        .created = sqlite3_column_int64(st, 11),
                        .resv_drop = sqlite3_column_int(st, 12) != 0,
                };
                gw_store_column_text(st, 2, b.user, sizeof b.user);
                gw_store_column_text(st, 3, b.name, sizeof b.name);
                gw_store_column_text(st, 10, b.note, sizeof b.note);
                cb(&b, userdata);
        }
        sqlite3_finalize(st);
        return 0;
}

int gw_store_quota_set(struct gw_store *s, const char *subject, const char *key, int64_t value) {
        if (value == -1)
                return gw_store_exec(s, "DELETE FROM quotas WHERE subject = ?1 AND key = ?2", "ss", subject, key);
        return gw_store_exec(s, "INSERT OR REPLACE INTO quotas (subject, key, value) VALUES (?1, ?2, ?3)", "ssi",
                             subject, key, value);
}

int gw_store_quotas(struct gw_store *s, gw_store_quota_cb cb, void *userdata) {
        sqlite3_stmt *st;
        int r = gw_store_prepare(s, "SELECT subject, key, value FROM quotas ORDER BY subject, key", &st);
        if (r < 0)
                return r;
        while (sqlite3_step(st) == SQLITE_ROW)
                cb((const char *) sqlite3_column_text(st, 0), (const char *) sqlite3_column_text(st, 1),
                   sqlite3_column_int64(st, 2), userdata);
        sqlite3_finalize(st);
        return 0;
}

int gw_store_gpu_time_since(struct gw_store *s, uint32_t uid, gw_usec_t since, gw_usec_t now, gw_usec_t *ret) {
        sqlite3_stmt *st;
        /* GPU-time of each ended job inside [since, now].  end_time > 0: the partial index
         * jobs_end is a choice for SQLite only with its own term in the WHERE. */
        int r = gw_store_query(
                s,
                "SELECT COALESCE(SUM(ngpus * (MIN(end_time, ?3) - MAX(start_time, ?2))), 0) FROM jobs "
                "WHERE uid = ?1 AND start_time > 0 AND end_time > 0 AND end_time > ?2 AND start_time < ?3 AND "
                "end_time >= start_time AND state BETWEEN ?4 AND ?5",
                &st, "iiiii", (int64_t) uid, since, now, (int64_t) GW_JOB_COMPLETED, (int64_t) GW_JOB_RECLAIMED);
        if (r < 0)
                return r;
        int rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                *ret = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        return rc == SQLITE_ROW ? 0 : gw_store_sql_err(s);
}

int gw_store_token_add(struct gw_store *s, uint32_t uid, const char *user, const char *name, const char *hash,
                       gw_usec_t expires, const char *scope, const char *node, int64_t *ret_id) {
        int r = gw_store_exec(s,
                              "INSERT INTO tokens (uid, user, name, hash, created, expires, scope, node) "
                              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                              "isssiiss", (int64_t) uid, user, name, hash, gw_now_wall(), expires, scope ? scope : "",
                              node ? node : "");
        if (r == 0)
                *ret_id = sqlite3_last_insert_rowid(gw_store_db(s));
        return r;
}

int gw_store_token_find(struct gw_store *s, const char *hash, struct gw_store_token *ret) {
        sqlite3_stmt *st;
        int r = gw_store_prepare_kept(s, GW_KEPT_TOKEN_FIND,
                                      "SELECT id, uid, user, name, hash, created, last_used, expires, revoked, scope, "
                                      "node FROM tokens WHERE hash = ?1",
                                      &st);
        if (r < 0)
                return r;
        gw_store_bind_text(st, 1, hash);
        r = -ENOENT;
        if (sqlite3_step(st) == SQLITE_ROW) {
                memset(ret, 0, sizeof *ret);
                ret->id = sqlite3_column_int64(st, 0);
                ret->uid = (uint32_t) sqlite3_column_int64(st, 1);
                gw_store_column_text(st, 2, ret->user, sizeof ret->user);
                gw_store_column_text(st, 3, ret->name, sizeof ret->name);
                gw_store_column_text(st, 4, ret->hash, sizeof ret->hash);
                ret->created = sqlite3_column_int64(st, 5);
                ret->last_used = sqlite3_column_int64(st, 6);
                ret->expires = sqlite3_column_int64(st, 7);
                ret->revoked = sqlite3_column_int(st, 8) != 0;
                gw_store_column_text(st, 9, ret->scope, sizeof ret->scope);
                gw_store_column_text(st, 10, ret->node, sizeof ret->node);
                r = 0;
        }
        gw_store_kept_done(st);
        return r;
}

int gw_store_tokens(struct gw_store *s, bool by_uid, uint32_t uid, gw_store_token_cb cb, void *userdata) {
        sqlite3_stmt *st;
        int r = gw_store_prepare(s,
                                 by_uid ? "SELECT id, uid, user, name, created, last_used, expires, scope, node "
                                          "FROM tokens WHERE revoked = 0 AND uid = ?1 ORDER BY id"
                                        : "SELECT id, uid, user, name, created, last_used, expires, scope, node "
                                          "FROM tokens WHERE revoked = 0 ORDER BY id",
                                 &st);
        if (r < 0)
                return r;
        if (by_uid)
                sqlite3_bind_int64(st, 1, uid);
        while (sqlite3_step(st) == SQLITE_ROW) {
                struct gw_store_token t = {
                        .id = sqlite3_column_int64(st, 0),
                        .uid = (uint32_t) sqlite3_column_int64(st, 1),
                        .created = sqlite3_column_int64(st, 4),
                        .last_used = sqlite3_column_int64(st, 5),
                        .expires = sqlite3_column_int64(st, 6),
                };
                gw_store_column_text(st, 2, t.user, sizeof t.user);
                gw_store_column_text(st, 3, t.name, sizeof t.name);
                gw_store_column_text(st, 7, t.scope, sizeof t.scope);
                gw_store_column_text(st, 8, t.node, sizeof t.node);
                cb(&t, userdata);
        }
        sqlite3_finalize(st);
        return 0;
}

int gw_store_token_revoke(struct gw_store *s, int64_t id, bool by_uid, uint32_t uid) {
        int r = by_uid ? gw_store_exec(s, "UPDATE tokens SET revoked = 1 WHERE id = ?1 AND uid = ?2 AND revoked = 0",
                                       "ii", id, (int64_t) uid)
                       : gw_store_exec(s, "UPDATE tokens SET revoked = 1 WHERE id = ?1 AND revoked = 0", "i", id);
        if (r < 0)
                return r;
        return sqlite3_changes(gw_store_db(s)) ? 0 : -ENOENT;
}

int gw_store_token_used(struct gw_store *s, int64_t id) {
        return gw_store_exec(s, "UPDATE tokens SET last_used = ?2 WHERE id = ?1", "ii", id, gw_now_wall());
}
