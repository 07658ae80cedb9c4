#include "sim/sim_queue.h"

#include <string.h>

#include "base/cleanup.h"

static bool ev_less(const struct gw_sim_ev *a, const struct gw_sim_ev *b) {
        if (a->t != b->t)
                return a->t < b->t;
        if (a->kind != b->kind)
                return a->kind < b->kind;
        return a->seq < b->seq;
}

void gw_sim_heap_push(struct gw_sim_heap *h, gw_usec_t t, uint32_t kind, int64_t job, uint32_t attempt) {
        if (h->n == h->cap) {
                h->cap = h->cap ? h->cap * 2 : 1024;
                h->v = gw_xrealloc(h->v, h->cap * sizeof(*h->v));
        }
        struct gw_sim_ev e = { .t = t, .kind = kind, .attempt = attempt, .job = job, .seq = h->seq++ };
        size_t i = h->n++;
        while (i > 0) {
                size_t p = (i - 1) / 2;
                if (!ev_less(&e, &h->v[p]))
                        break;
                h->v[i] = h->v[p];
                i = p;
        }
        h->v[i] = e;
}

const struct gw_sim_ev *gw_sim_heap_peek(const struct gw_sim_heap *h) { return h->n ? &h->v[0] : NULL; }

bool gw_sim_heap_pop(struct gw_sim_heap *h, struct gw_sim_ev *ret) {
        if (h->n == 0)
                return false;
        *ret = h->v[0];
        struct gw_sim_ev last = h->v[--h->n];
        size_t i = 0;
        for (;;) {
                size_t c = 2 * i + 1;
                if (c >= h->n)
                        break;
                if (c + 1 < h->n && ev_less(&h->v[c + 1], &h->v[c]))
                        c++;
                if (!ev_less(&h->v[c], &last))
                        break;
                h->v[i] = h->v[c];
                i = c;
        }
        if (h->n)
                h->v[i] = last;
        return true;
}

void gw_sim_heap_free(struct gw_sim_heap *h) {
        free(h->v);
        *h = (struct gw_sim_heap){ 0 };
}

static int64_t job_of(int64_t e) { return e < 0 ? ~e : e; }

/* Whether job a goes before job b in the queue. */
static bool before(const struct gw_sim_pq *q, int64_t a, int64_t b) {
        if (q->priority && q->priority[a] != q->priority[b])
                return q->priority[a] > q->priority[b];
        return a < b;
}

void gw_sim_pq_insert(struct gw_sim_pq *q, int64_t job) {
        size_t lo = 0, hi = q->n;

        if (q->n == q->cap) {
                q->cap = q->cap ? q->cap * 2 : 1024;
                q->v = gw_xrealloc(q->v, q->cap * sizeof(*q->v));
        }
        /* Submissions arrive in id order: append without searching. */
        if (q->n && !before(q, job, job_of(q->v[q->n - 1]))) {
                q->v[q->n++] = job;
                return;
        }
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (before(q, job_of(q->v[mid]), job))
                        lo = mid + 1;
                else
                        hi = mid;
        }
        memmove(&q->v[lo + 1], &q->v[lo], (q->n - lo) * sizeof(*q->v));
        q->v[lo] = job;
        q->n++;
        if (lo < q->front)
                q->front = lo;
}

void gw_sim_pq_remove_at(struct gw_sim_pq *q, size_t pos) {
        if (pos >= q->n || q->v[pos] < 0)
                return;
        q->v[pos] = ~q->v[pos];
        q->n_dead++;
        while (q->front < q->n && q->v[q->front] < 0)
                q->front++;
}

void gw_sim_pq_compact(struct gw_sim_pq *q) {
        size_t k = 0;

        if (q->n_dead < 4096 || q->n_dead * 8 < q->n)
                return;
        for (size_t i = 0; i < q->n; i++)
                if (q->v[i] >= 0)
                        q->v[k++] = q->v[i];
        q->n = k;
        q->n_dead = 0;
        q->front = 0;
}

size_t gw_sim_pq_live(const struct gw_sim_pq *q) { return q->n - q->n_dead; }

void gw_sim_pq_free(struct gw_sim_pq *q) {
        free(q->v);
        *q = (struct gw_sim_pq){ 0 };
}
