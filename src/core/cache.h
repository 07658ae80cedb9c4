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

#define GW_CACHE_MAX_REL 4096       /* bytes of a relative path */
#define GW_CACHE_LINE_MAX (GW_CACHE_MAX_REL * 3 + 128)

struct gw_cache_file {
        bool dir;
        uint64_t size;              /* 0 for a directory */
        int64_t mtime_ns;           /* wall clock, ns since the epoch */
        uint32_t mode;              /* permission bits only (07777 without set-id) */
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
        uint64_t size;              /* bytes its versions take */
        gw_usec_t last_use;         /* wall clock */
        bool in_use;                /* a queued or running job uses it: never evicted */
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
