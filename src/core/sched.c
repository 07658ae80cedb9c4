#include "core/sched.h"

#include <errno.h>
#include <string.h>

#define BIT(i) (UINT64_C(1) << (i))

/* What the plan knows about the GPUs, indexed by GPU index, updated as jobs are given
 * GPUs in queue order. */
struct gpu_view {
        uint64_t usable;
        uint64_t out; /* present but not usable: drained or unhealthy */
        uint64_t idle; /* usable and held by nobody when planning began */
        uint64_t avail; /* idle and not yet given in this plan */
        uint64_t given; /* given to a job in this plan */
        uint64_t rogue; /* used by a process gpuward did not start */
        uint64_t mem_total[GW_SCHED_MAX_GPUS];
        uint64_t mem_free[GW_SCHED_MAX_GPUS];
        gw_usec_t free_at[GW_SCHED_MAX_GPUS]; /* when the current holder ends; INFINITY if unknown */
};

struct head {
        bool set;
        int64_t id;
        gw_usec_t start;
        uint64_t reserved;
};

uint64_t gw_sched_pick(uint64_t mask, int n) {
        uint64_t picked = 0;

        if (n < 1 || n > GW_SCHED_MAX_GPUS)
                return 0;
        for (int i = 0; i < n; i++) {
                if (!mask)
                        return 0;
                picked |= mask & (~mask + 1);
                mask &= mask - 1;
        }
        return picked;
}

uint64_t gw_sched_mask_first(size_t n) { return n >= GW_SCHED_MAX_GPUS ? UINT64_MAX : BIT(n) - 1; }

int gw_sched_gpus_masks(const struct gw_sched_gpu *gpus, size_t n, uint64_t *ret_present, uint64_t *ret_usable) {
        uint64_t present = 0, usable = 0;

        for (size_t i = 0; i < n; i++) {
                int idx = gpus[i].index;
                if (idx < 0 || idx >= GW_SCHED_MAX_GPUS || (present & BIT(idx)))
                        return -EINVAL;
                present |= BIT(idx);
                if (gpus[i].usable)
                        usable |= BIT(idx);
        }
        if (ret_present)
                *ret_present = present;
        if (ret_usable)
                *ret_usable = usable;
        return 0;
}

static gw_usec_t end_of(gw_usec_t now, gw_usec_t limit) {
        gw_usec_t end;
        return __builtin_add_overflow(now, limit, &end) ? GW_USEC_INFINITY : end;
}

static int validate(const struct gw_sched_input *in, const struct gw_sched_plan *out) {
        if (!in || !out || in->n_gpus > GW_SCHED_MAX_GPUS)
                return -EINVAL;
        if ((in->n_gpus && !in->gpus) || (in->n_running && !in->running) ||
            (in->n_pending && (!in->pending || !out->starts || !out->reasons)))
                return -EINVAL;
        if (gw_sched_gpus_masks(in->gpus, in->n_gpus, NULL, NULL) < 0)
                return -EINVAL;
        for (size_t i = 0; i < in->n_pending; i++) {
                const struct gw_sched_job *j = &in->pending[i];
                if (j->ngpus < 1 || j->ngpus > GW_SCHED_MAX_GPUS || j->time_limit <= 0)
                        return -EINVAL;
        }
        return 0;
}

static int validate_fair(const struct gw_sched_input *in, const struct gw_sched_fair *fair) {
        if (!fair)
                return 0;
        if (fair->n && !fair->factor)
                return -EINVAL;
        for (size_t u = 0; u < fair->n; u++)
                if (!(fair->factor[u] >= 0 && fair->factor[u] <= 1)) /* NaN fails too */
                        return -EINVAL;
        for (size_t i = 0; i < in->n_pending; i++)
                if (in->pending[i].fs_user >= fair->n)
                        return -EINVAL;
        return 0;
}

struct order_ctx {
        const struct gw_sched_job *pending;
        const double *factor;
};

/* Whether pending job a goes strictly before b: priority, then a preempted job first, then its
 * user's factor.  Ties keep
 * the order given, as the merge sort below is stable. */
static bool fair_before(const struct order_ctx *c, size_t a, size_t b) {
        const struct gw_sched_job *x = &c->pending[a], *y = &c->pending[b];
        if (x->priority != y->priority)
                return x->priority > y->priority;
        if (x->first != y->first)
                return x->first;
        return c->factor[x->fs_user] > c->factor[y->fs_user];
}

/* Merges the sorted runs src[lo, mid) and src[mid, hi) into dst[lo, hi). */
static void merge(const struct order_ctx *c, const size_t *src, size_t *dst, size_t lo, size_t mid, size_t hi) {
        size_t i = lo, j = mid, k = lo;
        while (i < mid && j < hi)
                dst[k++] = fair_before(c, src[j], src[i]) ? src[j++] : src[i++];
        while (i < mid)
                dst[k++] = src[i++];
        while (j < hi)
                dst[k++] = src[j++];
}

int gw_sched_order(const struct gw_sched_input *in, const struct gw_sched_fair *fair, size_t *order) {
        if (!in || (in->n_pending && (!order || !in->pending)))
                return -EINVAL;
        int r = validate_fair(in, fair);
        if (r < 0)
                return r;
        size_t n = in->n_pending;
        for (size_t i = 0; i < n; i++)
                order[i] = i;
        if (!fair || n < 2)
                return 0;
        /* A bottom-up merge sort between the two halves of order: stable, so the order given
         * (submission order) breaks ties without a comparison of its own. */
        struct order_ctx c = { in->pending, fair->factor };
        size_t sorted = 1;
        while (sorted < n && !fair_before(&c, sorted, sorted - 1))
                sorted++;
        if (sorted == n) /* given in this order already (the daemon keeps its queue so) */
                return 0;
        size_t *src = order, *dst = order + n;
        for (size_t w = 1; w < n; w *= 2) {
                for (size_t lo = 0; lo < n; lo += 2 * w) {
                        size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
                        merge(&c, src, dst, lo, mid, hi);
                }
                size_t *t = src;
                src = dst;
                dst = t;
        }
        if (src != order)
                memcpy(order, src, n * sizeof(*order));
        return 0;
}

/* A GPU counts as held if NVML says a job has it or a running job's mask names it: the
 * two can disagree for a moment around a start or an exit, and either must keep it busy. */
static void view_init(struct gpu_view *v, const struct gw_sched_input *in, gw_usec_t now) {
        uint64_t present = 0, claimed = 0, covered = 0;

        memset(v, 0, sizeof(*v));
        for (size_t i = 0; i < in->n_gpus; i++) {
                const struct gw_sched_gpu *g = &in->gpus[i];
                present |= BIT(g->index);
                if (g->usable)
                        v->usable |= BIT(g->index);
                if (g->job_id != 0)
                        claimed |= BIT(g->index);
                if (g->has_rogue)
                        v->rogue |= BIT(g->index);
                v->mem_total[g->index] = g->mem_total;
                v->mem_free[g->index] = g->mem_free;
                v->free_at[g->index] = now;
        }
        for (size_t r = 0; r < in->n_running; r++) {
                const struct gw_sched_running *run = &in->running[r];
                for (uint64_t m = run->gpu_mask & present; m; m &= m - 1) {
                        int i = __builtin_ctzll(m);
                        if (!(covered & BIT(i)) || run->end > v->free_at[i])
                                v->free_at[i] = run->end;
                        covered |= BIT(i);
                }
        }
        /* Held by a job whose end we were not told: it may never free up. */
        for (uint64_t m = claimed & ~covered; m; m &= m - 1)
                v->free_at[__builtin_ctzll(m)] = GW_USEC_INFINITY;

        v->out = present & ~v->usable;
        v->idle = v->usable & ~(claimed | covered);
        v->avail = v->idle;
}

/* Bits set in m.  __builtin_popcountll is a libgcc call without -mpopcnt, and the
 * predicted starts (core/predict.c) run a plan at every instant they replay. */
static int count_gpus(uint64_t m) {
        m = m - ((m >> 1) & UINT64_C(0x5555555555555555));
        m = (m & UINT64_C(0x3333333333333333)) + ((m >> 2) & UINT64_C(0x3333333333333333));
        m = (m + (m >> 4)) & UINT64_C(0x0f0f0f0f0f0f0f0f);
        return (int) ((m * UINT64_C(0x0101010101010101)) >> 56);
}

static uint64_t mem_at_least(const uint64_t mem[], uint64_t mask, uint64_t need) {
        uint64_t ok = 0;

        if (need == 0)
                return mask;
        for (uint64_t m = mask; m; m &= m - 1) {
                int i = __builtin_ctzll(m);
                if (mem[i] >= need)
                        ok |= BIT(i);
        }
        return ok;
}

/* Whether the job could ever run here, once everything else has ended.  Jobs that cannot
 * are never the head: a reservation that can never be honoured would only leave the jobs
 * behind it without one. */
static bool fits_on(const struct gpu_view *v, uint64_t gpus, const struct gw_sched_job *j) {
        uint64_t ok = mem_at_least(v->mem_total, gpus, j->gpu_mem) | mem_at_least(v->mem_free, gpus, j->gpu_mem);
        return count_gpus(ok) >= j->ngpus;
}

static bool can_ever_fit(const struct gpu_view *v, const struct gw_sched_job *j) { return fits_on(v, v->usable, j); }

/* Why a job that can never fit on the GPUs in service waits: for a GPU out of service when
 * with it back it would fit (naming that GPU tells an admin what to bring back, where
 * "Resources" sends its user to wait for jobs that are not the obstacle), else Resources. */
static enum gw_job_reason never_fits_reason(const struct gpu_view *v, const struct gw_sched_job *j) {
        return v->out && fits_on(v, v->usable | v->out, j) ? GW_REASON_DRAINED : GW_REASON_RESOURCES;
}

static void sort_usec(gw_usec_t *t, int n) {
        for (int i = 1; i < n; i++) {
                gw_usec_t x = t[i];
                int k = i;
                for (; k > 0 && t[k - 1] > x; k--)
                        t[k] = t[k - 1];
                t[k] = x;
        }
}

/* When each GPU could be the head's, or INFINITY.  Idle GPUs count now only with enough
 * free memory (someone else's process may be on them, for how long we cannot know); GPUs
 * busy with a job count from its end, when all their memory comes back, and GPUs given
 * in this plan return to the memory they have now. */
static void head_ready_times(const struct gpu_view *v, const struct gw_sched_job *j, gw_usec_t now, gw_usec_t t[]) {
        uint64_t now_ok = mem_at_least(v->mem_free, v->avail, j->gpu_mem);
        uint64_t later_ok = mem_at_least(v->mem_free, v->given, j->gpu_mem) |
                            mem_at_least(v->mem_total, v->usable & ~v->idle, j->gpu_mem);

        for (int i = 0; i < GW_SCHED_MAX_GPUS; i++)
                t[i] = GW_USEC_INFINITY;
        for (uint64_t m = now_ok; m; m &= m - 1)
                t[__builtin_ctzll(m)] = now;
        for (uint64_t m = later_ok; m; m &= m - 1) {
                int i = __builtin_ctzll(m);
                t[i] = v->free_at[i] < now ? now : v->free_at[i];
        }
}

/* EASY backfill's one reservation: the earliest time enough GPUs are free for the head,
 * and the lowest-index GPUs free by then. */
static void reserve_for_head(const struct gpu_view *v, const struct gw_sched_job *j, gw_usec_t now, struct head *h) {
        gw_usec_t t[GW_SCHED_MAX_GPUS], sorted[GW_SCHED_MAX_GPUS];
        uint64_t ready = 0;
        int n = 0;

        head_ready_times(v, j, now, t);
        for (int i = 0; i < GW_SCHED_MAX_GPUS; i++)
                if (t[i] != GW_USEC_INFINITY)
                        sorted[n++] = t[i];

        *h = (struct head){ .set = true, .id = j->id, .start = GW_USEC_INFINITY, .reserved = 0 };
        if (n < j->ngpus)
                return;
        sort_usec(sorted, n);
        h->start = sorted[j->ngpus - 1];
        for (int i = 0; i < GW_SCHED_MAX_GPUS; i++)
                if (t[i] <= h->start)
                        ready |= BIT(i);
        h->reserved = gw_sched_pick(ready, j->ngpus);
}

/* n GPUs of mask for a job that starts now: clean ones first, then those with a rogue
 * process; 0 if mask has fewer than n. */
static uint64_t pick_clean_first(const struct gpu_view *v, uint64_t mask, int n) {
        uint64_t clean = mask & ~v->rogue;
        int n_clean = count_gpus(clean);
        if (n_clean >= n)
                return gw_sched_pick(clean, n);
        uint64_t rest = gw_sched_pick(mask & v->rogue, n - n_clean);
        return rest ? clean | rest : 0;
}

/* Decides one pending job: writes the GPUs it starts on to *ret_mask and returns NONE, or
 * returns why it waits. */
static enum gw_job_reason plan_job(struct gpu_view *v, struct head *h, const struct gw_sched_job *j, gw_usec_t now,
                                   uint64_t *ret_mask) {
        if (j->held)
                return GW_REASON_HELD;
        if (j->backoff)
                return GW_REASON_BACKOFF;
        if (j->blocked != GW_REASON_NONE)
                return j->blocked;
        if (j->dep != GW_DEP_SATISFIED)
                return GW_REASON_DEPENDENCY;
        if (j->none_allowed)
                return GW_REASON_RESERVATION; /* every GPU is booked before it would end */
        /* v->out first: with every GPU in service (most passes) nothing more is looked at. */
        if (h->set && v->avail == 0)
                return v->out && !can_ever_fit(v, j) ? never_fits_reason(v, j) : GW_REASON_RESOURCES;
        if (!can_ever_fit(v, j))
                return never_fits_reason(v, j);

        uint64_t ok = mem_at_least(v->mem_free, v->avail, j->gpu_mem);
        if (j->allowed) {
                uint64_t free_now = ok;
                ok &= j->allowed;
                if (h->set && end_of(now, j->time_limit) > h->start)
                        ok &= ~h->reserved;
                uint64_t pick = pick_clean_first(v, ok, j->ngpus);
                if (!pick) /* GPUs free now that others' bookings take before it would end */
                        return j->booked_out && gw_sched_pick(free_now, j->ngpus) ? GW_REASON_RESERVATION
                                                                                  : GW_REASON_RESOURCES;
                *ret_mask = pick;
                return GW_REASON_NONE;
        }
        uint64_t fit = pick_clean_first(v, ok, j->ngpus);
        if (!h->set) {
                if (!fit) {
                        reserve_for_head(v, j, now, h);
                        return GW_REASON_RESOURCES;
                }
                *ret_mask = fit;
                return GW_REASON_NONE;
        }

        /* Ending by the head's start, any free GPU is fine; running past it, only GPUs
         * the head will not need. */
        uint64_t allowed = end_of(now, j->time_limit) <= h->start ? ok : ok & ~h->reserved;
        uint64_t pick = pick_clean_first(v, allowed, j->ngpus);
        if (!pick)
                return fit ? GW_REASON_PRIORITY : GW_REASON_RESOURCES;
        *ret_mask = pick;
        return GW_REASON_NONE;
}

static void give(struct gpu_view *v, uint64_t mask, gw_usec_t end) {
        v->avail &= ~mask;
        v->given |= mask;
        for (uint64_t m = mask; m; m &= m - 1)
                v->free_at[__builtin_ctzll(m)] = end;
}

int gw_sched_plan(const struct gw_sched_input *in, gw_usec_t now, struct gw_sched_plan *out) {
        return gw_sched_plan_fair(in, NULL, now, out);
}

int gw_sched_plan_fair(const struct gw_sched_input *in, const struct gw_sched_fair *fair, gw_usec_t now,
                       struct gw_sched_plan *out) {
        struct gpu_view v;
        struct head h = { .set = false, .start = GW_USEC_INFINITY };
        size_t n_starts = 0;
        int r;

        r = validate(in, out);
        if (r < 0)
                return r;
        if (fair) {
                if (!out->order && in->n_pending)
                        return -EINVAL;
                r = gw_sched_order(in, fair, out->order);
                if (r < 0)
                        return r;
        }
        view_init(&v, in, now);

        for (size_t k = 0; k < in->n_pending; k++) {
                size_t i = fair ? out->order[k] : k;
                const struct gw_sched_job *j = &in->pending[i];
                uint64_t mask = 0;

                out->reasons[i] = plan_job(&v, &h, j, now, &mask);
                if (out->reasons[i] != GW_REASON_NONE)
                        continue;
                give(&v, mask, end_of(now, j->time_limit));
                out->starts[n_starts++] = (struct gw_sched_start){ .job_id = j->id, .gpu_mask = mask };
        }
        out->n_starts = n_starts;
        out->head_job_id = h.set ? h.id : 0;
        out->head_start = h.set ? h.start : GW_USEC_INFINITY;
        return 0;
}
