/* WAL checkpoints on a thread of their own.  SQLite's automatic checkpoint runs inside the
 * commit that crosses its threshold: it copies the WAL into the database and syncs both
 * files, several milliseconds on a real disk, during which the daemon's loop serves nothing
 * (it was most of the slowest 1% of the gaps between one job's end and the next start).  Here
 * the commit only notices that the WAL has grown and wakes a thread, which checkpoints
 * through a connection of its own (PASSIVE: it never blocks the writer).  Should that thread
 * fall far behind, the commit checkpoints itself, as SQLite would have. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/thread.h"
#include "store/store_internal.h"

/* The thread is woken each time the WAL has grown by CHECKPOINT_PAGES (SQLite's default
 * threshold) since its last checkpoint.  While commits keep coming the WAL cannot start over
 * (each checkpoint ends behind the newest frames), so once it holds BEHIND times that the
 * commit checkpoints it itself, which lets the next transaction start the WAL afresh. */
#define CHECKPOINT_PAGES 1000
#define BEHIND 16

struct gw_checkpointer {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        bool due, stop;
        _Atomic int copied; /* WAL frames in the database after the last checkpoint */
        sqlite3 *db; /* the thread's own connection */
        sqlite3 *writer; /* the daemon's, for the catch-up in the commit */
        unsigned long failures;
};

static void *run(void *arg) {
        struct gw_checkpointer *c = arg;
        for (;;) {
                pthread_mutex_lock(&c->lock);
                while (!c->due && !c->stop)
                        pthread_cond_wait(&c->wake, &c->lock);
                bool stop = c->stop;
                c->due = false;
                pthread_mutex_unlock(&c->lock);
                if (stop)
                        return NULL;
                int in_log = 0, copied = 0;
                int rc = sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &in_log, &copied);
                if (rc == SQLITE_OK && copied > 0)
                        atomic_store(&c->copied, copied);
                /* Busy or full: the next commit past the threshold asks again. */
                if (rc != SQLITE_OK && rc != SQLITE_BUSY && c->failures++ % 100 == 0)
                        log_warn("WAL checkpoint: %s", sqlite3_errmsg(c->db));
        }
}

static int on_commit(void *arg, sqlite3 *db, const char *name, int pages) {
        struct gw_checkpointer *c = arg;
        (void) db;
        int copied = atomic_load(&c->copied);
        if (pages < copied) /* the WAL started over */
                atomic_store(&c->copied, copied = 0);
        if (pages >= BEHIND * CHECKPOINT_PAGES) {
                (void) sqlite3_wal_checkpoint_v2(c->writer, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
                atomic_store(&c->copied, 0);
                return SQLITE_OK;
        }
        if (pages - copied >= CHECKPOINT_PAGES) {
                pthread_mutex_lock(&c->lock);
                c->due = true;
                pthread_cond_signal(&c->wake);
                pthread_mutex_unlock(&c->lock);
        }
        return SQLITE_OK;
}

struct gw_checkpointer *gw_checkpointer_start(sqlite3 *writer, char *err, size_t errlen) {
        const char *path = sqlite3_db_filename(writer, "main");
        struct gw_checkpointer *c = gw_xcalloc(1, sizeof *c);
        c->writer = writer;
        if (!path || !*path ||
            sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
                snprintf(err, errlen, "cannot open a second connection for checkpoints: %s",
                         c->db ? sqlite3_errmsg(c->db) : "no database file");
                sqlite3_close(c->db);
                free(c);
                return NULL;
        }
        (void) sqlite3_busy_timeout(c->db, 5000);
        /* A connection learns the journal mode on its first read; until then a checkpoint
         * through it does nothing. */
        if (sqlite3_exec(c->db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL) != SQLITE_OK) {
                snprintf(err, errlen, "cannot open a second connection for checkpoints: %s", sqlite3_errmsg(c->db));
                sqlite3_close(c->db);
                free(c);
                return NULL;
        }
        pthread_mutex_init(&c->lock, NULL);
        pthread_cond_init(&c->wake, NULL);
        int r = gw_thread_start(&c->thread, run, c, "gw-checkpoint");
        if (r != 0) {
                snprintf(err, errlen, "cannot start the checkpoint thread: %s", strerror(r));
                pthread_mutex_destroy(&c->lock);
                pthread_cond_destroy(&c->wake);
                sqlite3_close(c->db);
                free(c);
                return NULL;
        }
        /* Replaces SQLite's automatic checkpoint (itself a WAL hook). */
        (void) sqlite3_wal_hook(writer, on_commit, c);
        return c;
}

struct gw_checkpointer *gw_checkpointer_stop(struct gw_checkpointer *c) {
        if (!c)
                return NULL;
        (void) sqlite3_wal_hook(c->writer, NULL, NULL);
        pthread_mutex_lock(&c->lock);
        c->stop = true;
        pthread_cond_signal(&c->wake);
        pthread_mutex_unlock(&c->lock);
        (void) pthread_join(c->thread, NULL);
        pthread_mutex_destroy(&c->lock);
        pthread_cond_destroy(&c->wake);
        sqlite3_close(c->db);
        free(c);
        return NULL;
}
