/* Online backups of the state: an admin's (POST /api/v1/admin/backup, gpuward admin backup
 * PATH; its handler is in handlers_feature.c) and the scheduled ones (backup_interval,
 * backup_keep) into STATE_DIR/backups/.
 *
 * The copy is made by the store's backup thread (store/backup.h); the loop only starts it and
 * looks, once per iteration while one runs, whether it has ended.  An admin's request is
 * suspended meanwhile and answered when the copy is complete, so "done" means the file is
 * there, whole and synced.  One backup at a time: they read the same database, and two would
 * only take twice the disk bandwidth. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "daemon/daemon.h"
#include "daemon/backup/backup.h"
#include "store/backup.h"

/* How often the loop looks whether a running copy has ended. */
#define POLL_USEC (20 * 1000)
#define PREFIX "gpuward-"
#define SUFFIX ".db"

struct gw_dbackup {
        struct gw_backup *b;
        struct gw_http_conn *conn; /* the admin's suspended request; NULL: scheduled or gone */
        bool scheduled;
        bool ended; /* the outcome below is known */
        int r;
        uint64_t bytes;
        char why[512];
};

/* The feature's state, made at its first use and kept until gw_backup_close. */
struct gw_dbackups {
        struct gw_dbackup *copy; /* the backup being written, NULL none */
        gw_usec_t due; /* monotonic: the next scheduled backup; 0 = not set yet */
};

static struct gw_dbackup *dbackup_free(struct gw_dbackup *x) {
        if (x) {
                x->b = gw_backup_free(x->b);
                free(x);
        }
        return NULL;
}

static struct gw_dbackups *state(struct gw_daemon *d) {
        if (!d->backup)
                d->backup = gw_xcalloc(1, sizeof *d->backup);
        return d->backup;
}

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *) a, *(char *const *) b); }

/* Removes the oldest scheduled backups past backup_keep.  Their names sort by time. */
static void prune(struct gw_daemon *d, const char *dir) {
        DIR *dp = opendir(dir);
        if (!dp)
                return;
        char **names = NULL;
        size_t n = 0, cap = 0;
        for (struct dirent *e; (e = readdir(dp));) {
                size_t len = strlen(e->d_name);
                if (strncmp(e->d_name, PREFIX, strlen(PREFIX)) || len < strlen(SUFFIX) ||
                    strcmp(e->d_name + len - strlen(SUFFIX), SUFFIX))
                        continue;
                if (n == cap)
                        names = gw_xrealloc(names, (cap = cap ? 2 * cap : 16) * sizeof *names);
                names[n++] = gw_xstrdup(e->d_name);
        }
        (void) closedir(dp);
        qsort(names, n, sizeof *names, name_cmp);
        for (size_t i = 0; i < n; i++) {
                if (i + (size_t) d->cfg->backup_keep < n) {
                        char path[4400];
                        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
                        if (unlink(path) < 0)
                                log_warn("backup: cannot remove %s (past backup_keep %d): %s", path,
                                         d->cfg->backup_keep, strerror(errno));
                }
                free(names[i]);
        }
        free(names);
}

static int start(struct gw_daemon *d, const char *path, struct gw_http_conn *conn, char *err, size_t errlen) {
        struct gw_backup *b;
        int r = gw_backup_start(d->store, path, &b, err, errlen);
        if (r < 0)
                return r;
        struct gw_dbackup *x = gw_xcalloc(1, sizeof *x);
        x->b = b;
        x->conn = conn;
        x->scheduled = !conn;
        state(d)->copy = x;
        return 0;
}

static void start_scheduled(struct gw_daemon *d) {
        char dir[4200], path[4400], err[600];
        snprintf(dir, sizeof dir, "%s/backups", d->cfg->state_dir);
        if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
                log_warn("backup: cannot make %s: %s; no scheduled backup", dir, strerror(errno));
                return;
        }
        /* UTC with milliseconds: names sort by time, and two never share one. */
        time_t sec = (time_t) (d->now_wall / GW_USEC_PER_SEC);
        struct tm tm;
        char stamp[32];
        (void) gmtime_r(&sec, &tm);
        (void) strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);
        snprintf(path, sizeof path, "%s/" PREFIX "%s.%03dZ" SUFFIX, dir, stamp,
                 (int) (d->now_wall % GW_USEC_PER_SEC / 1000));
        if (start(d, path, NULL, err, sizeof err) < 0)
                log_warn("backup: %s", err);
}

/* A copy that ended: its request answered (resumed), or, scheduled, logged and pruned. */
static gw_usec_t ended(struct gw_daemon *d) {
        struct gw_dbackup *x = d->backup->copy;
        const char *path = gw_backup_path(x->b);
        if (x->r < 0)
                log_warn("backup to %s failed: %s", path, x->why);
        else
                log_info("backup: %s written (%llu bytes)", path, (unsigned long long) x->bytes);
        if (x->conn) { /* the handler, called again, takes it */
                gw_http_conn_resume(x->conn);
                return d->now;
        }
        if (x->scheduled && x->r == 0) {
                char dir[4200];
                snprintf(dir, sizeof dir, "%s/backups", d->cfg->state_dir);
                prune(d, dir);
        }
        d->backup->copy = dbackup_free(x);
        return GW_USEC_INFINITY;
}

gw_usec_t gw_backup_tick(struct gw_daemon *d) {
        gw_usec_t next = GW_USEC_INFINITY;
        struct gw_dbackup *x = d->backup ? d->backup->copy : NULL;
        if (x && !x->ended) {
                if (!gw_backup_done(x->b, &x->r, &x->bytes, x->why, sizeof x->why))
                        return d->now + POLL_USEC;
                x->ended = true;
                next = ended(d);
        }
        if (d->cfg->backup_interval <= 0)
                return next;
        struct gw_dbackups *s = state(d); /* made only where backups are scheduled or asked for */
        if (!s->due)
                s->due = d->now + d->cfg->backup_interval;
        if (d->now >= s->due) {
                /* One that falls due while an admin's copy is under way is skipped. */
                s->due = d->now + d->cfg->backup_interval;
                if (!s->copy)
                        start_scheduled(d);
                if (s->copy && !s->copy->ended)
                        return d->now + POLL_USEC;
        }
        return next < s->due ? next : s->due;
}

void gw_backup_conn_gone(struct gw_daemon *d, struct gw_http_conn *conn) {
        struct gw_dbackup *x = d->backup ? d->backup->copy : NULL;
        if (!x || x->conn != conn)
                return;
        x->conn = NULL;
        if (x->ended) /* resumed, and gone before the handler ran again */
                d->backup->copy = dbackup_free(x);
}

void gw_backup_close(struct gw_daemon *d) {
        if (!d->backup)
                return;
        d->backup->copy = dbackup_free(d->backup->copy); /* waits for a copy under way */
        free(d->backup);
        d->backup = NULL;
}

/* An admin's request, suspended on conn until the copy is written (handlers_feature.c). */
int gw_backup_request(struct gw_daemon *d, const char *path, struct gw_http_conn *conn, char *why, size_t n) {
        struct gw_dbackup *cur = state(d)->copy;
        if (cur) {
                snprintf(why, n, "a backup is being written already (to %.200s); ask again when it is done",
                         gw_backup_path(cur->b));
                return 409;
        }
        char err[600];
        int r = start(d, path, conn, err, sizeof err);
        if (r == -EPERM || r == -ENOENT || r == -ENOTDIR) { /* the folder asked for: err names the field */
                snprintf(why, n, "%s", err);
                return 400;
        }
        if (r < 0) {
                snprintf(why, n, "backup: %s", err);
                return 500;
        }
        return 0;
}

int gw_backup_answer(struct gw_daemon *d, struct gw_http_conn *conn, char *path, size_t path_n, uint64_t *bytes,
                     char *why, size_t n) {
        struct gw_dbackup *x = d->backup ? d->backup->copy : NULL;
        if (!x || x->conn != conn || !x->ended) {
                snprintf(why, n, "gpuwardd is stopping; the backup may not be complete");
                return 503;
        }
        int status = 200;
        snprintf(path, path_n, "%s", gw_backup_path(x->b));
        *bytes = x->bytes;
        if (x->r == -EEXIST) {
                snprintf(why, n, "path: %.200s exists now (made while the copy was written); the copy was not kept",
                         path);
                status = 400;
        } else if (x->r < 0) {
                snprintf(why, n, "backup to %.200s failed: %s", path, x->why);
                status = x->r == -ENOSPC ? 507 : 500;
        }
        d->backup->copy = dbackup_free(x);
        return status;
}
