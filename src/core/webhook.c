/* Webhook topics and texts (see webhook.h). */
#include "core/webhook.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *const topic_names[_GW_HOOK_MAX] = {
        [GW_HOOK_START] = "start", [GW_HOOK_END] = "end", [GW_HOOK_RETRY] = "retry",           [GW_HOOK_WARN] = "warn",
        [GW_HOOK_LEAK] = "leak",   [GW_HOOK_GPU] = "gpu", [GW_HOOK_MODEL] = "model.published",
};

const char *gw_webhook_topic_name(enum gw_webhook_topic t) {
        return (unsigned) t < _GW_HOOK_MAX ? topic_names[t] : NULL;
}

static int topic_by_name(const char *s, size_t len) {
        for (int t = 0; t < _GW_HOOK_MAX; t++)
                if (strlen(topic_names[t]) == len && !strncmp(s, topic_names[t], len))
                        return t;
        return -1;
}

int gw_webhook_topics_parse(const char *list, unsigned *ret_mask, char *why, size_t n) {
        unsigned mask = 0;
        if (!list || !*list) {
                snprintf(why, n, "the list is empty (start, end, retry, warn, leak, gpu, model.published, or all)");
                return -EINVAL;
        }
        for (const char *p = list; *p;) {
                size_t len = strcspn(p, ",");
                int t = topic_by_name(p, len);
                if (len == 3 && !strncmp(p, "all", 3))
                        mask |= (1u << _GW_HOOK_MAX) - 1;
                else if (t >= 0)
                        mask |= 1u << t;
                else {
                        snprintf(why, n,
                                 "'%.*s' is not one of start, end, retry, warn, leak, gpu, model.published, all",
                                 (int) len, p);
                        return -EINVAL;
                }
                p += len + (p[len] == ',');
        }
        *ret_mask = mask;
        return 0;
}

int gw_webhook_topic_of(const char *kind, bool final_state) {
        static const struct {
                const char *kind;
                enum gw_webhook_topic topic;
        } kinds[] = {
                { "start", GW_HOOK_START }, { "retry", GW_HOOK_RETRY }, { "warn", GW_HOOK_WARN },
                { "leak", GW_HOOK_LEAK },   { "xid", GW_HOOK_GPU },     { "gpu", GW_HOOK_GPU },
                { "rogue", GW_HOOK_GPU },   { "stray", GW_HOOK_GPU },   { "published", GW_HOOK_MODEL },
        };
        if (!kind)
                return -1;
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
                if (!strcmp(kind, kinds[i].kind))
                        return (int) kinds[i].topic;
        /* An end is recorded with its final state, whatever its kind ("end", "lost", ...);
         * later events of a finished job (a snapshot restored) are not its end. */
        return final_state && (!strcmp(kind, "end") || !strcmp(kind, "lost") || !strcmp(kind, "dependency") ||
                               !strcmp(kind, "booking") || !strcmp(kind, "launch") || !strcmp(kind, "cancel"))
                       ? GW_HOOK_END
                       : -1;
}

int gw_webhook_url_check(const char *url, char *why, size_t n) {
        const char *host = !strncmp(url, "http://", 7) ? url + 7 : !strncmp(url, "https://", 8) ? url + 8 : NULL;
        if (!host) {
                snprintf(why, n, "'%.64s' is not an http:// or https:// URL", url);
                return -EINVAL;
        }
        if (!*host || *host == '/' || *host == ':') {
                snprintf(why, n, "'%.64s' has no host", url);
                return -EINVAL;
        }
        if (strlen(url) > GW_WEBHOOK_URL_MAX) {
                snprintf(why, n, "the URL is longer than %d bytes", GW_WEBHOOK_URL_MAX);
                return -EINVAL;
        }
        for (const unsigned char *p = (const unsigned char *) url; *p; p++)
                if (*p <= ' ' || *p == 0x7f) {
                        snprintf(why, n, "'%.64s' has a space or a control character", url);
                        return -EINVAL;
                }
        return 0;
}

void gw_webhook_text(char *buf, size_t n, const char *host, int64_t id, const char *name, const char *user,
                     const char *state, const char *message) {
        char who[200] = "";
        if (name || user)
                snprintf(who, sizeof who, " (%.80s%s%.64s)", name ? name : "", name && user ? ", " : "",
                         user ? user : "");
        snprintf(buf, n, "gpuward@%.64s: job %lld%s %s%s%.400s", host ? host : "?", (long long) id, who,
                 state ? state : "?", message && *message ? ": " : "", message ? message : "");
}
