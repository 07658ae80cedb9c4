/* The dataset cache's decisions and its manifest's lines.  Pure, no I/O.
 *
 * A cache entry is one dataset (keyed by the path given to --dataset) in versions; each
 * version's manifest lists every directory and file of the copy with what the source had:
 * the relative path, size, modification time, mode and owner.  A version is used only
 * once the copy agrees with its manifest, and a new version links the files whose size and
 * time did not change from the one before. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"
#include "core/failure.h"

#define GW_CACHE_MAX_REL 4096 /* bytes of a relative path */
#define GW_CACHE_LINE_MAX (GW_CACHE_MAX_REL * 3 + 128)

struct gw_cache_file {
        bool dir;
        uint64_t size; /* 0 for a directory */
        int64_t mtime_ns; /* wall clock, ns since the epoch */
        uint32_t mode; /* permission bits only (07777 without set-id) */
        uint32_t uid, gid;
        char rel[GW_CACHE_MAX_REL]; /* "" for the root itself */
};

/* One manifest line for f, '\n' included, into buf (at least GW_CACHE_LINE_MAX bytes): the
 * path's bytes below '!', '%' and DEL written %XX, so that any name is one line.  Returns
 * its length. */
size_t gw_cache_manifest_line(const struct gw_cache_file *f, char *buf, size_t n);
/* Parses one line (without its '\n') into f.  0, or -EINVAL for anything else than what
 * gw_cache_manifest_line writes (a path with "..", a leading '/', a bad escape). */
int gw_cache_manifest_parse(const char *line, size_t len, struct gw_cache_file *f);

/* Whether a copy of old serves for new: the same kind, size, time, mode and owner. */
bool gw_cache_file_same(const struct gw_cache_file *old, const struct gw_cache_file *new);

/* An entry as eviction sees it. */
struct gw_cache_slot {
        uint64_t size; /* bytes its versions take */
        gw_usec_t last_use; /* wall clock */
        bool in_use; /* a queued or running job uses it: never evicted */
};

/* Which entries to evict so that need more bytes fit under cap with used bytes taken now:
 * the least recently used first, never one in use, as few as do it.  Their indexes into
 * victims (capacity n); returns how many (0 when it fits already), or -ENOSPC when even
 * evicting every entry not in use leaves too little room (nothing is chosen then). */
int gw_cache_evict_pick(const struct gw_cache_slot *slots, size_t n, uint64_t used, uint64_t cap, uint64_t need,
                        size_t *victims);

/* "dataset 1.2 of 3.4 GB, 41%" (decimal units, the total's) into buf. */
void gw_cache_progress_text(uint64_t done, uint64_t total, char *buf, size_t n);

/* Whether path is one of the comma list's roots or below one ("/data" holds "/data/coco",
 * not "/database").  Both absolute; a root may end in '/'. */
bool gw_cache_source_allowed(const char *list, const char *path);

/* A failed copy's class for the job's retry policy (core/retry.h), from the errno that
 * failed it: what the user can fix (a file they may not read, a path that is not a dataset,
 * a data YAML that says nothing usable) is a user_error and never retried; the rest (the
 * source gone or its server not answering, the cache's disk full or failing) is the node's
 * storage failing under the job, lost, retried as a lost attempt is. */
enum gw_failure_class gw_cache_failure_class(int err);

/* The file each entry keeps beside its versions (entries/KEY/use), so that a restarted daemon
 * knows what the last one knew: when the entry was last used, by whom, and which version each
 * job it handed a copy to uses (a running job keeps reading it across the restart).  One item
 * a line:
 *   last_use USEC        wall clock
 *   user NAME            one a line, at most GW_CACHE_MAX_USERS
 *   pin JOB VERSION      the job was handed version VERSION
 *   proc PID START VERSION
 *                        a node agent's stager handed version VERSION to process PID, whose
 *                        start time (clock ticks since boot, /proc/PID/stat field 22) was
 *                        START: a restarted agent keeps the pin while that very process lives,
 *                        its connection gone with the agent before it */
#define GW_CACHE_MAX_USERS 16
#define GW_CACHE_USER_MAX 33 /* a login name's bytes, its NUL included */
#define GW_CACHE_USE_LINE_MAX 80

enum gw_cache_use_kind { GW_CACHE_USE_LAST, GW_CACHE_USE_USER, GW_CACHE_USE_PIN, GW_CACHE_USE_PROC };
#define GW_CACHE_PID_MAX 4194304 /* the kernel's PID_MAX_LIMIT */
struct gw_cache_use_line {
        enum gw_cache_use_kind kind;
        gw_usec_t last_use;
        char user[GW_CACHE_USER_MAX];
        int64_t job;
        int version;
        int32_t pid; /* GW_CACHE_USE_PROC: 1 to GW_CACHE_PID_MAX */
        uint64_t start;
};
/* One line for l, '\n' included, into buf (at least GW_CACHE_USE_LINE_MAX bytes); its
 * length, or 0 for a user name that has no place in the file (too long, blanks in it). */
size_t gw_cache_use_format(const struct gw_cache_use_line *l, char *buf, size_t n);
/* Parses one line (without its '\n'): 0, or -EINVAL for a line that is none of these, a
 * negative number, a version, job or pid of 0, a pid over GW_CACHE_PID_MAX (out untouched
 * then). */
int gw_cache_use_parse(const char *line, size_t len, struct gw_cache_use_line *out);
