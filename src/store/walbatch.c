/* The store's VFS (walbatch.h): SQLite's own, but a WAL file's writes are gathered and sent
 * to the file in one write per transaction.
 *
 * SQLite writes each WAL frame as two writes, its 24-byte header and its page, one after the
 * other: a commit of 7 pages is 14 pwrite calls, most of the commit's cost on a daemon that
 * commits every job's end and the next one's start.  Here consecutive writes are kept in a
 * buffer, and the frame that commits (its header's second word, the database size after the
 * commit, is not 0) is written with all of them as soon as its page comes, inside SQLite's
 * write of that page: SQLite learns of a failed write where it always did, fails the commit,
 * and publishes the frames to other connections (the WAL index) only after that write
 * returned.  What would read, size, sync, truncate or close the file first writes out what
 * is kept; so does a write that does not follow the kept ones (SQLite rewriting a frame of
 * the same transaction).  Nothing of a transaction's frames is on the file before its commit
 * frame is, as after a crash in the middle of SQLite's own writes: recovery then ignores
 * frames with no commit after them. */
#include "store/walbatch.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define WAL_FRAME_HEADER 24
/* A larger transaction is written in pieces of at most this size: SQLite's unix VFS writes
 * no more than 128 KiB - 1 bytes in one call (it masks the count to 17 bits). */
#define KEPT_MAX ((128u << 10) - 1)

struct walfile {
        sqlite3_file base;
        sqlite3_file *real; /* SQLite's own file object, after this struct */
        char *buf;
        size_t len, cap;
        sqlite3_int64 at; /* where buf[0] goes in the file */
        bool commit_next; /* the last write was a commit frame's header: its page flushes */
};

static sqlite3_vfs walbatch_vfs;
static sqlite3_vfs *real_vfs;

static int flush(struct walfile *w) {
        if (!w->len)
                return SQLITE_OK;
        int rc = w->real->pMethods->xWrite(w->real, w->buf, (int) w->len, w->at);
        w->len = 0;
        return rc;
}

static int keep(struct walfile *w, const void *data, size_t n, sqlite3_int64 off) {
        if (w->len + n > w->cap) {
                size_t cap = w->cap ? w->cap : 64 << 10;
                while (cap < w->len + n)
                        cap *= 2;
                char *buf = realloc(w->buf, cap);
                if (!buf)
                        return SQLITE_NOMEM;
                w->buf = buf;
                w->cap = cap;
        }
        if (!w->len)
                w->at = off;
        memcpy(w->buf + w->len, data, n);
        w->len += n;
        return SQLITE_OK;
}

static int wal_write(sqlite3_file *f, const void *data, int amt, sqlite3_int64 off) {
        struct walfile *w = (struct walfile *) f;
        size_t n = (size_t) amt;
        const unsigned char *h = data;
        /* The page after a commit frame's header is the commit's last write. */
        bool commit_page = w->commit_next && n != WAL_FRAME_HEADER;
        w->commit_next = n == WAL_FRAME_HEADER && (h[4] | h[5] | h[6] | h[7]) != 0;
        int rc = SQLITE_OK;
        if (w->len && (off != w->at + (sqlite3_int64) w->len || w->len + n > KEPT_MAX))
                rc = flush(w);
        if (rc != SQLITE_OK)
                return rc;
        if (n > KEPT_MAX || keep(w, data, n, off) != SQLITE_OK) {
                rc = flush(w);
                return rc != SQLITE_OK ? rc : w->real->pMethods->xWrite(w->real, data, amt, off);
        }
        return commit_page ? flush(w) : SQLITE_OK;
}

static int wal_read(sqlite3_file *f, void *data, int amt, sqlite3_int64 off) {
        struct walfile *w = (struct walfile *) f;
        int rc = flush(w);
        return rc != SQLITE_OK ? rc : w->real->pMethods->xRead(w->real, data, amt, off);
}

static int wal_truncate(sqlite3_file *f, sqlite3_int64 size) {
        struct walfile *w = (struct walfile *) f;
        int rc = flush(w);
        return rc != SQLITE_OK ? rc : w->real->pMethods->xTruncate(w->real, size);
}

static int wal_sync(sqlite3_file *f, int flags) {
        struct walfile *w = (struct walfile *) f;
        int rc = flush(w);
        return rc != SQLITE_OK ? rc : w->real->pMethods->xSync(w->real, flags);
}

static int wal_file_size(sqlite3_file *f, sqlite3_int64 *size) {
        struct walfile *w = (struct walfile *) f;
        int rc = flush(w);
        return rc != SQLITE_OK ? rc : w->real->pMethods->xFileSize(w->real, size);
}

static int wal_file_control(sqlite3_file *f, int op, void *arg) {
        struct walfile *w = (struct walfile *) f;
        int rc = flush(w);
        return rc != SQLITE_OK ? rc : w->real->pMethods->xFileControl(w->real, op, arg);
}

static int wal_close(sqlite3_file *f) {
        struct walfile *w = (struct walfile *) f;
        int rc = flush(w);
        free(w->buf);
        w->buf = NULL;
        int rc2 = w->real->pMethods->xClose(w->real);
        return rc != SQLITE_OK ? rc : rc2;
}

/* The rest as SQLite's own. */
static int wal_lock(sqlite3_file *f, int lock) {
        sqlite3_file *r = ((struct walfile *) f)->real;
        return r->pMethods->xLock(r, lock);
}

static int wal_unlock(sqlite3_file *f, int lock) {
        sqlite3_file *r = ((struct walfile *) f)->real;
        return r->pMethods->xUnlock(r, lock);
}

static int wal_check_reserved(sqlite3_file *f, int *out) {
        sqlite3_file *r = ((struct walfile *) f)->real;
        return r->pMethods->xCheckReservedLock(r, out);
}

static int wal_sector_size(sqlite3_file *f) {
        sqlite3_file *r = ((struct walfile *) f)->real;
        return r->pMethods->xSectorSize(r);
}

static int wal_device(sqlite3_file *f) {
        sqlite3_file *r = ((struct walfile *) f)->real;
        return r->pMethods->xDeviceCharacteristics(r);
}

/* Version 1: a WAL file is neither memory-mapped nor given shared memory (its database file
 * is, which is SQLite's own object). */
static const sqlite3_io_methods wal_methods = {
        .iVersion = 1,
        .xClose = wal_close,
        .xRead = wal_read,
        .xWrite = wal_write,
        .xTruncate = wal_truncate,
        .xSync = wal_sync,
        .xFileSize = wal_file_size,
        .xLock = wal_lock,
        .xUnlock = wal_unlock,
        .xCheckReservedLock = wal_check_reserved,
        .xFileControl = wal_file_control,
        .xSectorSize = wal_sector_size,
        .xDeviceCharacteristics = wal_device,
};

static int vfs_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out_flags) {
        (void) vfs;
        /* Any other file is SQLite's own object, in place. */
        if (!(flags & SQLITE_OPEN_WAL))
                return real_vfs->xOpen(real_vfs, name, f, flags, out_flags);
        struct walfile *w = (struct walfile *) f;
        memset(w, 0, sizeof *w);
        w->real = (sqlite3_file *) (w + 1);
        int rc = real_vfs->xOpen(real_vfs, name, w->real, flags, out_flags);
        w->base.pMethods = rc == SQLITE_OK ? &wal_methods : NULL;
        return rc;
}

static int vfs_delete(sqlite3_vfs *v, const char *name, int sync_dir) {
        (void) v;
        return real_vfs->xDelete(real_vfs, name, sync_dir);
}

static int vfs_access(sqlite3_vfs *v, const char *name, int flags, int *out) {
        (void) v;
        return real_vfs->xAccess(real_vfs, name, flags, out);
}

static int vfs_full_pathname(sqlite3_vfs *v, const char *name, int n, char *out) {
        (void) v;
        return real_vfs->xFullPathname(real_vfs, name, n, out);
}

static void *vfs_dlopen(sqlite3_vfs *v, const char *name) {
        (void) v;
        return real_vfs->xDlOpen(real_vfs, name);
}

static void vfs_dlerror(sqlite3_vfs *v, int n, char *out) {
        (void) v;
        real_vfs->xDlError(real_vfs, n, out);
}

static void (*vfs_dlsym(sqlite3_vfs *v, void *h, const char *sym))(void) {
        (void) v;
        return real_vfs->xDlSym(real_vfs, h, sym);
}

static void vfs_dlclose(sqlite3_vfs *v, void *h) {
        (void) v;
        real_vfs->xDlClose(real_vfs, h);
}

static int vfs_randomness(sqlite3_vfs *v, int n, char *out) {
        (void) v;
        return real_vfs->xRandomness(real_vfs, n, out);
}

static int vfs_sleep(sqlite3_vfs *v, int us) {
        (void) v;
        return real_vfs->xSleep(real_vfs, us);
}

static int vfs_current_time(sqlite3_vfs *v, double *out) {
        (void) v;
        return real_vfs->xCurrentTime(real_vfs, out);
}

static int vfs_last_error(sqlite3_vfs *v, int n, char *out) {
        (void) v;
        return real_vfs->xGetLastError ? real_vfs->xGetLastError(real_vfs, n, out) : 0;
}

static int vfs_current_time_int64(sqlite3_vfs *v, sqlite3_int64 *out) {
        (void) v;
        return real_vfs->xCurrentTimeInt64(real_vfs, out);
}

static int registered = SQLITE_ERROR;

static void walbatch_register(void) {
        real_vfs = sqlite3_vfs_find(NULL);
        if (!real_vfs || real_vfs->iVersion < 2 || !real_vfs->xCurrentTimeInt64)
                return;
        int size = (int) sizeof(struct walfile) + real_vfs->szOsFile;
        walbatch_vfs = (sqlite3_vfs){
                .iVersion = 2,
                .szOsFile = size > real_vfs->szOsFile ? size : real_vfs->szOsFile,
                .mxPathname = real_vfs->mxPathname,
                .zName = GW_WALBATCH_VFS,
                .xOpen = vfs_open,
                .xDelete = vfs_delete,
                .xAccess = vfs_access,
                .xFullPathname = vfs_full_pathname,
                .xDlOpen = vfs_dlopen,
                .xDlError = vfs_dlerror,
                .xDlSym = vfs_dlsym,
                .xDlClose = vfs_dlclose,
                .xRandomness = vfs_randomness,
                .xSleep = vfs_sleep,
                .xCurrentTime = vfs_current_time,
                .xGetLastError = vfs_last_error,
                .xCurrentTimeInt64 = vfs_current_time_int64,
        };
        registered = sqlite3_vfs_register(&walbatch_vfs, 0);
}

const char *gw_walbatch_vfs(void) {
        static pthread_once_t once = PTHREAD_ONCE_INIT;
        (void) pthread_once(&once, walbatch_register);
        return registered == SQLITE_OK ? GW_WALBATCH_VFS : NULL;
}
