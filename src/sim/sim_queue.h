/* The engine's two containers: the event heap (the virtual clock's agenda) and the pending
 * queue in scheduling order (priority descending, then job id, as the daemon orders it). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"

/* At one instant, events are handled in this order: ends free GPUs first, then repairs,
 * the booking calendar's tick, the sample (which may reclaim), then backoffs, submissions
 * and bookings made; one scheduler pass follows. */
enum gw_sim_ev_kind {
        GW_SIM_EV_END,
        GW_SIM_EV_REPAIR, /* job = node * 64 + GPU */
        GW_SIM_EV_CAL, /* job = the node whose calendar ticks */
        GW_SIM_EV_SAMPLE,
        GW_SIM_EV_BACKOFF,
        GW_SIM_EV_SUBMIT,
        GW_SIM_EV_BOOK, /* the job's user books its window */
};

struct gw_sim_ev {
        gw_usec_t t;
        uint32_t kind;
        uint32_t attempt; /* END/BACKOFF: the attempt it belongs to (stale ones are dropped) */
        int64_t job; /* index into the workload */
        uint64_t seq; /* insertion order: ties break FIFO */
};

struct gw_sim_heap {
        struct gw_sim_ev *v;
        size_t n, cap;
        uint64_t seq;
};

void gw_sim_heap_push(struct gw_sim_heap *h, gw_usec_t t, uint32_t kind, int64_t job, uint32_t attempt);
bool gw_sim_heap_pop(struct gw_sim_heap *h, struct gw_sim_ev *ret);
const struct gw_sim_ev *gw_sim_heap_peek(const struct gw_sim_heap *h);
void gw_sim_heap_free(struct gw_sim_heap *h);

/* Pending jobs by (priority desc, id asc).  Removed entries stay as tombstones (~id) until
 * enough accumulate, so that starting a job is O(1) and the order needs no re-sorting. */
struct gw_sim_pq {
        int64_t *v; /* job index, or ~index for a removed entry */
        size_t n, cap, n_dead;
        size_t front; /* no live entry before it */
        const int *priority; /* per job index (borrowed), NULL = all equal */
};

void gw_sim_pq_insert(struct gw_sim_pq *q, int64_t job);
void gw_sim_pq_remove_at(struct gw_sim_pq *q, size_t pos);
/* Drops the tombstones when they are many; positions change. */
void gw_sim_pq_compact(struct gw_sim_pq *q);
size_t gw_sim_pq_live(const struct gw_sim_pq *q);
void gw_sim_pq_free(struct gw_sim_pq *q);
