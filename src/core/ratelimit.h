/* Submission rate limits: a token bucket per user.  Pure: the caller passes now.
 *
 * The bucket holds up to `burst` tokens and refills at `rate_per_min` tokens a minute;
 * each submission or booking takes one.  It is kept as one instant (the GCRA form of a
 * token bucket, no floating point): tat, the time at which the bucket would be full
 * again.  A request at now is allowed when tat - now <= (burst - 1) * interval, and then
 * pushes tat on by one interval (60 s / rate).
 *
 * The daemon passes the monotonic clock: a wall clock stepped back an hour would otherwise
 * leave every bucket an hour from full.
 *
 * The daemon keeps a gw_ratelimit table (caller-allocated entries, one per user seen
 * recently) and, on a refusal, answers 429 with Retry-After: the seconds returned. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"

#define GW_RATELIMIT_DEFAULT_RATE 20 /* per minute */
#define GW_RATELIMIT_DEFAULT_BURST 50

struct gw_bucket {
        gw_usec_t tat; /* full again at this instant; 0 = full (new bucket) */
        gw_usec_t interval; /* refill time of one token */
        gw_usec_t tolerance; /* (burst - 1) * interval */
};

/* A full bucket.  Returns 0, or -EINVAL unless 1 <= rate_per_min <= 60,000,000 and
 * 1 <= burst <= 1,000,000. */
int gw_bucket_init(struct gw_bucket *b, int64_t rate_per_min, int64_t burst);

/* Takes one token at now.  Returns 0 when allowed (the token is taken), else the whole
 * seconds to wait before a retry would succeed (>= 1; nothing taken).  A clock that
 * steps back is tolerated: tokens are never created by it. */
int64_t gw_bucket_take(struct gw_bucket *b, gw_usec_t now);
/* n tokens at once, all or none (a batch of n submissions): 0, the whole seconds to wait, or
 * -E2BIG when n is more than the bucket ever holds. */
int64_t gw_bucket_take_n(struct gw_bucket *b, int64_t n, gw_usec_t now);

/* Tokens left at now (for `gpuward quota`), without taking any. */
int64_t gw_bucket_available(const struct gw_bucket *b, gw_usec_t now);

/* Buckets keyed by uid in caller-owned storage.  A full bucket is the same as a new one,
 * so when the table is full an entry whose bucket has refilled is reused; nothing is
 * lost by forgetting it. */
struct gw_ratelimit_entry {
        uint32_t uid;
        struct gw_bucket bucket;
};

struct gw_ratelimit {
        struct gw_ratelimit_entry *entries; /* caller-allocated, capacity cap */
        size_t n, cap;
        int64_t rate_per_min, burst;
};

/* Returns 0, or -EINVAL for bad parameters (as gw_bucket_init) or no storage. */
int gw_ratelimit_init(struct gw_ratelimit *t, struct gw_ratelimit_entry *storage, size_t cap, int64_t rate_per_min,
                      int64_t burst);

/* gw_bucket_take() on uid's bucket: 0 or seconds to wait.  -ENOSPC when the table is full
 * of users who are all still within their burst (the caller should refuse with a short
 * Retry-After and size the table larger). */
int64_t gw_ratelimit_take(struct gw_ratelimit *t, uint32_t uid, gw_usec_t now);
int64_t gw_ratelimit_take_n(struct gw_ratelimit *t, uint32_t uid, int64_t n, gw_usec_t now);
/* Undoes a take_n of n tokens just made (a batch refused after its tokens were taken). */
void gw_ratelimit_give_back(struct gw_ratelimit *t, uint32_t uid, int64_t n);
