/* What to do about a GPU memory leak (leak_policy warn | restart).  Pure: the
 * caller passes the job's leak policy, what it knows of its retries and checkpoint, and what
 * it already did in this attempt; no I/O, no clock.
 *
 * The rules (those src/daemon/training/training.c carries out in report_leak, no_restart and
 * maybe_restart):
 *   - a leak is reported once per attempt, when the detector first flags it;
 *   - under leak_policy warn the job keeps running (an out-of-memory crash it then has is an
 *     oom the leak explains: the retry policy may retry it, core/retry.h);
 *   - under leak_policy restart the job is stopped right after its next checkpoint is
 *     settled, and retried from it, so the retry loses nothing and starts with the leaked
 *     memory given back; unless it cannot resume (no checkpoint to resume from) or has no
 *     retry left: then it keeps running;
 *   - the stop is sent once; the attempt that ends so is an oom the leak explains. */
#pragma once
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

enum gw_leak_policy {
        GW_LEAK_POLICY_WARN,
        GW_LEAK_POLICY_RESTART,
        _GW_LEAK_POLICY_MAX,
        _GW_LEAK_POLICY_INVALID = -EINVAL,
};

/* "warn", "restart"; NULL out of range.  from_name: case-sensitive; NULL -> WARN (the
 * default); unknown -> _GW_LEAK_POLICY_INVALID. */
const char *gw_leak_policy_name(enum gw_leak_policy p);
enum gw_leak_policy gw_leak_policy_from_name(const char *name);

struct gw_leak_respond_input {
        enum gw_leak_policy policy;
        bool flagged; /* the detector's newest verdict says leak */
        bool resumable; /* a retry would resume from the run's checkpoint */
        unsigned attempt; /* this attempt, 1.. */
        unsigned max_retries; /* the job's retry limit */
        bool reported; /* this attempt's leak was already reported */
        bool restart_pending; /* a restart was decided for this attempt (set by REPORT) */
        bool stop_sent; /* the stop was already sent */
        bool stopping; /* the job is being stopped for another reason */
        bool ckpt_settled; /* the newest checkpoint is complete, after the newest epoch */
};

enum gw_leak_act {
        GW_LEAK_ACT_NONE,
        GW_LEAK_ACT_REPORT, /* tell the leak (event, log line); restart_pending says what follows */
        GW_LEAK_ACT_STOP, /* stop the attempt now to resume from its checkpoint */
};

struct gw_leak_response {
        enum gw_leak_act act;
        bool restart_pending; /* REPORT: the job will be stopped after its next checkpoint */
        const char *outcome; /* REPORT: "it keeps running", "it will be stopped after ...",
                                * or why restart cannot be carried out (static storage) */
};

/* Decides the response at one look.  After a REPORT the caller records it (reported,
 * restart_pending) and asks again: the stop may be due at the same look, as in the daemon.  Returns 0, or -EINVAL (NULL, a bad policy, attempt 0). */
int gw_leak_respond(const struct gw_leak_respond_input *in, struct gw_leak_response *ret);
