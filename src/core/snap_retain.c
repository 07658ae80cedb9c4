/* Snapshot retention (see snap_retain.h). */
#include "core/snap_retain.h"

#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

struct by_age {
        gw_usec_t time;
        int64_t id;
        size_t at;
};

static int older_first(const void *a, const void *b) {
        const struct by_age *x = a, *y = b;
        if (x->time != y->time)
                return x->time < y->time ? -1 : 1;
        return (x->id > y->id) - (x->id < y->id);
}

size_t gw_snap_keep_last(const struct gw_snap_item *items, size_t n, int keep_last, bool *evict) {
        size_t keep = keep_last > 0 ? (size_t) keep_last : 0, out = 0;
        for (size_t i = 0; i < n; i++) {
                evict[i] = false;
                if (items[i].best)
                        continue;
                /* Newer last.pt copies (higher seq; then higher id) than this one. */
                size_t newer = 0;
                for (size_t k = 0; k < n && newer <= keep; k++)
                        if (k != i && !items[k].best &&
                            (items[k].seq > items[i].seq || (items[k].seq == items[i].seq && items[k].id > items[i].id)))
                                newer++;
                if (newer >= keep) {
                        evict[i] = true;
                        out++;
                }
        }
        return out;
}

size_t gw_snap_over_cap(const struct gw_snap_item *items, size_t n, uint64_t cap, bool *evict) {
        uint64_t total = 0;
        size_t n_last = 0;
        for (size_t i = 0; i < n; i++) {
                evict[i] = false;
                total += items[i].bytes;
                n_last += !items[i].best;
        }
        if (!cap || total <= cap || !n_last)
                return 0;
        _cleanup_free_ struct by_age *order = gw_xmalloc(n_last * sizeof *order);
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
                if (!items[i].best)
                        order[m++] = (struct by_age) { .time = items[i].time, .id = items[i].id, .at = i };
        qsort(order, m, sizeof *order, older_first);
        size_t out = 0;
        for (size_t k = 0; k < m && total > cap; k++) {
                const struct gw_snap_item *it = &items[order[k].at];
                evict[order[k].at] = true;
                total -= it->bytes < total ? it->bytes : total;
                out++;
        }
        return out;
}
