/* The job model: states, wait reasons, the legal transitions.  Pure. */
#pragma once
#include <errno.h>
#include <stdbool.h>

enum gw_job_state {
        GW_JOB_PENDING,
        GW_JOB_HELD,
        GW_JOB_RUNNING,
        GW_JOB_COMPLETED,
        GW_JOB_FAILED,
        GW_JOB_CANCELLED,
        GW_JOB_TIMEOUT,
        GW_JOB_RECLAIMED,
        _GW_JOB_STATE_MAX,
        _GW_JOB_STATE_INVALID = -EINVAL,
};

/* Why a job is not running yet.  NONE for running and finished jobs. */
enum gw_job_reason {
        GW_REASON_NONE,
        GW_REASON_RESOURCES,
        GW_REASON_DEPENDENCY,
        GW_REASON_HELD,
        GW_REASON_PRIORITY,
        GW_REASON_BACKOFF, /* waiting out the delay before a retry */
        GW_REASON_RESERVATION, /* its booking has not started */
        GW_REASON_QUOTA, /* its user is at a wait-type quota limit */
        GW_REASON_ARRAY_LIMIT, /* an array: as many of its tasks run as its %N allows, or
                                * all its tasks started and it waits for their ends */
        GW_REASON_PREEMPTED, /* queued again after a preemption, it waits for GPUs, first of its
                              * priority: shown for Resources, Priority or Reservation (never
                              * the scheduler's own; gw_job_reason_shown) */
        GW_REASON_DRAINED, /* it needs more GPUs than are in service: it could start only once
                              * a drained or unhealthy GPU is back (GPUs in use do not count) */
        GW_REASON_STAGING, /* its --dataset is being copied into the node's cache */
        _GW_REASON_MAX,
        _GW_REASON_INVALID = -EINVAL,
};

/* What a job waits for with --after JOB[:ok|:any]. */
enum gw_dep_kind {
        GW_DEP_KIND_NONE,
        GW_DEP_KIND_OK, /* start only when the other job COMPLETED */
        GW_DEP_KIND_ANY, /* start when the other job ended, however */
        _GW_DEP_KIND_MAX,
        _GW_DEP_KIND_INVALID = -EINVAL,
};

enum gw_dep_status {
        GW_DEP_SATISFIED, /* or no dependency */
        GW_DEP_WAITING,
        GW_DEP_NEVER, /* the other job ended in a way that can never satisfy it */
};

const char *gw_job_state_name(enum gw_job_state s); /* "RUNNING"; NULL if out of range */
enum gw_job_state gw_job_state_from_name(const char *name); /* case-insensitive */
const char *gw_job_reason_name(enum gw_job_reason r); /* "Resources"; "" for NONE */
const char *gw_dep_kind_name(enum gw_dep_kind k); /* "ok", "any" */
enum gw_dep_kind gw_dep_kind_from_name(const char *name);

bool gw_job_state_is_final(enum gw_job_state s);
/* Whether the daemon may move a job from one state to another. */
bool gw_job_transition_ok(enum gw_job_state from, enum gw_job_state to);

/* What a dependency of kind k on a job in state other means for the waiter. */
enum gw_dep_status gw_dep_status_of(enum gw_dep_kind k, enum gw_job_state other);
