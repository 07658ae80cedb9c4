/* Online backups of the database (backup.c). */
#pragma once
#include "daemon/daemon.h"

/* The model store's copy is the database copy's path with this added (an admin's backup). */
#define GW_BACKUP_MODELS_SUFFIX ".models"

/* What an admin's backup wrote. */
struct gw_backup_result {
        char path[4200]; /* the database's copy */
        uint64_t bytes;
        char models[4300]; /* the model store's copy; "" none (no model_store) */
        long model_versions;
        uint64_t model_bytes;
};

/* backup.c: online backups.  The tick ends a finished copy (answering its request) and starts
 * a scheduled one when due; it returns when it wants to run again.  conn_gone forgets a
 * request that went away; close waits for a copy under way (at shutdown). */
gw_usec_t gw_backup_tick(struct gw_daemon *d);
void gw_backup_conn_gone(struct gw_daemon *d, struct gw_http_conn *conn);
void gw_backup_close(struct gw_daemon *d);
/* An admin's backup to path (checked already), its request suspended on conn: 0 started, or
 * the HTTP status of the refusal with why (409 one is under way, 500 it cannot start).
 * answer, when conn's request is resumed: 200 with *res, or the status with why (400 the path
 * or its .models was made meanwhile, 507 the disk is full, 500 it failed, 503 the copy is not
 * this request's or not ended: the daemon is stopping).  With a model_store, the store's whole
 * versions are copied beside the database's copy (models_copy.h) once it is written. */
int gw_backup_request(struct gw_daemon *d, const char *path, struct gw_http_conn *conn, char *why, size_t n);
int gw_backup_answer(struct gw_daemon *d, struct gw_http_conn *conn, struct gw_backup_result *res, char *why, size_t n);
