/* Idle-reclamation profiles in the daemon: which one a job runs under, who may choose which at
 * submit, and the change of a running job's profile (POST /api/v1/jobs/{id}/policy,
 * handlers_feature.c). */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "daemon/daemon.h"
#include "daemon/reclaim/reclaim_watch.h"

const struct gw_policy_conf *gw_reclaim_policy_conf(const struct gw_daemon *d, const char *name) {
        for (size_t i = 0; name && i < d->cfg->n_policies; i++)
                if (!strcmp(d->cfg->policies[i].p.name, name))
                        return &d->cfg->policies[i];
        return NULL;
}

const struct gw_reclaim_policy *gw_reclaim_policy_of(const struct gw_daemon *d, const struct gw_job *j) {
        const struct gw_policy_conf *pc = gw_reclaim_policy_conf(d, j->idle_policy ? j->idle_policy : "default");
        if (!pc)
                pc = gw_reclaim_policy_conf(d, "default");
        return pc ? &pc->p : &gw_reclaim_profiles[0];
}

static bool in_group(const char *group, const char *user, gid_t gid) {
        struct group gr, *grp = NULL;
        char buf[16384];
        if (getgrnam_r(group, &gr, buf, sizeof buf, &grp) != 0 || !grp)
                return false;
        gid_t want = grp->gr_gid, groups[256];
        int n = (int) ELEMENTSOF(groups);
        if (gid == want)
                return true;
        if (getgrouplist(user, gid, groups, &n) < 0)
                return false;
        for (int i = 0; i < n; i++)
                if (groups[i] == want)
                        return true;
        return false;
}

/* Whether j's user may choose pc.  Admins always may: they can set any profile afterwards
 * anyway (POST .../policy).  "default" is what a job gets without asking, so naming it is
 * always allowed.  Without an allowed list, a profile that reclaims is open to everyone and
 * one that does not is for admins only (opting out is their call). */
static bool may_use(const struct gw_daemon *d, const struct gw_policy_conf *pc, const struct gw_job *j) {
        const char *user = j->user ? j->user : "";
        /* The API's rule (handlers.c account_is_admin): @group entries of admins count too. */
        bool admin = gw_userdb_is_admin(d->users, d->cfg->admins, geteuid(), j->uid, j->gid, user, d->now);
        if (admin || !strcmp(pc->p.name, "default") || (!pc->allowed && pc->p.enabled))
                return true;
        for (const char *p = pc->allowed; p && *p;) {
                p += strspn(p, ", ");
                size_t l = strcspn(p, ", ");
                char item[256];
                snprintf(item, sizeof item, "%.*s", (int) (l < sizeof item ? l : sizeof item - 1), p);
                p += l;
                if (!item[0])
                        continue;
                if (!strcmp(item, "*") || !strcmp(item, user))
                        return true;
                if (item[0] == '@' && strcmp(item, "@admins") && in_group(item + 1, user, j->gid))
                        return true;
        }
        return false;
}

static void known_profiles(const struct gw_daemon *d, char *buf, size_t n) {
        size_t used = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < d->cfg->n_policies && used < n; i++) {
                int r = snprintf(buf + used, n - used, "%s%s", i ? ", " : "", d->cfg->policies[i].p.name);
                if (r > 0)
                        used += (size_t) r;
        }
}

int gw_reclaim_check_submit(struct gw_daemon *d, const struct gw_job *j, struct gw_submit_error *err) {
        if (!j->idle_policy)
                return 0;
        const struct gw_policy_conf *pc = gw_reclaim_policy_conf(d, j->idle_policy);
        if (!pc) {
                char names[256];
                known_profiles(d, names, sizeof names);
                err->status = 400;
                snprintf(err->field, sizeof err->field, "idle_policy");
                snprintf(err->message, sizeof err->message, "idle_policy: no profile '%.64s' (profiles here: %s)",
                         j->idle_policy, names);
                return -EINVAL;
        }
        if (may_use(d, pc, j))
                return 0;
        err->status = 403;
        snprintf(err->field, sizeof err->field, "idle_policy");
        snprintf(err->message, sizeof err->message,
                 "idle_policy: user %.64s may not use profile '%s'%s (allowed: %.80s); ask an admin", j->user,
                 pc->p.name, pc->p.enabled ? "" : ", which turns reclamation off",
                 pc->allowed ? pc->allowed : "admins only");
        return -EPERM;
}

/* Changes dj's profile to name (by: who, for the event "policy").  0, or the HTTP status of
 * the refusal with why: 400 no such profile, 503 the store refused the change (undone). */
int gw_reclaim_policy_set(struct gw_daemon *d, struct gw_djob *dj, const char *name, const char *by, char *why,
                          size_t n) {
        const struct gw_policy_conf *pc = gw_reclaim_policy_conf(d, name);
        if (!pc) {
                char names[256];
                known_profiles(d, names, sizeof names);
                snprintf(why, n, "idle_policy: no profile '%s' (profiles here: %s)", name, names);
                return 400;
        }
        struct gw_job *j = dj->job;
        char msg[256];
        snprintf(msg, sizeof msg, "idle policy %s -> %s (set by %s)%s", j->idle_policy ? j->idle_policy : "default",
                 pc->p.name, by, pc->p.enabled ? "" : ": reclamation off");
        _cleanup_free_ char *old = j->idle_policy;
        j->idle_policy = gw_xstrdup(pc->p.name);
        if (gw_store_job_update(d->store, j, "policy", msg) < 0) {
                free(j->idle_policy);
                j->idle_policy = TAKE_PTR(old);
                snprintf(why, n, "cannot record the change: %s", gw_store_errmsg(d->store));
                return 503;
        }
        log_info("job %lld: %s", (long long) j->id, msg);
        return 0;
}
