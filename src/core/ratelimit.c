#include "core/ratelimit.h"

#include <errno.h>

#define USEC_PER_MIN (60 * GW_USEC_PER_SEC)

int gw_bucket_init(struct gw_bucket *b, int64_t rate_per_min, int64_t burst) {
        if (!b || rate_per_min < 1 || rate_per_min > USEC_PER_MIN || burst < 1 || burst > 1000000)
                return -EINVAL;
        b->interval = USEC_PER_MIN / rate_per_min;
        b->tolerance = (burst - 1) * b->interval;
        b->tat = 0;
        return 0;
}

int64_t gw_bucket_take_n(struct gw_bucket *b, int64_t n, gw_usec_t now) {
        if (n < 1 || n - 1 > b->tolerance / b->interval)
                return -E2BIG;
        gw_usec_t tat = b->tat > now ? b->tat : now;
        /* The last of the n tokens must fit, as a single one would after the others. */
        gw_usec_t ahead = tat - now + (n - 1) * b->interval;

        if (ahead > b->tolerance) {
                gw_usec_t wait = ahead - b->tolerance;
                return (wait + GW_USEC_PER_SEC - 1) / GW_USEC_PER_SEC;
        }
        b->tat = tat + n * b->interval;
        return 0;
}

int64_t gw_bucket_take(struct gw_bucket *b, gw_usec_t now) { return gw_bucket_take_n(b, 1, now); }

int64_t gw_bucket_available(const struct gw_bucket *b, gw_usec_t now) {
        gw_usec_t ahead = b->tat > now ? b->tat - now : 0;
        gw_usec_t room = b->tolerance + b->interval - ahead;

        return room <= 0 ? 0 : room / b->interval;
}

int gw_ratelimit_init(struct gw_ratelimit *t, struct gw_ratelimit_entry *storage, size_t cap, int64_t rate_per_min,
                      int64_t burst) {
        struct gw_bucket probe;

        if (!t || !storage || cap == 0 || gw_bucket_init(&probe, rate_per_min, burst) < 0)
                return -EINVAL;
        *t = (struct gw_ratelimit){ .entries = storage,
                                    .n = 0,
                                    .cap = cap,
                                    .rate_per_min = rate_per_min,
                                    .burst = burst };
        return 0;
}

static struct gw_ratelimit_entry *entry_for(struct gw_ratelimit *t, uint32_t uid, gw_usec_t now) {
        struct gw_ratelimit_entry *e = NULL;

        for (size_t i = 0; i < t->n; i++)
                if (t->entries[i].uid == uid)
                        return &t->entries[i];
        if (t->n < t->cap)
                e = &t->entries[t->n++];
        else
                for (size_t i = 0; i < t->n && !e; i++)
                        if (t->entries[i].bucket.tat <= now)
                                e = &t->entries[i];
        if (!e)
                return NULL;
        e->uid = uid;
        (void) gw_bucket_init(&e->bucket, t->rate_per_min, t->burst);
        return e;
}

int64_t gw_ratelimit_take_n(struct gw_ratelimit *t, uint32_t uid, int64_t n, gw_usec_t now) {
        struct gw_ratelimit_entry *e;

        if (!t || !t->entries)
                return -EINVAL;
        e = entry_for(t, uid, now);
        if (!e)
                return -ENOSPC;
        return gw_bucket_take_n(&e->bucket, n, now);
}

void gw_ratelimit_give_back(struct gw_ratelimit *t, uint32_t uid, int64_t n) {
        for (size_t i = 0; t && i < t->n; i++)
                if (t->entries[i].uid == uid && n > 0) {
                        struct gw_bucket *b = &t->entries[i].bucket;
                        b->tat -= n * b->interval;
                        return;
                }
}

int64_t gw_ratelimit_take(struct gw_ratelimit *t, uint32_t uid, gw_usec_t now) {
        return gw_ratelimit_take_n(t, uid, 1, now);
}
