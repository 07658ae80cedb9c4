/* Online backups of the state: an admin's (POST /api/v1/admin/backup, gpuward admin backup
 * PATH; its handler is in handlers_feature.c) and the scheduled ones (backup_interval,
 * backup_keep) into STATE_DIR/backups/.
 *
 * The copy is made by the store's backup thread (store/backup.h); the loop only starts it and
 * looks, once per iteration while one runs, whether it has ended.  An admin's request is
 * suspended meanwhile and answered when the copy is complete, so "done" means the file is
 * there, whole and synced.  An admin's backup also copies the model store (model_store) beside
 * the database's copy, as PATH.models (models_copy.c), on a thread started once the database's
 * copy is written: every version the copied database knows of is in the store by then, and
 * versions never change once made.  One backup at a time: they read the same database, and two would
 * only take twice the disk bandwidth. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/thread.h"
#include "daemon/daemon.h"
#include "daemon/backup/backup.h"
#include "daemon/backup/models_copy.h"
#include "store/backup.h"

/* How often the loop looks whether a running copy has ended. */
#define POLL_USEC (20 * 1000)
#define PREFIX "gpuward-"
#define SUFFIX ".db"

struct gw_dbackup {
        struct gw_backup *b;
        struct gw_http_conn *conn; /* the admin's suspended request; NULL: scheduled or gone */
        bool scheduled;
        bool db_ended; /* the database's copy has ended */
        bool ended; /* the outcome below is known */
        int r;
        bool models_failed; /* r and why are the model store's copy's */
        uint64_t bytes;
        char why[800];
        struct gw_models_copy *models; /* the model store's copy, NULL none */
        pthread_t models_thread;
        atomic_bool models_done;
};

/* The feature's state, made at its first use and kept until gw_backup_close. */
struct gw_dbackups {
        struct gw_dbackup *copy; /* the backup being written, NULL none */
        gw_usec_t due; /* monotonic: the next scheduled backup; 0 = not set yet */
};

static struct gw_dbackup *dbackup_free(struct gw_dbackup *x) {
        if (x) {
                if (x->models) {
                        (void) pthread_join(x->models_thread, NULL);
                        (void) close(x->models->dir_fd);
                        free(x->models->store);
                        free(x->models->name);
                        free(x->models);
                }
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

static void *models_thread(void *arg) {
        struct gw_dbackup *x = arg;
        gw_models_copy_run(x->models);
        atomic_store(&x->models_done, true);
        return NULL;
}

/* An admin's backup with a model store: its copy started beside the database's; false with
 * x's outcome set when it cannot start. */
static bool start_models(struct gw_daemon *d, struct gw_dbackup *x) {
        struct gw_models_copy *c = gw_xcalloc(1, sizeof *c);
        c->dir_fd = fcntl(gw_backup_dir_fd(x->b), F_DUPFD_CLOEXEC, 3);
        if (c->dir_fd < 0) {
                free(c);
                x->r = -errno;
                snprintf(x->why, sizeof x->why, "cannot copy the model store: %s", strerror(-x->r));
                x->models_failed = true;
                return false;
        }
        c->store = gw_xstrdup(d->cfg->model_store);
        size_t n = strlen(gw_backup_base(x->b)) + sizeof GW_BACKUP_MODELS_SUFFIX;
        c->name = gw_xmalloc(n);
        snprintf(c->name, n, "%s" GW_BACKUP_MODELS_SUFFIX, gw_backup_base(x->b));
        x->models = c;
        int r = gw_thread_start(&x->models_thread, models_thread, x, "gw-backup-mod");
        if (r) {
                (void) close(c->dir_fd);
                free(c->store);
                free(c->name);
                free(c);
                x->models = NULL;
                x->r = -r;
                snprintf(x->why, sizeof x->why, "cannot start the model store's copy: %s", strerror(r));
                x->models_failed = true;
                return false;
        }
        return true;
}

/* Whether x's copies have all ended (its outcome set). */
static bool copies_ended(struct gw_daemon *d, struct gw_dbackup *x) {
        if (!x->db_ended) {
                if (!gw_backup_done(x->b, &x->r, &x->bytes, x->why, sizeof x->why))
                        return false;
                x->db_ended = true;
                if (x->r == 0 && !x->scheduled && d->cfg->model_store && *d->cfg->model_store && start_models(d, x))
                        return false;
        }
        if (!x->models)
                return true;
        if (!atomic_load(&x->models_done))
                return false;
        if (x->models->r < 0) {
                x->r = x->models->r;
                x->models_failed = true;
                snprintf(x->why, sizeof x->why, "%s", x->models->why);
        }
        return true;
}

/* A copy that ended: its request answered (resumed), or, scheduled, logged and pruned. */
static gw_usec_t ended(struct gw_daemon *d) {
        struct gw_dbackup *x = d->backup->copy;
        const char *path = gw_backup_path(x->b);
        if (x->r < 0)
                log_warn("backup to %s failed: %s%s", path, x->models_failed ? "the model store: " : "", x->why);
        else
                log_info("backup: %s written (%llu bytes)", path, (unsigned long long) x->bytes);
        if (x->models && x->r == 0)
                log_info("backup: %s%s written (%ld versions, %ld files, %llu bytes)", path, GW_BACKUP_MODELS_SUFFIX,
                         x->models->versions, x->models->files, (unsigned long long) x->models->bytes);
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
                if (!copies_ended(d, x))
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

int gw_backup_answer(struct gw_daemon *d, struct gw_http_conn *conn, struct gw_backup_result *res, char *why,
                     size_t n) {
        struct gw_dbackup *x = d->backup ? d->backup->copy : NULL;
        if (!x || x->conn != conn || !x->ended) {
                snprintf(why, n, "gpuwardd is stopping; the backup may not be complete");
                return 503;
        }
        int status = 200;
        const char *path = gw_backup_path(x->b);
        snprintf(res->path, sizeof res->path, "%s", path);
        res->bytes = x->bytes;
        res->models[0] = '\0';
        if (x->models) {
                snprintf(res->models, sizeof res->models, "%s" GW_BACKUP_MODELS_SUFFIX, path);
                res->model_versions = x->models->versions;
                res->model_bytes = x->models->bytes;
        }
        if (x->models_failed) {
                /* The database's copy is whole and stays; the answer says which half failed. */
                snprintf(why, n,
                         "%s%.200s" GW_BACKUP_MODELS_SUFFIX ": the model store's copy failed: %s (the "
                         "database's copy %.200s is whole and kept)",
                         x->r == -EEXIST ? "path: " : "", path, x->why, path);
                status = x->r == -EEXIST ? 400 : x->r == -ENOSPC ? 507 : 500;
        } else if (x->r == -EEXIST) {
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
