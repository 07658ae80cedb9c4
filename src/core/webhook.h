/* Webhooks: which job events are sent, and what is said.  Pure; the sending is
 * daemon/notify/notify.c's. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What an admin subscribes to (webhook_events), each a group of job event kinds. */
enum gw_webhook_topic {
        GW_HOOK_START, /* the job started (kind start) */
        GW_HOOK_END, /* it ended: COMPLETED, FAILED, CANCELLED, TIMEOUT, RECLAIMED */
        GW_HOOK_RETRY, /* a failed attempt is retried */
        GW_HOOK_WARN, /* idle, time limit or booking end ahead */
        GW_HOOK_LEAK, /* the GPU memory-leak detector flagged it */
        GW_HOOK_GPU, /* on its GPUs: an Xid, a lost GPU, a rogue or stray process */
        GW_HOOK_MODEL, /* its run was published as a model version (kind published) */
        _GW_HOOK_MAX,
};

#define GW_WEBHOOK_DEFAULT_TOPICS "end,retry,warn,leak"
#define GW_WEBHOOK_URL_MAX 2048

/* "end,retry" or "all" into a mask of topics.  0, or -EINVAL with the reason in why. */
int gw_webhook_topics_parse(const char *list, unsigned *ret_mask, char *why, size_t n);
const char *gw_webhook_topic_name(enum gw_webhook_topic t);
/* The topic of a job event (its kind, and whether its state is final); -1 for none. */
int gw_webhook_topic_of(const char *kind, bool final_state);

/* An http:// or https:// URL with a host, printable, at most GW_WEBHOOK_URL_MAX bytes.
 * 0, or -EINVAL with the reason in why. */
int gw_webhook_url_check(const char *url, char *why, size_t n);

/* The line chat tools show ("text" of the payload): "gpuward@HOST: job 17 (smoke, alice)
 * COMPLETED: exit 0".  name, user and message may be NULL. */
void gw_webhook_text(char *buf, size_t n, const char *host, int64_t id, const char *name, const char *user,
                     const char *state, const char *message);
