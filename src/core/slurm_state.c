/* Slurm's job states and pending reasons mapped to gpuward's job states, wait reasons and
 * failure classes, with the sentence a user reads.  Pure.
 *
 * States come from squeue %T / %t and sacct State (Slurm 22.05's job_state_string and
 * job_state_string_compact); reasons from squeue %r (job_reason_string).  The choices that
 * are not obvious:
 *   - COMPLETING, CONFIGURING, SIGNALING, STAGE_OUT, RESIZING, SUSPENDED and STOPPED are
 *     RUNNING: the job holds its GPUs, which is what gpuward's RUNNING means to the queue.
 *   - Requeued states are PENDING again, or HELD when Slurm holds them.
 *   - NODE_FAIL and BOOT_FAIL are "lost" (retried by default, elsewhere): the job did not
 *     fail, its node did.  OUT_OF_MEMORY is host_oom: Slurm's memory cgroup, not the GPU.
 *     PREEMPTED is "killed": stopped from outside, not its own failure.  DEADLINE is a
 *     time limit.  FAILED is user_error until the log says more (the failure classifier
 *     reads the job's log as for a local job). */
#include "core/slurm.h"

#include <string.h>
#include <strings.h>

#define ELEMS(a) (sizeof(a) / sizeof((a)[0]))

struct state_row {
        const char *name, *code;
        enum gw_job_state state;
        enum gw_failure_class cls;
        const char *what;
};

static const struct state_row states[] = {
        { "PENDING", "PD", GW_JOB_PENDING, GW_FAILURE_OK, "waiting in Slurm's queue" },
        { "RUNNING", "R", GW_JOB_RUNNING, GW_FAILURE_OK, "running under Slurm" },
        { "CONFIGURING", "CF", GW_JOB_RUNNING, GW_FAILURE_OK, "given its nodes, which Slurm is readying" },
        { "COMPLETING", "CG", GW_JOB_RUNNING, GW_FAILURE_OK, "ending: Slurm is stopping what is left of it" },
        { "SIGNALING", "SI", GW_JOB_RUNNING, GW_FAILURE_OK, "running; Slurm is signalling it" },
        { "STAGE_OUT", "SO", GW_JOB_RUNNING, GW_FAILURE_OK, "ended; Slurm is staging its files out" },
        { "RESIZING", "RS", GW_JOB_RUNNING, GW_FAILURE_OK, "running; Slurm is changing its size" },
        { "SUSPENDED", "S", GW_JOB_RUNNING, GW_FAILURE_OK, "suspended by Slurm, still holding its GPUs" },
        { "STOPPED", "ST", GW_JOB_RUNNING, GW_FAILURE_OK, "stopped by Slurm (SIGSTOP), still holding its GPUs" },
        { "REQUEUED", "RQ", GW_JOB_PENDING, GW_FAILURE_OK, "requeued by Slurm: waiting to run again" },
        { "REQUEUE_FED", "RF", GW_JOB_PENDING, GW_FAILURE_OK, "requeued by a sibling cluster: waiting to run again" },
        { "REQUEUE_HOLD", "RH", GW_JOB_HELD, GW_FAILURE_OK, "requeued by Slurm and held" },
        { "SPECIAL_EXIT", "SE", GW_JOB_HELD, GW_FAILURE_OK,
          "requeued and held after an exit code the cluster marks special" },
        { "RESV_DEL_HOLD", "RD", GW_JOB_HELD, GW_FAILURE_OK, "held: its reservation was deleted" },
        { "COMPLETED", "CD", GW_JOB_COMPLETED, GW_FAILURE_OK, "exited with status 0" },
        { "FAILED", "F", GW_JOB_FAILED, GW_FAILURE_USER_ERROR, "exited with a non-zero status or could not start" },
        { "CANCELLED", "CA", GW_JOB_CANCELLED, GW_FAILURE_CANCELLED,
          "cancelled in Slurm (scancel, by its owner or an administrator)" },
        { "REVOKED", "RV", GW_JOB_CANCELLED, GW_FAILURE_CANCELLED, "revoked: a sibling cluster runs it" },
        { "TIMEOUT", "TO", GW_JOB_TIMEOUT, GW_FAILURE_TIMEOUT, "stopped by Slurm at its time limit" },
        { "DEADLINE", "DL", GW_JOB_TIMEOUT, GW_FAILURE_TIMEOUT, "stopped by Slurm at its deadline (--deadline)" },
        { "NODE_FAIL", "NF", GW_JOB_FAILED, GW_FAILURE_LOST, "its node failed under it" },
        { "BOOT_FAIL", "BF", GW_JOB_FAILED, GW_FAILURE_LOST, "its node failed to boot" },
        { "OUT_OF_MEMORY", "OOM", GW_JOB_FAILED, GW_FAILURE_HOST_OOM,
          "killed for using more host memory than it was given" },
        { "PREEMPTED", "PR", GW_JOB_FAILED, GW_FAILURE_KILLED, "preempted by Slurm for a job of higher priority" },
};

/* The state word: up to a space ("CANCELLED by 1000") or a '+' (sacct's cut columns). */
static size_t state_word(const char *t) {
        size_t n = 0;
        while (t[n] && t[n] != ' ' && t[n] != '+' && t[n] != '\t' && t[n] != '\n')
                n++;
        return n;
}

int gw_slurm_state_parse(const char *text, struct gw_slurm_state *ret) {
        if (!text)
                return -EINVAL;
        while (*text == ' ')
                text++;
        size_t n = state_word(text);
        if (n == 0)
                return -EINVAL;
        for (size_t i = 0; i < ELEMS(states); i++) {
                const struct state_row *r = &states[i];
                if ((strlen(r->name) == n && strncasecmp(text, r->name, n) == 0) ||
                    (strlen(r->code) == n && strncasecmp(text, r->code, n) == 0)) {
                        *ret = (struct gw_slurm_state){ r->state, r->cls, r->what };
                        return 0;
                }
        }
        return -EINVAL;
}

/* Pending reasons.  A row whose name ends in '*' matches every reason that starts so
 * (Slurm has dozens of AssocGrp... / QOSMax... limits, one per resource). */
struct reason_row {
        const char *name;
        enum gw_job_reason reason;
        bool blocked;
        const char *what;
};

static const struct reason_row reasons[] = {
        { "None", GW_REASON_NONE, false, "waiting for Slurm's next scheduling pass" },
        { "Resources", GW_REASON_RESOURCES, false, "waiting for GPUs: the ones it asks for are in use" },
        { "Priority", GW_REASON_PRIORITY, false, "jobs of higher priority go first" },
        { "Dependency", GW_REASON_DEPENDENCY, false, "waiting for the job it depends on" },
        { "DependencyNeverSatisfied", GW_REASON_DEPENDENCY, true,
          "will never start: the job it depends on ended in a way that cannot satisfy it" },
        { "BeginTime", GW_REASON_BACKOFF, false, "waiting for its start time (--begin)" },
        { "JobHeldUser", GW_REASON_HELD, true, "held by its owner: release it to let it start" },
        { "JobHeldAdmin", GW_REASON_HELD, true, "held by an administrator" },
        { "JobHoldMaxRequeue", GW_REASON_HELD, true, "held: it was requeued too many times" },
        { "launch failed requeued held", GW_REASON_HELD, true, "held: Slurm could not launch it and requeued it held" },
        { "Reservation", GW_REASON_RESERVATION, false, "waiting for its reservation to start" },
        { "ReservationDeleted", GW_REASON_RESERVATION, true, "will not start: its reservation was deleted" },
        { "ReqNodeNotAvail", GW_REASON_RESOURCES, false, "waiting: a node it may use is down, drained or reserved" },
        { "NodeDown", GW_REASON_RESOURCES, false, "waiting: a node it needs is down" },
        { "Licenses", GW_REASON_RESOURCES, false, "waiting for a license it asks for" },
        { "Cleaning", GW_REASON_RESOURCES, false, "waiting: Slurm is still cleaning up its last run" },
        { "Prolog", GW_REASON_RESOURCES, false, "waiting for its node's prolog to finish" },
        { "SchedDefer", GW_REASON_RESOURCES, false, "waiting: the cluster defers scheduling at submit" },
        { "BurstBuffer*", GW_REASON_RESOURCES, false, "waiting for its burst buffer" },
        { "Power*", GW_REASON_RESOURCES, false, "waiting for power on its nodes" },
        { "FrontEndDown", GW_REASON_RESOURCES, true, "will not start: no front end node is up" },
        { "FedJobLock", GW_REASON_RESOURCES, false, "waiting for the federation to release it" },
        { "PartitionDown", GW_REASON_RESOURCES, true, "will not start: its partition is down" },
        { "PartitionInactive", GW_REASON_RESOURCES, true, "will not start: its partition is inactive" },
        { "PartitionNodeLimit", GW_REASON_RESOURCES, true,
          "will not start: it asks for more nodes than its partition allows" },
        { "PartitionTimeLimit", GW_REASON_RESOURCES, true,
          "will not start: its time limit is longer than its partition allows" },
        { "PartitionConfig", GW_REASON_RESOURCES, true, "will not start: its partition's settings forbid it" },
        { "BadConstraints", GW_REASON_RESOURCES, true, "will not start: no node has what it asks for" },
        { "InvalidAccount", GW_REASON_QUOTA, true, "will not start: its account is not valid" },
        { "InvalidQOS", GW_REASON_QUOTA, true, "will not start: its QOS is not valid" },
        { "AccountNotAllowed", GW_REASON_QUOTA, true, "will not start: its account may not use the partition" },
        { "QOSNotAllowed", GW_REASON_QUOTA, true, "will not start: its QOS may not use the partition" },
        { "MaxMemPerLimit", GW_REASON_QUOTA, true, "will not start: it asks for more memory than allowed" },
        { "JobArrayTaskLimit", GW_REASON_QUOTA, false, "waiting: its array runs as many tasks as it may" },
        { "AccountingPolicy", GW_REASON_QUOTA, false, "waiting: an accounting limit holds it" },
        { "Assoc*", GW_REASON_QUOTA, false, "waiting: a limit of its account holds it" },
        { "Association*", GW_REASON_QUOTA, false, "waiting: a limit of its account holds it" },
        { "QOS*", GW_REASON_QUOTA, false, "waiting: a limit of its QOS holds it" },
        { "Max*", GW_REASON_QUOTA, false, "waiting: a per-account limit of its QOS holds it" },
        { "DeadLine", GW_REASON_RESOURCES, true, "will not start: it cannot end before its deadline" },
        { "SystemFailure", GW_REASON_RESOURCES, true, "will not start: Slurm reports a system failure" },
        { "JobLaunchFailure", GW_REASON_RESOURCES, true, "will not start: Slurm could not launch it" },
        { "OutOfMemory", GW_REASON_RESOURCES, true, "will not start: it ran out of memory before" },
};

/* The reason word: squeue prints "ReqNodeNotAvail, UnavailableNodes:gpu2"; only the part
 * before ", " names it. */
static size_t reason_word(const char *t) {
        const char *comma = strchr(t, ',');
        size_t n = comma ? (size_t) (comma - t) : strlen(t);
        while (n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\n'))
                n--;
        return n;
}

static bool reason_matches(const char *row, const char *t, size_t n) {
        size_t l = strlen(row);
        if (l > 0 && row[l - 1] == '*')
                return n >= l - 1 && strncmp(t, row, l - 1) == 0;
        return n == l && strncmp(t, row, n) == 0;
}

int gw_slurm_reason_parse(const char *text, struct gw_slurm_reason *ret) {
        if (!text)
                return -EINVAL;
        while (*text == ' ' || *text == '(')
                text++;
        size_t n = reason_word(text);
        if (n > 0 && text[n - 1] == ')')
                n--;
        if (n == 0)
                return -EINVAL;
        /* Exact names first: "QOSNotAllowed" is blocked, the "QOS*" limits are not. */
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < ELEMS(reasons); i++) {
                        const struct reason_row *r = &reasons[i];
                        bool wild = r->name[strlen(r->name) - 1] == '*';
                        if (wild != (pass == 1) || !reason_matches(r->name, text, n))
                                continue;
                        *ret = (struct gw_slurm_reason){ r->reason, r->blocked, r->what };
                        return 0;
                }
        *ret = (struct gw_slurm_reason){ GW_REASON_RESOURCES, false, "Slurm's reason: see squeue" };
        return 1;
}
