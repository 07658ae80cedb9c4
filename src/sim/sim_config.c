/* The named configurations compared by --compare. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/fairshare.h"
#include "core/leak_respond.h"
#include "sim/sim.h"

#define SAMPLE_DEFAULT (30 * GW_SIM_SEC)
#define REPAIR_DEFAULT (4 * GW_SIM_HOUR)

static int config_named(const char *name, struct gw_sim_config *ret, char *msg, size_t msg_size);

#define FAIR_SUFFIX "+fair"
#define PREEMPT_SUFFIX "+preempt"

/* base gets NAME of "NAME" + suffix: 1; 0 when name does not end in suffix; -EINVAL (why in
 * msg) when it is too long to be a name. */
static int suffixed(const char *name, const char *suffix, char base[GW_SIM_NAME_MAX], char *msg, size_t msg_size) {
        size_t len = strlen(name), slen = strlen(suffix);
        if (len <= slen || strcmp(name + len - slen, suffix) != 0)
                return 0;
        if (len >= GW_SIM_NAME_MAX) {
                snprintf(msg, msg_size, "configuration '%s': bad name", name);
                return -EINVAL;
        }
        memcpy(base, name, len - slen);
        base[len - slen] = '\0';
        return 1;
}

typedef int config_fn(const char *name, struct gw_sim_config *ret, char *msg, size_t msg_size);

/* NAME + suffix: NAME's configuration (by base) changed by add; any other name: base's. */
static int config_suffixed(const char *name, const char *suffix, void (*add)(struct gw_sim_config *),
                           config_fn *base_fn, struct gw_sim_config *ret, char *msg, size_t msg_size) {
        char base[GW_SIM_NAME_MAX];
        struct gw_sim_config c;
        int r = suffixed(name, suffix, base, msg, msg_size);
        if (r <= 0)
                return r < 0 ? r : base_fn(name, ret, msg, msg_size);
        r = base_fn(base, &c, msg, msg_size);
        if (r < 0)
                return r;
        add(&c);
        snprintf(c.name, sizeof(c.name), "%s", name);
        *ret = c;
        return 0;
}

/* gpuwardd's preemption = true, preempt_grace 10m. */
static void with_preemption(struct gw_sim_config *c) {
        c->preempt = true;
        c->preempt_grace = 10 * GW_SIM_MIN;
}

/* The queue ordered by fair share. */
static void with_fairshare(struct gw_sim_config *c) {
        c->fairshare = true;
        c->fs_half_life = GW_FS_HALF_LIFE_DEFAULT;
}

/* NAME+fair: NAME with the queue ordered by fair share. */
static int config_fair(const char *name, struct gw_sim_config *ret, char *msg, size_t msg_size) {
        return config_suffixed(name, FAIR_SUFFIX, with_fairshare, config_named, ret, msg, msg_size);
}

/* NAME+preempt: NAME with preemption; NAME may end in +fair. */
int gw_sim_config_named(const char *name, struct gw_sim_config *ret, char *msg, size_t msg_size) {
        return config_suffixed(name, PREEMPT_SUFFIX, with_preemption, config_fair, ret, msg, msg_size);
}

static int config_named(const char *name, struct gw_sim_config *ret, char *msg, size_t msg_size) {
        char base[GW_SIM_NAME_MAX], profile[GW_RECLAIM_NAME_MAX] = "default";
        const char *colon = strchr(name, ':');
        struct gw_sim_config c = { .sample = SAMPLE_DEFAULT, .repair = REPAIR_DEFAULT };
        size_t blen = colon ? (size_t) (colon - name) : strlen(name);

        if (blen == 0 || blen >= sizeof(base) || strlen(name) >= sizeof(c.name) ||
            (colon && strlen(colon + 1) >= sizeof(profile))) {
                snprintf(msg, msg_size, "configuration '%s': bad name", name);
                return -EINVAL;
        }
        memcpy(base, name, blen);
        base[blen] = '\0';
        if (colon)
                snprintf(profile, sizeof(profile), "%s", colon + 1);
        /* A profile name alone is gpuward with everything on, using that profile. */
        if (!colon && gw_reclaim_policy_find(NULL, 0, base)) {
                snprintf(profile, sizeof(profile), "%s", base);
                snprintf(base, sizeof(base), "all");
        }
        gw_retry_policy_default(&c.retry_policy);
        if (strcmp(base, "baseline") == 0) {
                c.reclaim = GW_SIM_RECLAIM_OFF;
        } else if (strcmp(base, "reclaim") == 0) {
                c.reclaim = GW_SIM_RECLAIM_GPUWARD;
        } else if (strcmp(base, "retry") == 0) {
                /* Recovery: retries, drains on drain-worthy Xids, leak detection (warn: an oom
                 * the leak explains is retried). */
                c.retry = c.drain = c.leak_detect = true;
        } else if (strcmp(base, "bookings") == 0) {
                c.bookings = true;
        } else if (strcmp(base, "all") == 0) {
                c.reclaim = GW_SIM_RECLAIM_GPUWARD;
                c.retry = c.drain = c.leak_detect = c.bookings = true;
                c.leak_policy = GW_LEAK_POLICY_RESTART;
        } else if (strcmp(base, "princeton") == 0) {
                c.reclaim = GW_SIM_RECLAIM_UTIL_ONLY;
                c.policy = gw_sim_princeton_policy;
        } else {
                snprintf(
                        msg, msg_size,
                        "unknown configuration '%s' (known: baseline, reclaim[:PROFILE], retry, bookings, all[:PROFILE], "
                        "princeton, or a profile: default, hpo, finetune; any with +fair for fair share)",
                        name);
                return -EINVAL;
        }
        if (c.reclaim == GW_SIM_RECLAIM_GPUWARD) {
                const struct gw_reclaim_policy *p = gw_reclaim_policy_find(NULL, 0, profile);
                if (!p) {
                        snprintf(msg, msg_size, "configuration '%s': unknown reclaim profile '%s'", name, profile);
                        return -EINVAL;
                }
                c.policy = *p;
        } else if (colon) {
                snprintf(msg, msg_size, "configuration '%s': only reclaim and all take a profile", name);
                return -EINVAL;
        }
        snprintf(c.name, sizeof(c.name), "%s", name);
        *ret = c;
        return 0;
}
