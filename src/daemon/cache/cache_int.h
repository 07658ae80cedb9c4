/* The dataset cache's two halves: the loop's bookkeeping (cache.c) and the copying helper
 * it forks (cache_copy.c). */
#pragma once
#include <stdint.h>
#include <sys/types.h>

#define GW_CACHE_MAX_GROUPS 256

/* What the copying helper is told.  It runs as root (it writes the cache) and forks a reader
 * that becomes the job's user before it opens anything of the source, so the kernel decides
 * what may be read; the reader streams each file to it.  The helper answers on report_fd:
 *   "T BYTES FILES"  the source's size, then waits for one byte on go_fd: 'g' to copy, else stop
 *   "P BYTES"        copied (or linked) so far
 *   "OK COPIED"      done: the new version is verified and its manifest written
 *   "SAME"           every file unchanged from prev_dir: nothing kept of the new version
 *   "ERR WHY"        failed, why in words (the source gone, unreadable, the disk full) */
struct gw_cache_copy {
        const char *source;        /* the --dataset path: a directory or a data YAML */
        const char *sources;       /* cache_sources: where a data YAML's path: may point */
        uid_t uid;
        gid_t gid;
        const uint32_t *groups;    /* the user's groups, gid included */
        int n_groups;
        const char *prev_dir;      /* the newest complete version (its data/, manifest), or NULL */
        const char *new_dir;       /* the version to make (must not exist) */
        const char *yaml_out;      /* a data YAML: where its rewritten copy goes; else NULL */
        int report_fd, go_fd;
};

/* Forks the helper; its pid, or -errno.  The descriptors in c stay the caller's to close. */
pid_t gw_cache_copy_spawn(const struct gw_cache_copy *c);

/* Forks a child that removes dir and everything below it (never following a link); its pid
 * or -errno.  The loop does not wait for it: a large entry takes a while to remove. */
pid_t gw_cache_remove_spawn(const char *dir);
