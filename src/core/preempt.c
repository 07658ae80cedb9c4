/* Preemption's choice of victims (preempt.h has the rules). */
#include "core/preempt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

long gw_preempt_lost_seconds(const struct gw_preempt_running *r, gw_usec_t now) {
        gw_usec_t since = r->ckpt_time > r->start_time ? r->ckpt_time : r->start_time;
        return since > 0 && now > since ? (long) ((now - since) / GW_USEC_PER_SEC) : 0;
}

gw_usec_t gw_preempt_next_ckpt(const struct gw_preempt_running *r, gw_usec_t now) {
        gw_usec_t last = r->ckpt_time > r->start_time ? r->ckpt_time : r->start_time;
        if (r->ckpt_every <= 0 || last <= 0)
                return 0;
        gw_usec_t next = last + r->ckpt_every;
        return next < now ? 0 : next; /* overdue: it may hang, its checkpoint is not counted on */
}

struct cand {
        const struct gw_preempt_running *r;
        long lost, expect_lost, stop_in;
        bool later; /* its checkpoint is predicted, but beyond the grace */
};

/* How much earlier than the grace's end its predicted checkpoint must come to count as due:
 * an epoch runs a little longer now and then, and one asked to stop the moment its checkpoint
 * was predicted just within the grace would miss it and lose a whole epoch. */
static gw_usec_t ckpt_slack(const struct gw_preempt_need *need, const struct gw_preempt_running *r) {
        gw_usec_t s = r->ckpt_every / GW_PREEMPT_CKPT_SLACK_DIV;
        return s < need->grace / 2 ? s : need->grace / 2;
}

/* What stopping r costs: with its next checkpoint due within the grace, nothing is lost and
 * the preemptor waits till then; else the work since its newest checkpoint is lost when the
 * grace is over (at once without a grace). */
static struct cand cand_of(const struct gw_preempt_need *need, const struct gw_preempt_running *r, gw_usec_t now) {
        struct cand c = { .r = r, .lost = gw_preempt_lost_seconds(r, now) };
        gw_usec_t next = need->grace > 0 ? gw_preempt_next_ckpt(r, now) : 0;
        if (next > 0 && next + ckpt_slack(need, r) <= now + need->grace) {
                c.stop_in = (long) ((next - now) / GW_USEC_PER_SEC);
                return c;
        }
        c.later = next > 0;
        c.stop_in = (long) (need->grace / GW_USEC_PER_SEC);
        c.expect_lost = c.lost + c.stop_in;
        return c;
}

/* Least work expected lost, then the soonest stop, then lowest priority, then latest start,
 * then newest id (a total order, so that the same input always gives the same victims). */
static int cand_cmp(const void *pa, const void *pb) {
        const struct cand *a = pa, *b = pb;
        if (a->expect_lost != b->expect_lost)
                return a->expect_lost < b->expect_lost ? -1 : 1;
        if (a->stop_in != b->stop_in)
                return a->stop_in < b->stop_in ? -1 : 1;
        if (a->r->priority != b->r->priority)
                return a->r->priority < b->r->priority ? -1 : 1;
        if (a->r->start_time != b->r->start_time)
                return a->r->start_time > b->r->start_time ? -1 : 1;
        return a->r->id > b->r->id ? -1 : a->r->id < b->r->id;
}

static bool eligible(const struct gw_preempt_need *need, const struct gw_preempt_running *r) {
        if (!r->preemptible || r->stopping || (!r->resumable && !need->unresumable_ok))
                return false;
        if (!need->booking && r->priority >= need->priority)
                return false;
        return (r->gpu_mask & (need->allowed ? need->allowed : ~UINT64_C(0))) != 0;
}

static int usable(const struct gw_preempt_need *need, uint64_t mask) {
        return __builtin_popcountll(mask & (need->allowed ? need->allowed : ~UINT64_C(0)));
}

int gw_preempt_decide(const struct gw_preempt_need *need, const struct gw_preempt_running *running, size_t n,
                      gw_usec_t now, struct gw_preempt_plan *ret) {
        if (!need || !ret || (n && !running) || need->ngpus < 1)
                return -EINVAL;
        memset(ret, 0, sizeof *ret);
        if (usable(need, need->free_mask) >= need->ngpus)
                return 0; /* it can start without anyone's GPUs */
        struct cand c[GW_PREEMPT_MAX];
        size_t nc = 0;
        for (size_t i = 0; i < n && nc < GW_PREEMPT_MAX; i++)
                if (eligible(need, &running[i])) {
                        c[nc] = cand_of(need, &running[i], now);
                        if (!c[nc].later || need->lossy_ok)
                                nc++; /* else: wait for its checkpoint, it loses nothing then */
                }
        qsort(c, nc, sizeof *c, cand_cmp);
        bool chosen[GW_PREEMPT_MAX] = { false };
        uint64_t mask = need->free_mask;
        size_t k = 0;
        for (; k < nc && usable(need, mask) < need->ngpus; k++) {
                chosen[k] = true;
                mask |= c[k].r->gpu_mask;
        }
        if (usable(need, mask) < need->ngpus)
                return 0;
        /* A later (costlier) victim may have made an earlier one unnecessary, or the reverse:
         * let go of each that the rest do without, the costliest first. */
        for (size_t i = k; i-- > 0;) {
                uint64_t without = need->free_mask;
                for (size_t m = 0; m < k; m++)
                        if (chosen[m] && m != i)
                                without |= c[m].r->gpu_mask;
                if (usable(need, without) >= need->ngpus)
                        chosen[i] = false;
        }
        for (size_t i = 0; i < k; i++)
                if (chosen[i]) {
                        ret->victims[ret->n++] =
                                (struct gw_preempt_victim){ c[i].r->id, c[i].lost, c[i].expect_lost, c[i].stop_in };
                        ret->mask |= c[i].r->gpu_mask;
                }
        return 0;
}
