/* The idle-reclamation profiles of the config file: [policy.NAME] sections, each a copy of
 * "default" with what it changes, and [reclaim], the phase patterns. */
#include "daemon/base/config_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "core/jobrec.h"
#include "core/quota.h"
#include "core/reclaim.h"
#include "daemon/base/fairshare.h"

/* A profile's name is a word a user types after --idle-policy (the codec allows [a-z0-9_-]). */
static bool policy_name_ok(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n >= GW_RECLAIM_NAME_MAX)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
                        return false;
        return true;
}

/* The profile named name; a new one starts as a copy of "default", so a section only needs
 * to say what differs. */
static struct gw_policy_conf *policy_get(struct gw_config *c, const char *name) {
        for (size_t i = 0; i < c->n_policies; i++)
                if (!strcmp(c->policies[i].p.name, name))
                        return &c->policies[i];
        struct gw_policy_conf base = { .p = gw_reclaim_profiles[0] };
        for (size_t i = 0; i < c->n_policies; i++)
                if (!strcmp(c->policies[i].p.name, "default"))
                        base.p = c->policies[i].p;
        snprintf(base.p.name, sizeof base.p.name, "%s", name);
        base.max_priority = -1; /* a grant is given by name, never by inheritance */
        c->policies = gw_xrealloc(c->policies, (c->n_policies + 1) * sizeof *c->policies);
        c->policies[c->n_policies] = base;
        return &c->policies[c->n_policies++];
}

/* Seconds: a bare number is seconds here (a test wants "3"), else a duration ("5m"). */
static int parse_seconds(const char *v, bool zero_ok, gw_usec_t *ret) {
        return gw_config_parse_seconds_or_duration(v, zero_ok ? 0 : 1, 30LL * 24 * 3600, ret);
}

int gw_config_policy_line(struct gw_config *c, const char *pname, const char *name, const char *v) {
        char key[64];
        snprintf(key, sizeof key, "%s", name);
        for (char *p = key; *p; p++)
                if (*p == '-')
                        *p = '_';
        if (!policy_name_ok(pname)) {
                gw_config_fail(c, "[policy.%s]: a profile name is 1-%d of a-z 0-9 _ -", pname, GW_RECLAIM_NAME_MAX - 1);
                return -EINVAL;
        }
        struct gw_policy_conf *pc = policy_get(c, pname);
        long long n;
        int r = 0;
        if (!strcmp(key, "util_threshold")) {
                char num[32];
                snprintf(num, sizeof num, "%.*s", (int) strcspn(v, "%"), v);
                r = gw_parse_int(num, 0, 100, &n);
                if (r == 0)
                        pc->p.util_threshold = (unsigned) n;
        } else if (!strcmp(key, "idle_timeout"))
                r = parse_seconds(v, false, &pc->p.idle_timeout);
        else if (!strcmp(key, "warn") || !strcmp(key, "warn_seconds"))
                r = parse_seconds(v, true, &pc->p.warn);
        else if (!strcmp(key, "grace") || !strcmp(key, "grace_seconds"))
                r = parse_seconds(v, true, &pc->p.grace);
        else if (!strcmp(key, "protect_max"))
                r = parse_seconds(v, true, &pc->p.protect_max);
        else if (!strcmp(key, "enabled") || !strcmp(key, "reclaim"))
                r = gw_config_parse_bool(v, &pc->p.enabled) ? 0 : -EINVAL;
        else if (!strcmp(key, "allowed"))
                gw_config_set_str(&pc->allowed, v);
        else if (!strcmp(key, "leak_mib_per_epoch")) { /* the global key's ranges */
                if ((r = gw_parse_int(v, 1, 1 << 20, &n)) == 0)
                        pc->leak_mib_per_epoch = (double) n;
        } else if (!strcmp(key, "leak_epochs")) {
                if ((r = gw_parse_int(v, 2, 64, &n)) == 0)
                        pc->leak_epochs = (unsigned) n;
        } else if (!strcmp(key, "preemptible"))
                r = gw_config_parse_bool(v, &pc->preemptible) ? 0 : -EINVAL;
        else if (!strcmp(key, "max_priority")) {
                if (!strcmp(v, "none"))
                        pc->max_priority = -1;
                else if ((r = gw_parse_int(v, 0, GW_PRIORITY_MAX, &n)) == 0)
                        pc->max_priority = (int) n;
        } else {
                gw_config_fail(
                        c,
                        "unknown key '%s' in [policy.%s] (util_threshold, idle_timeout, warn, grace, "
                        "protect_max, enabled, allowed, leak_mib_per_epoch, leak_epochs, preemptible, max_priority)",
                        name, pname);
                return -EINVAL;
        }
        if (r < 0)
                gw_config_fail(c, "[policy.%s] %s: invalid value '%s'", pname, name, v);
        return r;
}

int gw_config_reclaim_line(struct gw_config *c, const char *name, const char *v) {
        if (!strcmp(name, "validating_patterns") || !strcmp(name, "validating-patterns"))
                gw_config_set_str(&c->validating_patterns, v);
        else if (!strcmp(name, "saving_patterns") || !strcmp(name, "saving-patterns"))
                gw_config_set_str(&c->saving_patterns, v);
        else {
                gw_config_fail(c, "unknown key '%s' in [reclaim] (validating_patterns, saving_patterns)", name);
                return -EINVAL;
        }
        return 0;
}

/* Every profile must make sense as a whole (an enabled one needs an idle timeout...). */
int gw_config_policies_check(const struct gw_config *c) {
        for (size_t i = 0; i < c->n_policies; i++)
                if (gw_reclaim_policy_check(&c->policies[i].p) < 0) {
                        fprintf(stderr,
                                "gpuwardd: error: %s: [policy.%s] is not usable (threshold 0-100, "
                                "durations >= 0, an idle_timeout when enabled)\n",
                                c->config_file ? c->config_file : "config", c->policies[i].p.name);
                        return -EINVAL;
                }
        return 0;
}

int gw_config_fairshare_line(struct gw_config *c, bool weights, const char *name, const char *v) {
        char why[160];
        if (weights) {
                if (gw_fair_weights_parse(v, NULL, NULL, why, sizeof why) < 0) {
                        gw_config_fail(c, "%s: %s", name, why);
                        return -EINVAL;
                }
                gw_config_set_str(&c->fairshare_weights, v);
                return 0;
        }
        return gw_config_parse_period(c, name, v, "for usage that never decays", &c->fairshare_half_life);
}

const struct gw_policy_conf *gw_config_job_policy(const struct gw_config *c, const struct gw_job *j) {
        const char *name = j->idle_policy ? j->idle_policy : "default";
        for (size_t i = 0; i < c->n_policies; i++)
                if (!strcmp(c->policies[i].p.name, name))
                        return &c->policies[i];
        return NULL;
}

bool gw_config_job_preemptible(const struct gw_config *c, const struct gw_job *j) {
        if (j->interactive)
                return false;
        if (j->preemptible)
                return true;
        const struct gw_policy_conf *pc = gw_config_job_policy(c, j);
        return pc && pc->preemptible;
}

bool gw_config_job_preempt_resumes(const struct gw_config *c, const struct gw_job *j) {
        return j->yolo || j->checkpoint || j->resume_cmd || c->preempt_unresumable;
}
