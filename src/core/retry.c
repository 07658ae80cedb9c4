#include "core/retry.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/parse.h"

#include "base/nametable.h"

/* Classes a retry can never help: the user asked for the stop, or the code is wrong. */
#define NEVER_MASK                                                                                                   \
        (GW_FAILURE_BIT(GW_FAILURE_OK) | GW_FAILURE_BIT(GW_FAILURE_CANCELLED) | GW_FAILURE_BIT(GW_FAILURE_TIMEOUT) | \
         GW_FAILURE_BIT(GW_FAILURE_USER_ERROR))
#define ALL_MASK (GW_FAILURE_BIT(_GW_FAILURE_CLASS_MAX) - 1)

void gw_retry_policy_default(struct gw_retry_policy *p) {
        *p = (struct gw_retry_policy){
                .max_retries = GW_RETRY_DEFAULT_MAX,
                .retry_on = GW_FAILURE_BIT(GW_FAILURE_GPU_FAULT) | GW_FAILURE_BIT(GW_FAILURE_CUDA_ERROR) |
                            GW_FAILURE_BIT(GW_FAILURE_NCCL_ERROR) | GW_FAILURE_BIT(GW_FAILURE_LOST),
                .backoff_base = GW_RETRY_DEFAULT_BASE,
                .backoff_cap = GW_RETRY_DEFAULT_CAP,
        };
}

int gw_retry_policy_check(const struct gw_retry_policy *p, char *why, size_t why_len) {
        if (p->max_retries > GW_RETRY_MAX_RETRIES) {
                snprintf(why, why_len, "at most %d retries", GW_RETRY_MAX_RETRIES);
                return -EINVAL;
        }
        if (p->backoff_base <= 0) {
                snprintf(why, why_len, "the retry backoff must be positive");
                return -EINVAL;
        }
        if (p->backoff_cap < p->backoff_base) {
                snprintf(why, why_len, "the retry backoff cap is below its base");
                return -EINVAL;
        }
        if (p->retry_on & ~ALL_MASK) {
                snprintf(why, why_len, "unknown failure class in the retry set");
                return -EINVAL;
        }
        if (p->retry_on & NEVER_MASK) {
                for (int c = 0; c < _GW_FAILURE_CLASS_MAX; c++)
                        if (p->retry_on & NEVER_MASK & GW_FAILURE_BIT(c)) {
                                snprintf(why, why_len, "%s is never retried", gw_failure_class_name(c));
                                break;
                        }
                return -EINVAL;
        }
        return 0;
}

static bool is_blank(char c) { return c == ' ' || c == '\t'; }

static void known_classes(char *buf, size_t n) {
        size_t k = 0;

        buf[0] = '\0';
        for (int c = 0; c < _GW_FAILURE_CLASS_MAX && k < n; c++) {
                int r;

                if (NEVER_MASK & GW_FAILURE_BIT(c))
                        continue;
                r = snprintf(buf + k, n - k, "%s%s", k ? ", " : "", gw_failure_class_name(c));
                if (r < 0)
                        break;
                k += (size_t) r;
        }
}

int gw_retry_parse_classes(const char *s, uint32_t *ret_mask, char *why, size_t why_len) {
        uint32_t mask = 0;
        bool none = false, named = false;
        const char *p = s;

        if (!s) {
                snprintf(why, why_len, "empty class list (use 'none' to retry nothing)");
                return -EINVAL;
        }
        for (;;) {
                const char *q, *e;
                char name[32];
                size_t len;

                while (is_blank(*p))
                        p++;
                q = strchr(p, ',');
                e = q ? q : p + strlen(p);
                while (e > p && is_blank(e[-1]))
                        e--;
                len = (size_t) (e - p);
                if (len == 0) {
                        if (!q && !none && !named)
                                snprintf(why, why_len, "empty class list (use 'none' to retry nothing)");
                        else
                                snprintf(why, why_len, "empty class name in '%s'", s);
                        return -EINVAL;
                }
                if (len >= sizeof(name)) {
                        char known[160];
                        known_classes(known, sizeof(known));
                        snprintf(why, why_len, "unknown failure class '%.*s' (known: %s)", (int) len, p, known);
                        return -EINVAL;
                }
                memcpy(name, p, len);
                name[len] = '\0';

                if (strcasecmp(name, "none") == 0)
                        none = true;
                else {
                        enum gw_failure_class c = gw_failure_class_from_name(name);

                        if (c < 0) {
                                char known[160];
                                known_classes(known, sizeof(known));
                                snprintf(why, why_len, "unknown failure class '%s' (known: %s)", name, known);
                                return -EINVAL;
                        }
                        if (NEVER_MASK & GW_FAILURE_BIT(c)) {
                                snprintf(why, why_len, "%s is never retried", gw_failure_class_name(c));
                                return -EINVAL;
                        }
                        mask |= GW_FAILURE_BIT(c);
                        named = true;
                }
                if (none && named) {
                        snprintf(why, why_len, "'none' cannot be combined with class names");
                        return -EINVAL;
                }
                if (!q)
                        break;
                p = q + 1;
        }
        *ret_mask = mask;
        return 0;
}

char *gw_retry_format_classes(uint32_t mask, char *buf, size_t n) {
        size_t k = 0;

        if (!buf || n == 0)
                return buf;
        buf[0] = '\0';
        for (int c = 0; c < _GW_FAILURE_CLASS_MAX && k < n; c++) {
                int r;

                if (!(mask & GW_FAILURE_BIT(c)))
                        continue;
                r = snprintf(buf + k, n - k, "%s%s", k ? "," : "", gw_failure_class_name(c));
                if (r < 0)
                        break;
                k += (size_t) r;
        }
        if (k == 0)
                snprintf(buf, n, "none");
        return buf;
}

static const char *const why_names[_GW_RETRY_WHY_MAX] = {
        [GW_RETRY_WHY_RETRY] = "retry",           [GW_RETRY_WHY_OK] = "ok",   [GW_RETRY_WHY_NEVER] = "never",
        [GW_RETRY_WHY_NOT_LISTED] = "not_listed", [GW_RETRY_WHY_OOM] = "oom", [GW_RETRY_WHY_CRASH_LOOP] = "crash_loop",
        [GW_RETRY_WHY_EXHAUSTED] = "exhausted",
};

const char *gw_retry_why_name(enum gw_retry_why w) { return GW_NAMETABLE_NAME(why_names, w); }

/* base * 2^(n-1) for the n-th retry, capped; doubling stops at the cap so it cannot
 * overflow. */
static gw_usec_t backoff_for(const struct gw_retry_policy *p, unsigned n) {
        gw_usec_t d = p->backoff_base;

        for (unsigned i = 1; i < n && d < p->backoff_cap; i++)
                d = d > p->backoff_cap / 2 ? p->backoff_cap : d * 2;
        return d < p->backoff_cap ? d : p->backoff_cap;
}

/* Two consecutive failures at the same epoch with the same newest checkpoint: the job
 * made no progress a retry could resume from, so the next attempt would fail again.  An
 * attempt that started over and failed where the previous one did made none either, whatever
 * checkpoint it wrote on the way (a script that ignores GPUWARD_RESUME_FROM). */
static bool same_checkpoint(const struct gw_retry_state *s) {
        return strncmp(s->prev.ckpt, s->last.ckpt, GW_RETRY_CKPT_ID_MAX) == 0;
}

static bool crash_loop(const struct gw_retry_state *s) {
        return s->attempts >= 2 && s->prev.valid && s->last.valid && s->prev.epoch >= 0 &&
               s->prev.epoch == s->last.epoch && (same_checkpoint(s) || s->last.fresh);
}

static void stop(struct gw_retry_decision *d, enum gw_retry_why why) {
        d->retry = false;
        d->why = why;
}

int gw_retry_decide(const struct gw_retry_policy *p, const struct gw_retry_state *s, const struct gw_failure_verdict *v,
                    gw_usec_t now, struct gw_retry_decision *out) {
        struct gw_retry_decision d = { 0 };
        const char *cls = gw_failure_class_name(v->cls);
        char why[160], set[160], dur[32];
        unsigned used;

        if (!cls || s->attempts == 0 || gw_retry_policy_check(p, why, sizeof(why)) < 0)
                return -EINVAL;
        used = s->attempts - 1;

        if (v->cls == GW_FAILURE_OK) {
                stop(&d, GW_RETRY_WHY_OK);
                snprintf(d.reason, sizeof(d.reason), "the attempt succeeded: nothing to retry");
        } else if (NEVER_MASK & GW_FAILURE_BIT(v->cls)) {
                stop(&d, GW_RETRY_WHY_NEVER);
                snprintf(d.reason, sizeof(d.reason), "%s is not retried", cls);
        } else if (v->cls == GW_FAILURE_OOM && !s->oom_explained && !(p->retry_on & GW_FAILURE_BIT(v->cls))) {
                stop(&d, GW_RETRY_WHY_OOM);
                snprintf(d.reason, sizeof(d.reason),
                         "oom is retried only when a memory leak was detected or other processes "
                         "took GPU memory");
        } else if (v->cls != GW_FAILURE_OOM && !(p->retry_on & GW_FAILURE_BIT(v->cls))) {
                stop(&d, GW_RETRY_WHY_NOT_LISTED);
                snprintf(d.reason, sizeof(d.reason), "%s is not retried unless --retry-on names it (now: %s)", cls,
                         gw_retry_format_classes(p->retry_on, set, sizeof(set)));
        } else if (crash_loop(s)) {
                stop(&d, GW_RETRY_WHY_CRASH_LOOP);
                snprintf(d.reason, sizeof(d.reason), "crash loop: attempts %u and %u both failed during epoch %lld %s",
                         s->attempts - 1, s->attempts, (long long) s->last.epoch + 1,
                         same_checkpoint(s) ? "with no new checkpoint"
                                            : "(the second started over instead of resuming)");
        } else if (used >= p->max_retries) {
                stop(&d, GW_RETRY_WHY_EXHAUSTED);
                snprintf(d.reason, sizeof(d.reason), "retries exhausted (%u/%u): last %s", p->max_retries,
                         p->max_retries, cls);
        } else {
                d.retry = true;
                d.why = GW_RETRY_WHY_RETRY;
                d.retry_no = used + 1;
                d.backoff = backoff_for(p, d.retry_no);
                d.not_before = now + d.backoff;
                snprintf(d.reason, sizeof(d.reason), "retry %u/%u in %s after %s%s", d.retry_no, p->max_retries,
                         gw_format_duration(d.backoff, dur, sizeof(dur)), cls,
                         v->cls == GW_FAILURE_HOST_OOM ? " (killed by the kernel OOM killer: the job may "
                                                         "need a larger --mem)"
                                                       : "");
        }
        *out = d;
        return 0;
}
