/* Online backups with SQLite's backup API (sqlite3_backup_init/step/finish), on a thread of
 * their own, as the WAL checkpoints are: the loop only starts one and looks whether it has
 * ended.  The thread reads through a connection of its own: under WAL a reader neither
 * waits for the writer nor blocks it, and one sqlite3_backup_step(-1) copies every page in
 * one read transaction, so the copy is the database as of that transaction's start — every
 * commit before it, none after.
 *
 * The copy holds every job's environment and every token's hash, and the folder an admin
 * names may be one others write in (a sticky one like /tmp).  SQLite opens files by name,
 * and a name there can be swapped for a symlink between any two looks at it.  So SQLite
 * writes the copy beside the database, where only the daemon writes, and the finished copy
 * goes to the admin's folder through descriptors only: its folder opened once, a fresh 0700
 * folder of ours made in it, the file created there with O_EXCL, written through the
 * descriptor that created it and renamed from that folder's descriptor to the name asked. */
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
#include "base/fdio.h"
#include "base/thread.h"
#include "store/backup.h"
#include "store/store_internal.h"

struct gw_backup {
        pthread_t thread;
        bool started;
        char *src; /* the database file */
        char *path; /* where the copy goes, as asked */
        char *stage; /* SQLite writes the copy here, beside the database */
        char *base; /* path's last name */
        int stage_fd; /* stage, as created: what SQLite opens must be this file */
        int dir_fd; /* path's folder, opened once */
        int priv_fd; /* a fresh 0700 folder of ours inside it */
        char priv_name[64]; /* its name there when made */
        int out_fd; /* the copy in priv_fd, written only through this descriptor */
        atomic_bool done;
        int r; /* read only once done */
        uint64_t bytes;
        char why[512];
};

/* The name of the copy inside the private folder, until it is renamed to base. */
#define OUT_NAME "gpuward.db"

static int sql_errno(int rc) {
        switch (rc & 0xff) {
        case SQLITE_FULL:
                return -ENOSPC;
        case SQLITE_READONLY:
                return -EROFS;
        case SQLITE_CANTOPEN:
                return -EACCES;
        case SQLITE_NOMEM:
                return -ENOMEM;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                return -EBUSY;
        default:
                return -EIO;
        }
}

/* 0 when path names the file open on fd (same device and inode), else -ESTALE. */
static int same_file(const char *path, int fd) {
        struct stat a, b;
        if (stat(path, &a) < 0 || fstat(fd, &b) < 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
                return -ESTALE;
        return 0;
}

/* The copy itself; 0 or -errno with why set. */
static int copy(struct gw_backup *b) {
        sqlite3 *from = NULL, *to = NULL;
        int r = 0, rc;
        if ((rc = sqlite3_open_v2(b->src, &from, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL)) != SQLITE_OK) {
                snprintf(b->why, sizeof b->why, "cannot open the database: %s",
                         from ? sqlite3_errmsg(from) : "no memory");
                r = sql_errno(rc);
                goto out;
        }
        (void) sqlite3_busy_timeout(from, 5000);
        if ((rc = sqlite3_open_v2(b->stage, &to, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL)) != SQLITE_OK) {
                snprintf(b->why, sizeof b->why, "cannot open %s: %s", b->stage, to ? sqlite3_errmsg(to) : "no memory");
                r = sql_errno(rc);
                goto out;
        }
        if ((r = same_file(b->stage, b->stage_fd)) < 0) {
                snprintf(b->why, sizeof b->why, "%s is no longer the file made for the copy", b->stage);
                goto out;
        }
        /* The stage is scratch: the copy is synced once, where it ends up. */
        (void) sqlite3_exec(to, "PRAGMA synchronous = OFF", NULL, NULL, NULL);
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

/* The finished copy, from the stage into out_fd, synced. */
static int transfer(struct gw_backup *b) {
        enum { CHUNK = 256 * 1024 };
        _cleanup_free_ char *buf = gw_xmalloc(CHUNK);
        off_t off = 0;
        for (;;) {
                ssize_t n = pread(b->stage_fd, buf, CHUNK, off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int e = errno;
                        snprintf(b->why, sizeof b->why, "reading %s failed: %s", b->stage, strerror(e));
                        return -e;
                }
                if (n == 0)
                        break;
                int r = gw_write_all(b->out_fd, buf, (size_t) n);
                if (r < 0) {
                        snprintf(b->why, sizeof b->why, "writing the copy failed: %s", strerror(-r));
                        return r;
                }
                off += n;
        }
        if (fsync(b->out_fd) < 0) {
                int e = errno;
                snprintf(b->why, sizeof b->why, "syncing the copy failed: %s", strerror(e));
                return -e;
        }
        b->bytes = (uint64_t) off;
        return 0;
}

/* Gives the copy its name: a reader of path never sees a partial copy, and a path made
 * meanwhile is not replaced.  Both ends are descriptors: names in a folder that others may
 * write in (a sticky one) are never looked up again. */
static int publish(struct gw_backup *b) {
        if (renameat2(b->priv_fd, OUT_NAME, b->dir_fd, b->base, RENAME_NOREPLACE) < 0) {
                int e = errno;
                snprintf(b->why, sizeof b->why, "%s",
                         e == EEXIST ? "path: it exists now (made while the copy was written)" : strerror(e));
                return -e;
        }
        (void) fsync(b->dir_fd);
        return 0;
}

/* Removes what the copy left: the stage, and the private folder (emptied) if it is still
 * where it was made; one moved away by whoever may write in the folder stays, empty. */
static void tidy(struct gw_backup *b, bool failed) {
        if (b->stage) {
                char journal[4200];
                snprintf(journal, sizeof journal, "%s-journal", b->stage);
                (void) unlink(b->stage);
                (void) unlink(journal);
        }
        if (b->priv_fd < 0)
                return;
        if (failed)
                (void) unlinkat(b->priv_fd, OUT_NAME, 0);
        struct stat here, made;
        if (fstatat(b->dir_fd, b->priv_name, &here, AT_SYMLINK_NOFOLLOW) == 0 && fstat(b->priv_fd, &made) == 0 &&
            here.st_dev == made.st_dev && here.st_ino == made.st_ino)
                (void) unlinkat(b->dir_fd, b->priv_name, AT_REMOVEDIR);
}

static void *run(void *arg) {
        struct gw_backup *b = arg;
        int r = copy(b);
        if (r == 0)
                r = transfer(b);
        if (r == 0)
                r = publish(b);
        tidy(b, r < 0);
        b->r = r;
        atomic_store(&b->done, true);
        return NULL;
}

/* 0 when only root (or the daemon's user) may add, move or remove names in the folder st
 * describes, or the folder is sticky; else -EPERM with why. */
static int folder_check(const char *dir, const struct stat *st, char *why, size_t n) {
        bool others = (st->st_uid != 0 && st->st_uid != geteuid()) || (st->st_mode & (S_IWGRP | S_IWOTH));
        if (!others || (st->st_mode & S_ISVTX))
                return 0;
        snprintf(why, n,
                 "path: the folder %.200s is not safe for a copy of the database: others may write in it (owner "
                 "uid %u, mode %04o) and it is not sticky; use a folder only root may write in, or a sticky one "
                 "like /tmp",
                 dir, (unsigned) st->st_uid, (unsigned) (st->st_mode & 07777));
        return -EPERM;
}

/* Opens path's folder and checks it; makes the private folder in it and the copy's file
 * there.  0, or -errno with err. */
static int open_target(struct gw_backup *b, char *err, size_t errlen) {
        _cleanup_free_ char *dir = gw_xstrdup(b->path);
        char *slash = strrchr(dir, '/');
        if (!slash || !slash[1] || !strcmp(slash + 1, ".") || !strcmp(slash + 1, "..")) {
                snprintf(err, errlen, "path: %.200s does not name a file", b->path);
                return -EINVAL;
        }
        b->base = gw_xstrdup(slash + 1);
        if (slash == dir)
                slash[1] = '\0';
        else
                *slash = '\0';
        struct stat st;
        b->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (b->dir_fd < 0 || fstat(b->dir_fd, &st) < 0) {
                int e = errno;
                snprintf(err, errlen, "path: cannot open the folder %.200s: %s", dir, strerror(e));
                return -e;
        }
        int r = folder_check(dir, &st, err, errlen);
        if (r < 0)
                return r;
        /* mkdtemp through the descriptor: the folder is the one just checked, whatever its
         * name means by now. */
        char tmpl[128];
        snprintf(tmpl, sizeof tmpl, "/proc/self/fd/%d/.gpuward-backup-XXXXXX", b->dir_fd);
        if (!mkdtemp(tmpl)) {
                int e = errno;
                snprintf(err, errlen, "cannot make a folder for the copy in %.200s: %s", dir, strerror(e));
                return -e;
        }
        snprintf(b->priv_name, sizeof b->priv_name, "%s", strrchr(tmpl, '/') + 1);
        b->priv_fd = openat(b->dir_fd, b->priv_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        /* Ours and private, or replaced by someone who may move names in a sticky folder. */
        if (b->priv_fd < 0 || fstat(b->priv_fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
                snprintf(err, errlen, "the folder made for the copy in %.200s was replaced", dir);
                if (b->priv_fd >= 0)
                        (void) close(b->priv_fd);
                b->priv_fd = -1;
                return -EPERM;
        }
        b->out_fd = openat(b->priv_fd, OUT_NAME, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (b->out_fd < 0 || fchmod(b->out_fd, 0600) < 0) {
                int e = errno;
                snprintf(err, errlen, "cannot create the copy in %.200s: %s", dir, strerror(e));
                return -e;
        }
        return 0;
}

/* The stage: beside the database, where only the daemon writes; SQLite opens it by name. */
static int open_stage(struct gw_backup *b, char *err, size_t errlen) {
        size_t n = strlen(b->src) + 32;
        b->stage = gw_xmalloc(n);
        snprintf(b->stage, n, "%s.backup", b->src);
        char journal[4200];
        snprintf(journal, sizeof journal, "%s-journal", b->stage);
        (void) unlink(b->stage); /* one a crash left: one backup at a time */
        (void) unlink(journal);
        b->stage_fd = open(b->stage, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (b->stage_fd < 0) {
                int e = errno;
                snprintf(err, errlen, "cannot create %s: %s", b->stage, strerror(e));
                return -e;
        }
        return 0;
}

int gw_backup_start(struct gw_store *s, const char *path, struct gw_backup **ret, char *err, size_t errlen) {
        const char *src = sqlite3_db_filename(gw_store_db(s), "main");
        if (!src || !*src) {
                snprintf(err, errlen, "the database has no file to copy");
                return -EINVAL;
        }
        struct gw_backup *b = gw_xcalloc(1, sizeof *b);
        b->src = gw_xstrdup(src);
        b->path = gw_xstrdup(path);
        b->stage_fd = b->dir_fd = b->priv_fd = b->out_fd = -1;
        int r = open_target(b, err, errlen);
        if (r == 0)
                r = open_stage(b, err, errlen);
        if (r == 0 && (r = -gw_thread_start(&b->thread, run, b, "gw-backup")) < 0)
                snprintf(err, errlen, "cannot start the backup thread: %s", strerror(-r));
        if (r < 0) {
                tidy(b, true);
                gw_backup_free(b);
                return r;
        }
        b->started = true;
        *ret = b;
        return 0;
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

int gw_backup_dir_fd(const struct gw_backup *b) { return b->dir_fd; }

const char *gw_backup_base(const struct gw_backup *b) { return b->base; }

struct gw_backup *gw_backup_free(struct gw_backup *b) {
        if (!b)
                return NULL;
        if (b->started)
                (void) pthread_join(b->thread, NULL);
        int fds[] = { b->stage_fd, b->dir_fd, b->priv_fd, b->out_fd };
        for (size_t i = 0; i < ELEMENTSOF(fds); i++)
                if (fds[i] >= 0)
                        (void) close(fds[i]);
        free(b->src);
        free(b->path);
        free(b->stage);
        free(b->base);
        free(b);
        return NULL;
}
