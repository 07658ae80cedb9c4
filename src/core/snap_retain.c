/* Snapshot retention (see snap_retain.h). */
#include "core/snap_retain.h"

#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

struct by_age {
        bool newest_best; /* its job's newest best.pt: goes last */
        gw_usec_t time;
        int64_t id;
        size_t at;
};

static int eviction_order(const void *a, const void *b) {
        const struct by_age *x = a, *y = b;
        if (x->newest_best != y->newest_best)
                return x->newest_best ? 1 : -1;
        if (x->time != y->time)
                return x->time < y->time ? -1 : 1;
        return (x->id > y->id) - (x->id < y->id);
}

/* Whether b is newer than a in its job's order (seq, then id). */
static bool newer(const struct gw_snap_item *b, const struct gw_snap_item *a) {
        return b->seq > a->seq || (b->seq == a->seq && b->id > a->id);
}

size_t gw_snap_keep_last(const struct gw_snap_item *items, size_t n, int keep_last, bool *evict) {
        size_t keep = keep_last > 0 ? (size_t) keep_last : 0, out = 0;
        for (size_t i = 0; i < n; i++) {
                /* Newer copies of the same kind than this one. */
                size_t count = 0;
                for (size_t k = 0; k < n && count <= keep; k++)
                        if (k != i && items[k].best == items[i].best && newer(&items[k], &items[i]))
                                count++;
                evict[i] = count >= keep;
                out += evict[i];
        }
        return out;
}

/* Whether items[i] is the newest best.pt of its job among items. */
static bool is_newest_best(const struct gw_snap_item *items, size_t n, size_t i) {
        if (!items[i].best)
                return false;
        for (size_t k = 0; k < n; k++)
                if (k != i && items[k].best && items[k].job_id == items[i].job_id && newer(&items[k], &items[i]))
                        return false;
        return true;
}

size_t gw_snap_over_cap(const struct gw_snap_item *items, size_t n, uint64_t cap, uint64_t incoming, bool *evict) {
        uint64_t total = incoming;
        for (size_t i = 0; i < n; i++) {
                evict[i] = false;
                total += items[i].bytes;
        }
        if (!cap || total <= cap || !n)
                return 0;
        _cleanup_free_ struct by_age *order = gw_xmalloc(n * sizeof *order);
        for (size_t i = 0; i < n; i++)
                order[i] = (struct by_age){ .newest_best = is_newest_best(items, n, i),
                                            .time = items[i].time,
                                            .id = items[i].id,
                                            .at = i };
        qsort(order, n, sizeof *order, eviction_order);
        size_t out = 0;
        for (size_t k = 0; k < n && total > cap; k++) {
                const struct gw_snap_item *it = &items[order[k].at];
                evict[order[k].at] = true;
                total -= it->bytes < total ? it->bytes : total;
                out++;
        }
        return out;
}
