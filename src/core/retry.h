/* The retry decision after a failed attempt.  Pure: plain data and an explicit now in, a
 * decision out; no I/O, no clock.
 *
 * The daemon remembers per job, between attempts: how many attempts it made, and for the
 * last two of them the epoch each reached and the identity of the newest checkpoint when it
 * ended (gw_ckpt_id() of last.pt's mtime and size, or a hash).  It passes the verdict of the
 * attempt that just ended (core/failure.h) and, for an oom, whether the leak detector
 * flagged the job or other processes took memory on its GPUs.
 *
 * Rules, in order:
 *   - ok: nothing to retry.
 *   - cancelled, timeout, user_error: never retried (the user or the code asked for it).
 *   - oom: retried when the caller says a leak or another process caused it, or when the
 *     policy names oom explicitly; otherwise not (the job itself does not fit).
 *   - any other class: retried only when the policy's class set names it (reclaimed and
 *     host_oom are not in the default set).
 *   - crash loop: the last two attempts both failed at the same known epoch and the newest
 *     checkpoint did not change between them: stop.
 *   - retries exhausted: attempts - 1 >= max_retries: stop.
 *   - otherwise retry after base * 2^(retries so far), capped (10 s, 20 s, 40 s ... 600 s). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"
#include "core/failure.h"

#define GW_RETRY_DEFAULT_MAX 3
#define GW_RETRY_DEFAULT_CLASSES "gpu_fault,cuda_error,nccl_error,lost"
#define GW_RETRY_DEFAULT_BASE (10 * GW_USEC_PER_SEC)
#define GW_RETRY_DEFAULT_CAP (600 * GW_USEC_PER_SEC)
#define GW_RETRY_MAX_RETRIES 100 /* upper bound gw_retry_policy_check accepts */

struct gw_retry_policy {
        unsigned max_retries; /* retries after the first attempt (Kubernetes' backoffLimit) */
        uint32_t retry_on; /* GW_FAILURE_BIT() of each class to retry */
        gw_usec_t backoff_base; /* delay before the first retry; doubles for each next one */
        gw_usec_t backoff_cap; /* longest delay */
};

/* Fills in the defaults: 3 retries, gpu_fault,cuda_error,nccl_error,lost, 10 s, 600 s. */
void gw_retry_policy_default(struct gw_retry_policy *p);

/* 0, or -EINVAL with a message in why: non-positive base, cap below base, more than
 * GW_RETRY_MAX_RETRIES, a never-retried class in retry_on. */
int gw_retry_policy_check(const struct gw_retry_policy *p, char *why, size_t why_len);

/* Parses "gpu_fault, lost" (commas, blanks around names, case-insensitive) or "none" into a
 * class mask.  Writes *ret_mask only on success.  -EINVAL with a message in why for an empty
 * list or name, an unknown name ("unknown failure class 'gpu_falt' (known: ...)"), or a
 * class that is never retried ("user_error is never retried"). */
int gw_retry_parse_classes(const char *s, uint32_t *ret_mask, char *why, size_t why_len);

/* "gpu_fault,cuda_error" (class order), "none" for an empty mask.  Returns buf. */
char *gw_retry_format_classes(uint32_t mask, char *buf, size_t n);

#define GW_RETRY_CKPT_ID_MAX 72

/* What one attempt reached, for the crash-loop rule. */
struct gw_attempt_mark {
        bool valid; /* false: not known (then the rule does not apply) */
        int64_t epoch; /* epochs it had finished when it ended (it failed
                                          * during epoch + 1); < 0 unknown */
        char ckpt[GW_RETRY_CKPT_ID_MAX]; /* identity of the newest checkpoint at its end;
                                          * "" = no checkpoint */
        bool fresh; /* it started over (given no checkpoint, or it wrote
                                          * a run of its own instead of resuming the one given):
                                          * a checkpoint of its own is then no progress */
};

struct gw_retry_state {
        unsigned attempts; /* attempts made, the one that just ended included (>= 1) */
        struct gw_attempt_mark prev; /* attempt attempts-1 */
        struct gw_attempt_mark last; /* attempt attempts, the one that just ended */
        bool oom_explained; /* for an oom: a leak was detected in the job, or other
                                      * processes took memory on its GPUs */
};

enum gw_retry_why {
        GW_RETRY_WHY_RETRY, /* retry */
        GW_RETRY_WHY_OK, /* the attempt succeeded */
        GW_RETRY_WHY_NEVER, /* cancelled / timeout / user_error */
        GW_RETRY_WHY_NOT_LISTED, /* the class is not in retry_on */
        GW_RETRY_WHY_OOM, /* an oom with no outside cause */
        GW_RETRY_WHY_CRASH_LOOP,
        GW_RETRY_WHY_EXHAUSTED,
        _GW_RETRY_WHY_MAX,
        _GW_RETRY_WHY_INVALID = -EINVAL,
};

/* "retry", "ok", "never", "not_listed", "oom", "crash_loop", "exhausted"; NULL if out of range. */
const char *gw_retry_why_name(enum gw_retry_why w);

struct gw_retry_decision {
        bool retry;
        enum gw_retry_why why;
        gw_usec_t backoff; /* the delay used; 0 when not retrying */
        gw_usec_t not_before; /* now + backoff; 0 when not retrying */
        unsigned retry_no; /* which retry this is (1 = first); 0 when not retrying */
        char reason[192]; /* "retry 2/3 in 20s after cuda_error",
                                * "retries exhausted (3/3): last cuda_error",
                                * "user_error is not retried",
                                * "crash loop: attempts 2 and 3 both failed during epoch 8 with no
                                * new checkpoint" */
};

/* Decides whether and when the job runs again.  Reads its inputs only; writes *out fully.
 * Returns 0, or -EINVAL for an invalid policy (see gw_retry_policy_check), attempts == 0
 * or a verdict class out of range (out untouched). */
int gw_retry_decide(const struct gw_retry_policy *p, const struct gw_retry_state *s, const struct gw_failure_verdict *v,
                    gw_usec_t now, struct gw_retry_decision *out);
