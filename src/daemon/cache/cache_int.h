/* The dataset cache's halves: the loop's bookkeeping (cache.c), what it keeps across a
 * restart (cache_use.c) and the copying helper it forks (cache_copy.c). */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/time.h"
#include "core/cache.h"
#include "daemon/cache/cache.h"

#define GW_CACHE_MAX_GROUPS 256

/* What the copying helper is told.  It runs as root (it writes the cache) and forks a reader
 * that becomes the job's user before it opens anything of the source, so the kernel decides
 * what may be read; the reader streams each file to it.  The helper answers on report_fd:
 *   "T BYTES FILES"  the source's size, then waits for a go line on go_fd
 *   "P BYTES"        copied (or linked) so far
 *   "OK COPIED"      done: the new version is verified and its manifest written
 *   "SAME"           every file unchanged from prev_dir: nothing kept of the new version
 *   "ERR CLASS WHY"  failed: its class for the retry policy (gw_cache_failure_class: lost or
 *                    user_error), why in words (the source gone, unreadable, the disk full)
 *   "R BYTES"        the files to copy come to BYTES, more than the room granted: waits for
 *                    a go line again
 * The go lines are "g GRANTED\n" (the bytes it may write into the cache) or "n\n" (stop).
 * The reader tells the helper its own failure as "X ERRNO WHY". */
struct gw_cache_copy {
        const char *source; /* the --dataset path: a directory or a data YAML */
        const char *sources; /* cache_sources: where a data YAML's path: may point */
        uid_t uid;
        gid_t gid;
        const uint32_t *groups; /* the user's groups, gid included */
        int n_groups;
        const char *prev_dir; /* the newest complete version (its data/, manifest), or NULL */
        const char *new_dir; /* the version to make (must not exist) */
        const char *yaml_out; /* a data YAML: where its rewritten copy goes; else NULL */
        int report_fd, go_fd;
};

/* Forks the helper; its pid, or -errno.  The descriptors in c stay the caller's to close. */
pid_t gw_cache_copy_spawn(const struct gw_cache_copy *c);

/* Forks a child that removes dir and everything below it (never following a link); its pid
 * or -errno.  The loop does not wait for it: a large entry takes a while to remove. */
pid_t gw_cache_remove_spawn(const char *dir);

/* ---- the state of the store and of its copies ---- */

/* A pin the use file kept: a job's on the daemon (job), a process's on a node's agent (pid and
 * its start time, job 0). */
struct gw_cache_pin {
        int64_t job;
        int v;
        pid_t pid;
        uint64_t start;
};

struct gw_cache_ver {
        int v;
        int pins;
        uint64_t size, files;
        struct gw_cache_ver *next; /* older */
};

struct gw_cache_entry {
        char key[17];
        char *source;
        struct gw_cache_ver *vers; /* complete versions, newest first */
        int next_v; /* the number the next version gets */
        gw_usec_t last_use;
        char *users[GW_CACHE_MAX_USERS];
        size_t n_users;
        struct gw_cache_job *staging; /* the job copying into it, or NULL */
        struct gw_cache_pin *saved; /* the use file's pins, until the restart's recovery is over */
        size_t n_saved;
        struct gw_cache_entry *next;
};

/* A copy and the version it uses: a job's on the daemon (dj), a job step's on a node's agent
 * (cache_node.c, dj NULL there). */
struct gw_cache_job {
        struct gw_cache_entry *e;
        struct gw_cache_ver *pin; /* the version it uses once ready */
        struct gw_djob *dj; /* NULL once the job is gone (its helper still to reap) */
        pid_t pid;
        int rfd, gofd;
        int newv;
        uint64_t done, total;
        uint64_t reserved; /* bytes of cache_size its copy may fill: the room made for it */
        bool ready, told_total;
        char buf[GW_CACHE_LINE_MAX];
        size_t nbuf;
        char result[512]; /* the helper's last word: OK, SAME, ERR ... */
        char *data_dir, *yaml;
        unsigned failures; /* its copies that failed (each retried by the job's policy) */
        gw_usec_t retry_at; /* monotonic: its next copy, after a failed one; 0 none due */
        struct gw_cache_job *next; /* in the list of helpers in flight */
};

struct gw_cache {
        char *dir;
        struct gw_cache_entry *entries;
        struct gw_cache_job *flight;
        size_t n_flight; /* helpers in flight: at most cache_copies */
        size_t n_retrying; /* jobs whose next copy waits out a backoff */
        struct gw_cache_counts counts;
        bool scan; /* the queue's jobs to look at (after a start) */
};

/* ---- the entry store (cache_store.c): what the daemon's loop and the node agent's stager
 * (cache_node.c) share; nothing of jobs or of the daemon ---- */

/* Makes dir's folders (root's, 0711) and reads the entries there into c (zeroed by the
 * caller).  0, or -errno (logged). */
int gw_cache_store_open(struct gw_cache *c, const char *dir);
/* Frees c's entries and dir (not c; helpers in flight are the caller's). */
void gw_cache_store_done(struct gw_cache *c);
/* cache_dir/entries/KEY/vN[/tail], malloc'ed. */
char *gw_cache_path(const struct gw_cache *c, const struct gw_cache_entry *e, int v, const char *tail);
/* Makes p root's 0711 folder; -EPERM when someone else made it first. */
int gw_cache_mkdir_root(const char *p);
/* Moves dir to trash/ and removes it in a child. */
void gw_cache_trash(struct gw_cache *c, const char *dir);
/* Takes v out of e and trashes its folder. */
void gw_cache_trash_version(struct gw_cache *c, struct gw_cache_entry *e, struct gw_cache_ver *v);
/* Older versions of e nobody pins any more go to the trash. */
void gw_cache_trash_unpinned_old(struct gw_cache *c, struct gw_cache_entry *e);
/* The entry of source, or NULL; gw_cache_entry_get makes it (and its folder) when missing. */
struct gw_cache_entry *gw_cache_entry_find(struct gw_cache *c, const char *source);
struct gw_cache_entry *gw_cache_entry_get(struct gw_cache *c, const char *source);
void gw_cache_entry_free(struct gw_cache_entry *e);
bool gw_cache_entry_in_use(const struct gw_cache_entry *e);
uint64_t gw_cache_entry_size(const struct gw_cache_entry *e);
/* Trashes e whole and frees it. */
void gw_cache_evict(struct gw_cache *c, struct gw_cache_entry *e);
void gw_cache_add_user(struct gw_cache_entry *e, const char *user);
/* The version's size and file count from its manifest; -1 if it has none (incomplete). */
int gw_cache_manifest_size(const char *vdir, uint64_t *size, uint64_t *files);

/* A copy's life, whoever asked for it.  gw_cache_helper_start forks the helper for cj (its
 * entry cj->e) with args' source, sources, user and yaml_out (the rest is filled here): a new
 * version, the newest pinned as what it links from; 0 or -errno.  gw_cache_helper_drain hands
 * each of its lines to take, which passes the ones it does not answer itself (T) to
 * gw_cache_helper_line.  Once reaped, gw_cache_helper_reaped takes it out of flight and says
 * what it made: 1 a new version, 2 the same as the newest, 0 nothing (failed); then the
 * caller keeps it (gw_cache_helper_keep: cj pins the version it is to use, cj->ready) or drops
 * it (gw_cache_helper_drop).  gw_cache_unpin lets go of cj's version, which goes when it is
 * not the newest and ended says nobody is to read it any more. */
int gw_cache_helper_start(struct gw_cache *c, struct gw_cache_job *cj, struct gw_cache_copy *args);
void gw_cache_helper_drain(struct gw_cache_job *cj, void (*take)(void *ctx, struct gw_cache_job *cj, char *line),
                           void *ctx);
void gw_cache_helper_line(struct gw_cache_job *cj, const char *line);
int gw_cache_helper_reaped(struct gw_cache *c, struct gw_cache_job *cj, int status);
void gw_cache_helper_keep(struct gw_cache *c, struct gw_cache_job *cj, bool same, gw_usec_t now_wall);
void gw_cache_helper_drop(struct gw_cache *c, struct gw_cache_job *cj);
void gw_cache_unpin(struct gw_cache *c, struct gw_cache_job *cj, bool ended);
/* One pin of v (an entry's version) let go: v goes when nobody pins it, it is not the newest
 * and ended says nobody is to read it any more. */
void gw_cache_ver_release(struct gw_cache *c, struct gw_cache_entry *e, struct gw_cache_ver *v, bool ended);
/* Room for more bytes of cj's copy under cap: the least recently used entries nobody uses are
 * evicted (logged, for_whom named), and what every copy in flight was granted counts as taken;
 * cj->reserved grows by more.  -ENOSPC with why when even that is not enough. */
int gw_cache_room(struct gw_cache *c, struct gw_cache_job *cj, uint64_t more, uint64_t cap, const char *for_whom,
                  char *why, size_t n);
/* The helper's asks for room in line ("T BYTES FILES", its first; "R BYTES", more): answered on
 * its go pipe, a refusal's why in cj->result; stop (its asker gone) refuses without trying.
 * False when line is neither. */
bool gw_cache_helper_ask(struct gw_cache *c, struct gw_cache_job *cj, const char *line, uint64_t cap,
                         const char *for_whom, bool stop);

/* cache_use.c: the entry's use file (core/cache.h): read at open (last use, users, the pins
 * a restart must keep, into e->saved), written whenever those change.  gw_cache_use_write
 * writes e's last use and users with the n pin lines given (the caller's, not kept): the
 * daemon's jobs' (gw_cache_use_save) or the node stager's askers' (cache_node.c); 0 or -errno
 * (logged). */
void gw_cache_use_load(struct gw_cache *c, struct gw_cache_entry *e);
int gw_cache_use_write(const struct gw_cache *c, const struct gw_cache_entry *e, const struct gw_cache_use_line *pins,
                       size_t n);
void gw_cache_use_save(struct gw_daemon *d, struct gw_cache_entry *e);
/* The restart's running jobs took their pins again (gw_cache_job_recovered): the versions
 * nobody pins now go, and the use files' pins are forgotten. */
void gw_cache_recovery_done(struct gw_cache *c);
