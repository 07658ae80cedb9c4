/* Online backups with SQLite's backup API (sqlite3_backup_init/step/finish), on a thread of
 * their own, as the WAL checkpoints are: the loop only starts one and looks whether it has
 * ended.  The thread reads through a connection of its own: under WAL a reader neither
 * waits for the writer nor blocks it, and one sqlite3_backup_step(-1) copies every page in
 * one read transaction, so the copy is the database as of that transaction's start — every
 * commit before it, none after. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/thread.h"
#include "store/backup.h"
#include "store/store_internal.h"

struct gw_backup {
        pthread_t thread;
        bool started;
        char *src;          /* the database file */
        char *path;         /* where the copy goes */
        char *tmp;          /* written here, renamed to path when complete */
        atomic_bool done;
        int r;              /* read only once done */
        uint64_t bytes;
        char why[512];
};

static int sql_errno(int rc) {
        switch (rc & 0xff) {
        case SQLITE_FULL: return -ENOSPC;
        case SQLITE_READONLY: return -EROFS;
        case SQLITE_CANTOPEN: return -EACCES;
        case SQLITE_NOMEM: return -ENOMEM;
        case SQLITE_BUSY: case SQLITE_LOCKED: return -EBUSY;
        default: return -EIO;
        }
}

/* The copy itself; 0 or -errno with why set. */
static int copy(struct gw_backup *b) {
        sqlite3 *from = NULL, *to = NULL;
        int r = 0, rc;
        if ((rc = sqlite3_open_v2(b->src, &from, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL)) != SQLITE_OK) {
                snprintf(b->why, sizeof b->why, "cannot open the database: %s", from ? sqlite3_errmsg(from) : "no memory");
                r = sql_errno(rc);
                goto out;
        }
        (void) sqlite3_busy_timeout(from, 5000);
        if ((rc = sqlite3_open_v2(b->tmp, &to, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL)) != SQLITE_OK) {
                snprintf(b->why, sizeof b->why, "cannot open %s: %s", b->tmp, to ? sqlite3_errmsg(to) : "no memory");
                r = sql_errno(rc);
                goto out;
        }
        sqlite3_backup *bk = sqlite3_backup_init(to, "main", from, "main");
        if (!bk) {
                snprintf(b->why, sizeof b->why, "cannot start the backup: %s", sqlite3_errmsg(to));
                r = sql_errno(sqlite3_errcode(to));
                goto out;
        }
        /* Busy: the file's locks were taken at that very moment; tried again a few times. */
        for (int i = 0; i < 50; i++) {
                rc = sqlite3_backup_step(bk, -1);
                if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED)
                        break;
                sqlite3_sleep(100);
        }
        int fin = sqlite3_backup_finish(bk);
        if (rc != SQLITE_DONE || fin != SQLITE_OK) {
                snprintf(b->why, sizeof b->why, "copying the database failed: %s", sqlite3_errmsg(to));
                r = sql_errno(rc != SQLITE_DONE ? rc : fin);
                goto out;
        }
        /* A copy of a WAL database is one too; the copy is a single file whatever its mode. */
        if (sqlite3_exec(to, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL) != SQLITE_OK) {
                snprintf(b->why, sizeof b->why, "finishing the copy failed: %s", sqlite3_errmsg(to));
                r = sql_errno(sqlite3_errcode(to));
        }
out:
        sqlite3_close(from);
        sqlite3_close(to);
        return r;
}

/* Syncs the copy, then gives it its name: a reader of path never sees a partial copy. */
static int publish(struct gw_backup *b) {
        int fd = open(b->tmp, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fsync(fd) < 0 || fstat(fd, &st) < 0) {
                int e = errno;
                if (fd >= 0)
                        (void) close(fd);
                snprintf(b->why, sizeof b->why, "syncing %s failed: %s", b->tmp, strerror(e));
                return -e;
        }
        (void) close(fd);
        b->bytes = (uint64_t) st.st_size;
        if (renameat2(AT_FDCWD, b->tmp, AT_FDCWD, b->path, RENAME_NOREPLACE) < 0) {
                int e = errno;
                snprintf(b->why, sizeof b->why, "%s", e == EEXIST ? "path: it exists now (made while the copy was written)"
                                                                  : strerror(e));
                return -e;
        }
        return 0;
}

static void *run(void *arg) {
        struct gw_backup *b = arg;
        int r = copy(b);
        if (r == 0)
                r = publish(b);
        if (r < 0)
                (void) unlink(b->tmp);
        b->r = r;
        atomic_store(&b->done, true);
        return NULL;
}

struct gw_backup *gw_backup_start(struct gw_store *s, const char *path, char *err, size_t errlen) {
        const char *src = sqlite3_db_filename(gw_store_db(s), "main");
        if (!src || !*src) {
                snprintf(err, errlen, "the database has no file to copy");
                return NULL;
        }
        struct gw_backup *b = gw_xcalloc(1, sizeof *b);
        b->src = gw_xstrdup(src);
        b->path = gw_xstrdup(path);
        size_t n = strlen(path) + 32;
        b->tmp = gw_xmalloc(n);
        snprintf(b->tmp, n, "%s.partial-%ld", path, (long) getpid());
        /* Made here, exclusively and private (the copy holds every job's environment and the
         * tokens' hashes), so the thread's SQLite only fills it. */
        int fd = open(b->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) {
                snprintf(err, errlen, "cannot create %s: %s", b->tmp, strerror(errno));
                return gw_backup_free(b);
        }
        (void) close(fd);
        int e = gw_thread_start(&b->thread, run, b, "gw-backup");
        if (e != 0) {
                snprintf(err, errlen, "cannot start the backup thread: %s", strerror(e));
                (void) unlink(b->tmp);
                return gw_backup_free(b);
        }
        b->started = true;
        return b;
}

bool gw_backup_done(struct gw_backup *b, int *ret_r, uint64_t *ret_bytes, char *why, size_t whylen) {
        if (!atomic_load(&b->done))
                return false;
        *ret_r = b->r;
        *ret_bytes = b->bytes;
        snprintf(why, whylen, "%s", b->r < 0 ? b->why : "");
        return true;
}

const char *gw_backup_path(const struct gw_backup *b) { return b->path; }

struct gw_backup *gw_backup_free(struct gw_backup *b) {
        if (!b)
                return NULL;
        if (b->started)
                (void) pthread_join(b->thread, NULL);
        free(b->src);
        free(b->path);
        free(b->tmp);
        free(b);
        return NULL;
}
