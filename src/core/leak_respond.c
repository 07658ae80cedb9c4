#include "core/leak_respond.h"

#include <errno.h>
#include <string.h>

#include "base/nametable.h"

static const char *const names[_GW_LEAK_POLICY_MAX] = {
        [GW_LEAK_POLICY_WARN] = "warn",
        [GW_LEAK_POLICY_RESTART] = "restart",
};

const char *gw_leak_policy_name(enum gw_leak_policy p) { return GW_NAMETABLE_NAME(names, p); }

enum gw_leak_policy gw_leak_policy_from_name(const char *name) {
        if (!name)
                return GW_LEAK_POLICY_WARN;
        for (int i = 0; i < _GW_LEAK_POLICY_MAX; i++)
                if (strcmp(name, names[i]) == 0)
                        return (enum gw_leak_policy) i;
        return _GW_LEAK_POLICY_INVALID;
}

/* Why restart cannot be carried out, or NULL when it can. */
static const char *no_restart(const struct gw_leak_respond_input *in) {
        if (!in->resumable)
                return "it cannot resume from a checkpoint: a restart would start from scratch, so it keeps running";
        if (in->attempt > in->max_retries)
                return "no retry left, so it keeps running";
        return NULL;
}

int gw_leak_respond(const struct gw_leak_respond_input *in, struct gw_leak_response *ret) {
        if (!in || !ret || in->policy < 0 || in->policy >= _GW_LEAK_POLICY_MAX || in->attempt == 0)
                return -EINVAL;
        *ret = (struct gw_leak_response){ .act = GW_LEAK_ACT_NONE };
        if (in->flagged && !in->reported) {
                const char *cannot = in->policy == GW_LEAK_POLICY_RESTART ? no_restart(in) : NULL;
                ret->act = GW_LEAK_ACT_REPORT;
                ret->restart_pending = in->policy == GW_LEAK_POLICY_RESTART && !cannot;
                ret->outcome = ret->restart_pending ? "it will be stopped after its next checkpoint and resumed from it"
                               : cannot             ? cannot
                                                    : "it keeps running";
                return 0;
        }
        if (in->restart_pending && !in->stop_sent && !in->stopping && in->ckpt_settled)
                ret->act = GW_LEAK_ACT_STOP;
        return 0;
}
