/* Failure classification: why did an attempt of a job end?  Pure: plain data in, a verdict
 * out; no I/O, no clock, no allocation.
 *
 * The daemon gathers, per ended attempt:
 *   - how it ended: exit code, or a signal it did not send, or its own action (cancel, time
 *     limit, idle reclaim); or that it lost track of the job (daemon restart, reboot);
 *   - the raw last bytes of the attempt's log (enough for ~200 lines; 64 KiB is plenty);
 *   - the NVML events seen on the job's GPUs between the attempt's start and its end;
 *   - whether the kernel OOM killer hit it (memory cgroup oom_kill counter grew during the
 *     attempt, or its own judgement as a flag).
 *
 * Precedence (first rule that applies wins):
 *   1. The daemon's own action: cancelled, timeout, reclaimed.  Whatever the log says, the
 *      job ended because gpuward stopped it.
 *   2. A clean exit (code 0, not lost) is ok.  Deliberately before the log rules: a finished
 *      run must not be re-run because a harmless "CUDA out of memory" (e.g. an AutoBatch
 *      probe) or a caught error is still in its tail.  Drain-worthy GPU events are still
 *      reported in drain_mask so the daemon drains the GPU.
 *   3. gpu_fault: a drain-worthy NVML event (Xid 48, 64, 74, 79, 95 by default, a double-bit
 *      ECC error, GPU lost), else any log line matching a gpu_fault pattern ("GPU is lost",
 *      "uncorrectable ECC error encountered" ...), wherever it is in the tail.  A GPU that
 *      fell off the bus makes every later CUDA/NCCL error a consequence.
 *  3b. lost: the command ran behind a node-side step (node_step) that exited
 *      GW_FAILURE_NODE_EXIT after writing a GW_FAILURE_NODE_MARK line: the node could not do
 *      its part (no dataset stager, no scratch folder), so the attempt never had a fair run.
 *      The evidence is the step's last such line, after the node's name.  A user's command
 *      can print that line and exit 69 too; it then reads as lost, which the retry policy
 *      bounds by its max retries like any lost attempt.  A 69 without the line is the
 *      command's own status (rule 9).
 *   4. The first log line (oldest in the tail) matching an oom / nccl_error / cuda_error /
 *      host_oom / user_error pattern.  The first fatal line is usually the cause: a CUDA
 *      error on one rank is followed by NCCL watchdog timeouts on the others.  Within one
 *      line the first pattern of the table wins, so the table lists specific texts before
 *      generic ones ("CUDA error: out of memory" -> oom before "CUDA error:" -> cuda_error).
 *      Out-of-memory lines that Ultralytics' AutoBatch prints while it probes batch sizes
 *      (between its first "AutoBatch: " line and a later one) are not the cause: training
 *      went on after them.
 *   5. host_oom: the oom_killed flag, or the cgroup's oom_kill counter grew; or, where the
 *      job had no memory cgroup to count it, a SIGKILL while the host's oom_kill count grew.
 *   6. cuda_error from a job-error Xid (13, 31, 43, 94: an application fault the driver saw)
 *      when the log named nothing.
 *   7. lost: the daemon lost track of the job (no exit status).
 *   8. A SIGKILL of the main process: user_error when gpuward sent it outside a stop
 *      (sigkill_why: the evidence says why); else killed: it came from outside gpuward (a
 *      person, another tool), and the evidence says what is known of the OOM killer.  Only
 *      the kernel or a kill(2) sends SIGKILL, and whatever the job was doing, that was not
 *      its own failure.
 *   9. user_error: everything else; the evidence is the exception line of the last Python
 *      traceback in the tail ("ZeroDivisionError: division by zero"), else the exit status.
 *
 * Tracebacks are recognised by structure, not by the pattern table: the header
 * "Traceback (most recent call last):" precedes the line that says what went wrong, so a
 * header is never itself a cause (rule 4 sees the exception line like any other line).
 *
 * Known limit: a Python exception on one DDP rank followed by NCCL watchdog timeouts on the
 * others reads as nccl_error (retried); the retry policy's crash-loop rule stops it. */
#pragma once
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gw_failure_class {
        GW_FAILURE_OK,
        GW_FAILURE_GPU_FAULT,
        GW_FAILURE_CUDA_ERROR,
        GW_FAILURE_NCCL_ERROR,
        GW_FAILURE_OOM,
        GW_FAILURE_HOST_OOM,
        GW_FAILURE_LOST,
        GW_FAILURE_USER_ERROR,
        GW_FAILURE_KILLED, /* SIGKILL from outside gpuward, not the OOM killer's */
        GW_FAILURE_CANCELLED,
        GW_FAILURE_TIMEOUT,
        GW_FAILURE_RECLAIMED,
        _GW_FAILURE_CLASS_MAX,
        _GW_FAILURE_CLASS_INVALID = -EINVAL,
};

#define GW_FAILURE_BIT(c) (UINT32_C(1) << (unsigned) (c))

const char *gw_failure_class_name(enum gw_failure_class c); /* "cuda_error"; NULL if out of range */
enum gw_failure_class gw_failure_class_from_name(const char *name); /* case-insensitive; _INVALID */

/* How the attempt's main process ended. */
enum gw_attempt_end {
        GW_END_EXITED, /* exited by itself; status = exit code */
        GW_END_SIGNALED, /* killed by a signal gpuward did not send; status = signal number */
        GW_END_CANCELLED, /* gpuward stopped it: cancel by user or admin */
        GW_END_TIMEOUT, /* gpuward stopped it: time limit or end of booking */
        GW_END_RECLAIMED, /* gpuward stopped it: idle-GPU reclamation */
        _GW_ATTEMPT_END_MAX,
        _GW_ATTEMPT_END_INVALID = -EINVAL,
};

enum gw_gpu_event_kind {
        GW_GPU_EVENT_XID, /* xid holds the Xid number */
        GW_GPU_EVENT_ECC_DBE, /* double-bit (uncorrectable) ECC error */
        GW_GPU_EVENT_LOST, /* NVML returned GPU_IS_LOST for it */
        _GW_GPU_EVENT_KIND_MAX,
        _GW_GPU_EVENT_KIND_INVALID = -EINVAL,
};

/* One NVML event on one of the job's GPUs during the attempt (the caller filters by GPU and
 * time; events are given oldest first). */
struct gw_gpu_event {
        enum gw_gpu_event_kind kind;
        int gpu; /* the daemon's GPU index */
        unsigned xid;
};

/* A log pattern: a line containing text (case-sensitive, after ANSI escapes are stripped)
 * is evidence of cls.  Only gpu_fault, cuda_error, nccl_error, oom, host_oom and user_error
 * may come from a log; other classes are rejected by gw_failure_patterns_check() and
 * ignored by the classifier. */
struct gw_failure_pattern {
        enum gw_failure_class cls;
        const char *text;
};

/* The built-in table (static storage, never freed), in matching order.  To extend it, the
 * config builds an array of its own patterns followed by these (its own win within a line);
 * to replace it, it passes only its own. */
const struct gw_failure_pattern *gw_failure_default_patterns(size_t *ret_n);

/* The default drain-worthy Xids: 48, 64, 74, 79, 95 (static storage). */
const unsigned *gw_failure_default_drain_xids(size_t *ret_n);

/* 0, or -EINVAL with a message in why (e.g. "pattern 3: class ok cannot come from a log"). */
int gw_failure_patterns_check(const struct gw_failure_pattern *p, size_t n, char *why, size_t why_len);

/* What a node-side step (gpuwardd --stage-run, --scratch-run on a Slurm node) writes to the
 * job's output, followed by its reason on the same line, when it exits GW_FAILURE_NODE_EXIT
 * because its node could not do its part (rule 3b). */
#define GW_FAILURE_NODE_MARK "gpuward: node step failed: "
#define GW_FAILURE_NODE_EXIT 69 /* EX_UNAVAILABLE */

#define GW_FAILURE_TAIL_LINES 200 /* only the last this many non-empty lines are read */
#define GW_FAILURE_LINE_MAX 4096 /* a longer line is matched on its first this many bytes */
#define GW_FAILURE_PATTERN_MAX 256 /* longest pattern text gw_failure_patterns_check accepts */

/* Everything the classifier reads.  Nothing is copied or kept; zero-initialise, then fill. */
struct gw_failure_input {
        enum gw_attempt_end end;
        int status; /* exit code (EXITED) or signal number (SIGNALED) */
        bool lost; /* no exit status: the daemon restarted or the host
                                      * rebooted while the job ran; status is ignored, and
                                      * end too unless gpuward was stopping the job */
        const char *lost_why; /* lost: why, where not that (the running daemon saw the
                                      * supervisor end without telling); NULL: a restart */

        const char *tail; /* raw last bytes of the log: ANSI colours and tqdm \r
                                      * redraws allowed, need not start at a line start,
                                      * need not be NUL-terminated; NULL when there is none */
        size_t tail_len;

        const struct gw_gpu_event *events;
        size_t n_events;

        bool oom_killed; /* the caller's judgement: the kernel OOM killer killed
                                      * the job (SIGKILL it did not send + oom_kill counter) */
        uint64_t oom_kills; /* growth of memory.events oom_kill during the attempt */
        bool oom_counted; /* oom_kills was read from the job's own memory cgroup:
                                      * 0 there means the OOM killer killed none of its processes */
        bool host_oom_counted; /* host_oom_kills is known (the daemon saw the attempt start) */
        uint64_t host_oom_kills; /* growth of the host's oom_kill count (/proc/vmstat) during
                                      * the attempt: any process's, not only the job's */
        const char *sigkill_why; /* gpuward itself sent SIGKILL to the job's main process
                                      * outside a stop: why (e.g. rogue_policy=kill); else NULL */

        bool node_step; /* the command ran behind a node-side step (a Slurm job's
                                      * --stage-run or --scratch-run): rule 3b applies */
        const char *node; /* the node the attempt ran on, as the executor knows it
                                      * (not the log's word); NULL or "": unknown */

        const struct gw_failure_pattern *patterns; /* NULL: the built-in table */
        size_t n_patterns;
        const unsigned *drain_xids; /* NULL: the built-in list */
        size_t n_drain_xids;
};

#define GW_FAILURE_EVIDENCE_MAX 256

struct gw_failure_verdict {
        enum gw_failure_class cls;
        /* What decided it: the matching log line (ANSI stripped, trimmed, cut to fit on a
         * UTF-8 boundary), "Xid 79 on GPU 3", "exit 0", "killed by signal 11 (SIGSEGV)" ... */
        char evidence[GW_FAILURE_EVIDENCE_MAX];
        /* When the evidence is a log line: its number among the non-empty lines of the given
         * tail (1 = first; a line is what lies between \r or \n), and the byte offset in the
         * tail where it starts (add the tail's offset in the log file to find it there).
         * line = 0 when the evidence is not a log line. */
        unsigned line;
        size_t offset;
        int gpu; /* the GPU the evidence names, -1 when none or unknown */
        unsigned xid; /* the Xid the evidence names, 0 when none */
        /* GPUs (by index < 64) with a drain-worthy event during the attempt, whatever the
         * class: the daemon drains them and the retry avoids them. */
        uint64_t drain_mask;
};

/* Classifies one ended attempt.  Reads *in (and what it points to) only; writes *out fully
 * on success.  Returns 0, or -EINVAL when in->end is out of range (out untouched). */
int gw_failure_classify(const struct gw_failure_input *in, struct gw_failure_verdict *out);
