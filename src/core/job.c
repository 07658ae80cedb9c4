#include "core/job.h"

#include <stddef.h>

#include "base/nametable.h"

static const char *const state_names[_GW_JOB_STATE_MAX] = {
        [GW_JOB_PENDING] = "PENDING",     [GW_JOB_HELD] = "HELD",           [GW_JOB_RUNNING] = "RUNNING",
        [GW_JOB_COMPLETED] = "COMPLETED", [GW_JOB_FAILED] = "FAILED",       [GW_JOB_CANCELLED] = "CANCELLED",
        [GW_JOB_TIMEOUT] = "TIMEOUT",     [GW_JOB_RECLAIMED] = "RECLAIMED",
};

static const char *const reason_names[_GW_REASON_MAX] = {
        [GW_REASON_NONE] = "",
        [GW_REASON_RESOURCES] = "Resources",
        [GW_REASON_DEPENDENCY] = "Dependency",
        [GW_REASON_HELD] = "Held",
        [GW_REASON_PRIORITY] = "Priority",
        [GW_REASON_BACKOFF] = "Backoff",
        [GW_REASON_RESERVATION] = "Reservation",
        [GW_REASON_QUOTA] = "Quota",
        [GW_REASON_ARRAY_LIMIT] = "JobArrayTaskLimit",
        [GW_REASON_PREEMPTED] = "Preempted",
        [GW_REASON_DRAINED] = "Drained",
        [GW_REASON_STAGING] = "Staging",
};

static const char *const dep_kind_names[_GW_DEP_KIND_MAX] = {
        [GW_DEP_KIND_NONE] = "none",
        [GW_DEP_KIND_OK] = "ok",
        [GW_DEP_KIND_ANY] = "any",
};

const char *gw_job_state_name(enum gw_job_state s) { return GW_NAMETABLE_NAME(state_names, s); }

enum gw_job_state gw_job_state_from_name(const char *name) {
        return (enum gw_job_state) GW_NAMETABLE_INDEX(state_names, name);
}

const char *gw_job_reason_name(enum gw_job_reason r) { return GW_NAMETABLE_NAME(reason_names, r); }

const char *gw_dep_kind_name(enum gw_dep_kind k) { return GW_NAMETABLE_NAME(dep_kind_names, k); }

enum gw_dep_kind gw_dep_kind_from_name(const char *name) {
        return (enum gw_dep_kind) GW_NAMETABLE_INDEX(dep_kind_names, name);
}

bool gw_job_state_is_final(enum gw_job_state s) {
        switch (s) {
        case GW_JOB_COMPLETED:
        case GW_JOB_FAILED:
        case GW_JOB_CANCELLED:
        case GW_JOB_TIMEOUT:
        case GW_JOB_RECLAIMED:
                return true;
        default:
                return false;
        }
}

#define BIT(s) (1u << (s))

/* Allowed targets per source state.  PENDING → FAILED is for a dependency that can never
 * be met; RUNNING → PENDING requeues a job for a retry. */
static const unsigned allowed_to[_GW_JOB_STATE_MAX] = {
        [GW_JOB_PENDING] = BIT(GW_JOB_HELD) | BIT(GW_JOB_RUNNING) | BIT(GW_JOB_CANCELLED) | BIT(GW_JOB_FAILED),
        [GW_JOB_HELD] = BIT(GW_JOB_PENDING) | BIT(GW_JOB_CANCELLED),
        [GW_JOB_RUNNING] = BIT(GW_JOB_COMPLETED) | BIT(GW_JOB_FAILED) | BIT(GW_JOB_CANCELLED) | BIT(GW_JOB_TIMEOUT) |
                           BIT(GW_JOB_RECLAIMED) | BIT(GW_JOB_PENDING),
};

bool gw_job_transition_ok(enum gw_job_state from, enum gw_job_state to) {
        if (from < 0 || from >= _GW_JOB_STATE_MAX || to < 0 || to >= _GW_JOB_STATE_MAX)
                return false;
        return (allowed_to[from] & BIT(to)) != 0;
}

enum gw_dep_status gw_dep_status_of(enum gw_dep_kind k, enum gw_job_state other) {
        bool final = gw_job_state_is_final(other);

        switch (k) {
        case GW_DEP_KIND_NONE:
                return GW_DEP_SATISFIED;
        case GW_DEP_KIND_OK:
                if (other == GW_JOB_COMPLETED)
                        return GW_DEP_SATISFIED;
                return final ? GW_DEP_NEVER : GW_DEP_WAITING;
        case GW_DEP_KIND_ANY:
                return final ? GW_DEP_SATISFIED : GW_DEP_WAITING;
        default:
                /* An unknown kind must not start the job, nor end it. */
                return GW_DEP_WAITING;
        }
}
