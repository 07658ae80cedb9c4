#include "core/failure.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "base/nametable.h"

static const char *const class_names[_GW_FAILURE_CLASS_MAX] = {
        [GW_FAILURE_OK] = "ok",
        [GW_FAILURE_GPU_FAULT] = "gpu_fault",
        [GW_FAILURE_CUDA_ERROR] = "cuda_error",
        [GW_FAILURE_NCCL_ERROR] = "nccl_error",
        [GW_FAILURE_OOM] = "oom",
        [GW_FAILURE_HOST_OOM] = "host_oom",
        [GW_FAILURE_LOST] = "lost",
        [GW_FAILURE_USER_ERROR] = "user_error",
        [GW_FAILURE_KILLED] = "killed",
        [GW_FAILURE_CANCELLED] = "cancelled",
        [GW_FAILURE_TIMEOUT] = "timeout",
        [GW_FAILURE_RECLAIMED] = "reclaimed",
};

const char *gw_failure_class_name(enum gw_failure_class c) { return GW_NAMETABLE_NAME(class_names, c); }

enum gw_failure_class gw_failure_class_from_name(const char *name) {
        return (enum gw_failure_class) GW_NAMETABLE_INDEX(class_names, name);
}

/* Matching order matters within a line: specific texts first.  Sources: PyTorch's
 * c10/cuda error texts and CUDACachingAllocator OOM message, c10d ProcessGroupNCCL, NCCL's
 * ncclResult_t names, nvidia-smi, the DataLoader worker watchdog. */
static const struct gw_failure_pattern default_patterns[] = {
        /* The GPU itself is gone or broken: everything after is a consequence. */
        { GW_FAILURE_GPU_FAULT, "GPU is lost" },
        { GW_FAILURE_GPU_FAULT, "Unable to determine the device handle for GPU" },
        { GW_FAILURE_GPU_FAULT, "uncorrectable ECC error encountered" },
        { GW_FAILURE_GPU_FAULT, "GPU has fallen off the bus" },
        /* "DataLoader worker (pid 4242) is killed by signal: Killed." -- SIGKILL of a worker
         * that gpuward did not send: the kernel OOM killer. */
        { GW_FAILURE_HOST_OOM, "is killed by signal: Killed" },
        { GW_FAILURE_OOM, "torch.OutOfMemoryError: CUDA out of memory" },
        { GW_FAILURE_OOM, "torch.cuda.OutOfMemoryError" },
        { GW_FAILURE_OOM, "CUDA out of memory. Tried to allocate" },
        { GW_FAILURE_OOM, "CUDA error: out of memory" },
        { GW_FAILURE_OOM, "CUBLAS_STATUS_ALLOC_FAILED" },
        { GW_FAILURE_OOM, "CUDNN_STATUS_ALLOC_FAILED" },
        { GW_FAILURE_NCCL_ERROR, "Watchdog caught collective operation timeout" },
        { GW_FAILURE_NCCL_ERROR, "NCCL communicator was aborted" },
        { GW_FAILURE_NCCL_ERROR, "ncclInternalError" },
        { GW_FAILURE_NCCL_ERROR, "ncclUnhandledCudaError" },
        { GW_FAILURE_NCCL_ERROR, "ncclSystemError" },
        { GW_FAILURE_NCCL_ERROR, "ncclRemoteError" },
        { GW_FAILURE_NCCL_ERROR, "NCCL error" },
        /* CUDA errors a retry cannot fix: a failed assert in a kernel (labels out of range),
         * a device index the job does not have, a build without kernels for this GPU. */
        { GW_FAILURE_USER_ERROR, "device-side assert triggered" },
        { GW_FAILURE_USER_ERROR, "CUDA error: invalid device ordinal" },
        { GW_FAILURE_USER_ERROR, "no kernel image is available for execution on the device" },
        { GW_FAILURE_CUDA_ERROR, "CUDA error: an illegal memory access was encountered" },
        { GW_FAILURE_CUDA_ERROR, "CUDA error: unspecified launch failure" },
        { GW_FAILURE_CUDA_ERROR, "CUBLAS_STATUS_" },
        { GW_FAILURE_CUDA_ERROR, "cuDNN error" },
        { GW_FAILURE_CUDA_ERROR, "RuntimeError: CUDA error" },
        { GW_FAILURE_CUDA_ERROR, "CUDA error:" },
};

const struct gw_failure_pattern *gw_failure_default_patterns(size_t *ret_n) {
        *ret_n = sizeof(default_patterns) / sizeof(default_patterns[0]);
        return default_patterns;
}

/* The Xids whose action in NVIDIA's Xid catalog is a GPU reset or a reboot. */
static const unsigned default_drain_xids[] = { 48, 64, 74, 79, 95 };

/* Application faults the driver saw (illegal address, graphics exception, contained ECC):
 * the job's error, not the GPU's. */
static const unsigned job_error_xids[] = { 13, 31, 43, 94 };

const unsigned *gw_failure_default_drain_xids(size_t *ret_n) {
        *ret_n = sizeof(default_drain_xids) / sizeof(default_drain_xids[0]);
        return default_drain_xids;
}

static bool class_from_log(enum gw_failure_class c) {
        switch (c) {
        case GW_FAILURE_GPU_FAULT:
        case GW_FAILURE_CUDA_ERROR:
        case GW_FAILURE_NCCL_ERROR:
        case GW_FAILURE_OOM:
        case GW_FAILURE_HOST_OOM:
        case GW_FAILURE_USER_ERROR:
                return true;
        default:
                return false;
        }
}

int gw_failure_patterns_check(const struct gw_failure_pattern *p, size_t n, char *why, size_t why_len) {
        for (size_t i = 0; i < n; i++) {
                const char *name = gw_failure_class_name(p[i].cls);

                if (!name) {
                        snprintf(why, why_len, "pattern %zu: invalid class", i + 1);
                        return -EINVAL;
                }
                if (!class_from_log(p[i].cls)) {
                        snprintf(why, why_len, "pattern %zu: class %s cannot come from a log", i + 1, name);
                        return -EINVAL;
                }
                if (!p[i].text || !p[i].text[0]) {
                        snprintf(why, why_len, "pattern %zu (%s): empty text", i + 1, name);
                        return -EINVAL;
                }
                if (strlen(p[i].text) > GW_FAILURE_PATTERN_MAX) {
                        snprintf(why, why_len, "pattern %zu (%s): longer than %d bytes", i + 1, name,
                                 GW_FAILURE_PATTERN_MAX);
                        return -EINVAL;
                }
        }
        return 0;
}

/* ---- the log tail as lines ---- */

struct line_iter {
        const char *p;
        size_t len, pos;
};

/* Strips terminal escapes and other control bytes from p[0..n) into buf (NUL-terminated,
 * at most cap-1 bytes kept).  Returns the stripped length. */
static size_t strip_line(const char *p, size_t n, char *buf, size_t cap) {
        size_t k = 0, i = 0;

        while (i < n) {
                unsigned char c = (unsigned char) p[i++];

                if (c == 0x1b) {
                        unsigned char b;

                        if (i >= n)
                                break;
                        b = (unsigned char) p[i++];
                        if (b == '[') {
                                /* CSI: parameters and intermediates, then a final byte. */
                                while (i < n && !((unsigned char) p[i] >= 0x40 && (unsigned char) p[i] <= 0x7e))
                                        i++;
                                if (i < n)
                                        i++;
                        } else if (b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_') {
                                /* OSC, DCS, SOS, PM, APC: a string up to BEL or ST (ESC \). */
                                while (i < n) {
                                        if (p[i] == '\a') {
                                                i++;
                                                break;
                                        }
                                        if (p[i] == 0x1b && i + 1 < n && p[i + 1] == '\\') {
                                                i += 2;
                                                break;
                                        }
                                        i++;
                                }
                        } else {
                                /* ESC, intermediates (0x20-0x2f), final byte: "ESC ( B", "ESC 7". */
                                while (b >= 0x20 && b <= 0x2f && i < n)
                                        b = (unsigned char) p[i++];
                        }
                        continue;
                }
                if ((c < 0x20 && c != '\t') || c == 0x7f)
                        continue;
                if (k + 1 < cap)
                        buf[k++] = (char) c;
        }
        buf[k] = '\0';
        return k;
}

static bool blank(const char *s) {
        for (; *s; s++)
                if (*s != ' ' && *s != '\t')
                        return false;
        return true;
}

/* The next non-blank line, stripped, into buf; its start offset in the tail in *ret_off. */
static bool next_line(struct line_iter *it, char *buf, size_t cap, size_t *ret_off) {
        while (it->pos < it->len) {
                size_t start = it->pos, end = start;

                while (end < it->len && it->p[end] != '\n' && it->p[end] != '\r')
                        end++;
                it->pos = end < it->len ? end + 1 : end;
                if (end == start)
                        continue;
                strip_line(it->p + start, end - start, buf, cap);
                if (blank(buf))
                        continue;
                *ret_off = start;
                return true;
        }
        return false;
}

/* ---- evidence ---- */

struct hit {
        bool set;
        enum gw_failure_class cls;
        unsigned line;
        size_t off;
        char text[GW_FAILURE_EVIDENCE_MAX];
};

#define ELLIPSIS "\xe2\x80\xa6" /* U+2026 */

/* Where to cut s (n bytes, more than fit in limit): after the last sentence that fits, else
 * at the last word boundary, else on a character boundary.  A reader who sees a line stop
 * mid-word ("73.66 GiB is ") cannot tell what it said, nor that it was cut.  Ending a
 * sentence or a word counts only in the second half: an early cut loses more than a ragged
 * one. */
static size_t evidence_cut(const char *s, size_t limit) {
        size_t word = 0;

        for (size_t i = limit; i > limit / 2; i--) {
                bool blank = s[i] == ' ' || s[i] == '\t';
                if (blank && strchr(".!?;", s[i - 1]))
                        return i;
                if (blank && !word)
                        word = i;
        }
        if (word)
                return word;
        while (limit > 0 && ((unsigned char) s[limit] & 0xc0) == 0x80)
                limit--;
        return limit;
}

/* Copies s trimmed of blanks; what does not fit is cut at a sentence or word end where
 * there is one (evidence_cut) and marked with an ellipsis, so a cut reads as one. */
static void copy_evidence(char *dst, size_t cap, const char *s) {
        size_t n;
        bool cut = false;

        while (*s == ' ' || *s == '\t')
                s++;
        n = strlen(s);
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
                n--;
        if (n >= cap && cap > sizeof(ELLIPSIS) + 1) {
                n = evidence_cut(s, cap - sizeof(ELLIPSIS) - 1);
                while (n > 0 && strchr(" \t,:", s[n - 1]))
                        n--;
                cut = true;
        } else if (n >= cap) {
                n = cap - 1;
        }
        memcpy(dst, s, n);
        if (cut) {
                bool sentence = n > 0 && strchr(".!?;", s[n - 1]);
                snprintf(dst + n, cap - n, "%s" ELLIPSIS, sentence ? " " : "");
        } else {
                dst[n] = '\0';
        }
}

static void hit_set(struct hit *h, enum gw_failure_class cls, unsigned line, size_t off, const char *text) {
        h->set = true;
        h->cls = cls;
        h->line = line;
        h->off = off;
        copy_evidence(h->text, sizeof(h->text), text);
}

/* The class of the first pattern that occurs in line, or _INVALID. */
static enum gw_failure_class match_line(const char *line, const struct gw_failure_pattern *pats, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (class_from_log(pats[i].cls) && pats[i].text && pats[i].text[0] && strstr(line, pats[i].text))
                        return pats[i].cls;
        return _GW_FAILURE_CLASS_INVALID;
}

#define TB_HEADER "Traceback (most recent call last):"
#define TB_PREFIX_MAX 64

/* Follows Python tracebacks: the header, then indented frame lines, then the first line
 * that is not indented, which names the exception.  A line-prefixing launcher (torchrun's
 * "[rank1]: ", mpirun's "[1,0]<stderr>:") repeats the header's prefix on every line of the
 * traceback, so only lines with that prefix belong to it. */
struct tb_state {
        bool pending;
        char prefix[TB_PREFIX_MAX];
        size_t prefix_len;
        struct hit last; /* the newest traceback: its exception line, or its header */
};

static void tb_feed(struct tb_state *tb, const char *line, unsigned no, size_t off) {
        const char *h = strstr(line, TB_HEADER), *rest;

        if (h) {
                size_t c = (size_t) (h - line);

                tb->pending = c < TB_PREFIX_MAX;
                tb->prefix_len = tb->pending ? c : 0;
                memcpy(tb->prefix, line, tb->prefix_len);
                hit_set(&tb->last, GW_FAILURE_USER_ERROR, no, off, line);
                return;
        }
        if (!tb->pending || strncmp(line, tb->prefix, tb->prefix_len) != 0)
                return;
        rest = line + tb->prefix_len;
        if (rest[0] && rest[0] != ' ' && rest[0] != '\t') {
                hit_set(&tb->last, GW_FAILURE_USER_ERROR, no, off, line);
                tb->pending = false;
        }
}

struct log_scan {
        struct hit gpu; /* first gpu_fault line */
        struct hit first; /* first oom / nccl / cuda / host_oom / user_error line */
        struct tb_state tb;
        unsigned autobatch; /* the first "AutoBatch: " line, 0 before one */
};

/* Ultralytics' AutoBatch (batch=-1) profiles batch sizes until one runs out of memory; the
 * profiler prints each exception as a bare line ("CUDA out of memory. Tried to allocate ...",
 * utils/torch_utils.py profile_ops: LOGGER.info(e)), then AutoBatch prints the size it chose
 * ("AutoBatch: Using batch-size 8 ...", or "... error detected: ..., using default batch-size
 * 16.") and training goes on.  An OOM from its first line to such a later line was a probe,
 * not the job's failure: a crash that follows must be classified by its own line. */
#define AUTOBATCH "AutoBatch: "

static void autobatch_feed(struct log_scan *s, const char *line, unsigned no) {
        if (!strstr(line, AUTOBATCH))
                return;
        if (!s->autobatch)
                s->autobatch = no;
        else if (s->first.set && s->first.cls == GW_FAILURE_OOM && s->first.line >= s->autobatch)
                s->first.set = false;
}

static void scan_log(const struct gw_failure_input *in, struct log_scan *s) {
        const struct gw_failure_pattern *pats = in->patterns;
        size_t n_pats = in->n_patterns, total = 0, off, skip;
        struct line_iter it;
        char buf[GW_FAILURE_LINE_MAX];
        unsigned no = 0;

        if (!pats)
                pats = gw_failure_default_patterns(&n_pats);
        if (!in->tail || !in->tail_len)
                return;

        it = (struct line_iter){ .p = in->tail, .len = in->tail_len };
        while (next_line(&it, buf, sizeof(buf), &off))
                total++;
        skip = total > GW_FAILURE_TAIL_LINES ? total - GW_FAILURE_TAIL_LINES : 0;

        it = (struct line_iter){ .p = in->tail, .len = in->tail_len };
        while (next_line(&it, buf, sizeof(buf), &off)) {
                enum gw_failure_class c;

                if (++no <= skip) {
                        autobatch_feed(s, buf, no); /* a block may begin before the window */
                        continue;
                }
                c = match_line(buf, pats, n_pats);
                if (c == GW_FAILURE_GPU_FAULT) {
                        if (!s->gpu.set)
                                hit_set(&s->gpu, c, no, off, buf);
                } else if (c != _GW_FAILURE_CLASS_INVALID) {
                        if (!s->first.set)
                                hit_set(&s->first, c, no, off, buf);
                }
                autobatch_feed(s, buf, no);
                tb_feed(&s->tb, buf, no, off);
        }
}

/* ---- events ---- */

static bool in_list(unsigned x, const unsigned *v, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (v[i] == x)
                        return true;
        return false;
}

static bool event_drains(const struct gw_gpu_event *e, const unsigned *xids, size_t n) {
        switch (e->kind) {
        case GW_GPU_EVENT_ECC_DBE:
        case GW_GPU_EVENT_LOST:
                return true;
        case GW_GPU_EVENT_XID:
                return in_list(e->xid, xids, n);
        default:
                return false;
        }
}

static void describe_event(const struct gw_gpu_event *e, char *buf, size_t n) {
        switch (e->kind) {
        case GW_GPU_EVENT_XID:
                snprintf(buf, n, "Xid %u on GPU %d", e->xid, e->gpu);
                break;
        case GW_GPU_EVENT_ECC_DBE:
                snprintf(buf, n, "double-bit ECC error on GPU %d", e->gpu);
                break;
        default:
                snprintf(buf, n, "GPU %d is lost", e->gpu);
                break;
        }
}

/* ---- exit status ---- */

static const char *signal_abbrev(int sig) {
        static const char *const names[] = {
                [1] = "HUP",   [2] = "INT",   [3] = "QUIT",  [4] = "ILL",   [5] = "TRAP",
                [6] = "ABRT",  [7] = "BUS",   [8] = "FPE",   [9] = "KILL",  [10] = "USR1",
                [11] = "SEGV", [12] = "USR2", [13] = "PIPE", [14] = "ALRM", [15] = "TERM",
        };
        if (sig > 0 && (size_t) sig < sizeof(names) / sizeof(names[0]) && names[sig])
                return names[sig];
        return NULL;
}

/* "exit 1", "signal 11 (SIGSEGV)". */
static void describe_status(const struct gw_failure_input *in, char *buf, size_t n) {
        if (in->lost)
                snprintf(buf, n, "no exit status");
        else if (in->end == GW_END_SIGNALED) {
                const char *a = signal_abbrev(in->status);
                if (a)
                        snprintf(buf, n, "signal %d (SIG%s)", in->status, a);
                else
                        snprintf(buf, n, "signal %d", in->status);
        } else
                snprintf(buf, n, "exit %d", in->status);
}

/* A SIGKILL of the main process that no stop of gpuward's explains, with what is known of
 * the OOM killer (rule 5 found no sign of it). */
static void killed_by(const struct gw_failure_input *in, struct gw_failure_verdict *v) {
        const char *oom = in->oom_counted ? "not the kernel's OOM killer: the cgroup's oom_kill count did not change"
                          : in->host_oom_counted
                                  ? "not the kernel's OOM killer: the host's oom_kill count did not change"
                                  : "whether the kernel's OOM killer did is not known";
        if (in->sigkill_why) {
                v->cls = GW_FAILURE_USER_ERROR;
                snprintf(v->evidence, sizeof(v->evidence), "killed by SIGKILL from gpuward: %s", in->sigkill_why);
                return;
        }
        v->cls = GW_FAILURE_KILLED;
        snprintf(v->evidence, sizeof(v->evidence), "killed by SIGKILL from outside gpuward (not a gpuward stop%s %s)",
                 in->oom_counted || in->host_oom_counted ? "," : ";", oom);
}

/* ---- a command that could not be run ---- */

/* The name in a line that says a command could not be run, as the supervisor says it
 * ("gpuward: cannot execute 'NAME': No such file or directory") or a shell does
 * ("bash: line 1: NAME: command not found", "sh: 1: NAME: not found", "bash: ./NAME: No such
 * file or directory", "/usr/bin/env: 'NAME': No such file or directory"): the text between
 * the last ": " and the tail, unquoted.  Only for the exit statuses that mean it (127 and
 * 126), so Python's "FileNotFoundError: ..." (exit 1) never reads as one. */
static bool name_before_tail(const char *line, const char *const *tails, size_t n_tails, char *name, size_t n) {
        size_t len = strlen(line);
        while (len && line[len - 1] == ' ')
                len--;
        for (size_t t = 0; t < n_tails; t++) {
                size_t tl = strlen(tails[t]);
                if (len <= tl || strncmp(line + len - tl, tails[t], tl) != 0)
                        continue;
                size_t end = len - tl, start = end;
                while (start >= 2 && !(line[start - 2] == ':' && line[start - 1] == ' '))
                        start--;
                if (start < 2)
                        return false; /* no "prog: " before it: not a shell's or ours */
                const char *q = line + start;
                static const char ours[] = "cannot execute ";
                if (!strncmp(q, ours, strlen(ours)))
                        q += strlen(ours);
                size_t k = (size_t) (line + end - q);
                if (k >= 2 && (*q == '\'' || *q == '"') && q[k - 1] == *q) {
                        q++;
                        k -= 2;
                }
                if (k == 0 || k >= n)
                        return false;
                memcpy(name, q, k);
                name[k] = '\0';
                return true;
        }
        return false;
}

/* The last such line of the tail: "command not found: NAME" for an exit 127 (execvp's and
 * the shells' status for a missing command), "command not executable: NAME" for an exit 126
 * with "Permission denied". */
static bool command_not_run(const struct gw_failure_input *in, struct gw_failure_verdict *v) {
        static const char *const missing[] = { ": command not found", ": not found", ": No such file or directory" };
        static const char *const denied[] = { ": Permission denied" };
        char buf[GW_FAILURE_LINE_MAX], name[256];
        struct line_iter it = { .p = in->tail, .len = in->tail_len };
        size_t off;
        unsigned no = 0;
        bool found = false, is127 = in->status == 127;

        if (in->lost || in->end != GW_END_EXITED || (in->status != 127 && in->status != 126) || !in->tail)
                return false;
        while (next_line(&it, buf, sizeof(buf), &off))
                if (++no && name_before_tail(buf, is127 ? missing : denied, is127 ? 3 : 1, name, sizeof(name))) {
                        found = true;
                        v->line = no;
                        v->offset = off;
                        snprintf(v->evidence, sizeof(v->evidence), "command %s: %s",
                                 is127 ? "not found" : "not executable", name);
                }
        if (found)
                v->cls = GW_FAILURE_USER_ERROR;
        return found;
}

/* Rule 3b: the last GW_FAILURE_NODE_MARK line of a node step that exited GW_FAILURE_NODE_EXIT.
 * The node named is the executor's, so the log cannot point the retry's exclusion at
 * another node. */
static bool node_step_failed(const struct gw_failure_input *in, struct gw_failure_verdict *v) {
        char buf[GW_FAILURE_LINE_MAX], why[GW_FAILURE_LINE_MAX + 80];
        struct line_iter it = { .p = in->tail, .len = in->tail_len };
        size_t off;
        unsigned no = 0;
        bool found = false;

        if (!in->node_step || in->lost || in->end != GW_END_EXITED || in->status != GW_FAILURE_NODE_EXIT || !in->tail)
                return false;
        while (next_line(&it, buf, sizeof(buf), &off)) {
                const char *m = strstr(buf, GW_FAILURE_NODE_MARK);
                no++;
                if (!m)
                        continue;
                found = true;
                v->line = no;
                v->offset = off;
                snprintf(why, sizeof(why), "%s%.64s: %s", in->node && in->node[0] ? "node " : "",
                         in->node && in->node[0] ? in->node : "its node", m + strlen(GW_FAILURE_NODE_MARK));
        }
        if (!found)
                return false;
        v->cls = GW_FAILURE_LOST;
        copy_evidence(v->evidence, sizeof(v->evidence), why);
        return true;
}

/* ---- the verdict ---- */

static void verdict_from_hit(struct gw_failure_verdict *v, const struct hit *h) {
        v->cls = h->cls;
        memcpy(v->evidence, h->text, sizeof(v->evidence));
        v->line = h->line;
        v->offset = h->off;
}

int gw_failure_classify(const struct gw_failure_input *in, struct gw_failure_verdict *out) {
        const unsigned *xids = in->drain_xids;
        size_t n_xids = in->n_drain_xids;
        const struct gw_gpu_event *drain_ev = NULL, *job_ev = NULL;
        struct gw_failure_verdict v = { .gpu = -1 };
        struct log_scan s = { 0 };
        char st[64];

        if (in->end < 0 || in->end >= _GW_ATTEMPT_END_MAX)
                return -EINVAL;
        if (!xids)
                xids = gw_failure_default_drain_xids(&n_xids);

        for (size_t i = 0; i < in->n_events; i++) {
                const struct gw_gpu_event *e = &in->events[i];

                if (event_drains(e, xids, n_xids)) {
                        if (!drain_ev)
                                drain_ev = e;
                        if (e->gpu >= 0 && e->gpu < 64)
                                v.drain_mask |= UINT64_C(1) << e->gpu;
                } else if (e->kind == GW_GPU_EVENT_XID && !job_ev &&
                           in_list(e->xid, job_error_xids, sizeof(job_error_xids) / sizeof(job_error_xids[0])))
                        job_ev = e;
        }

        /* 1. gpuward's own actions (the enum lists them last), also without an exit status:
         * a job the daemon was stopping when it lost sight of it (restart, unwritable exits
         * journal) ended because it was stopped, not because it was lost. */
        if (in->end >= GW_END_CANCELLED) {
                static const struct {
                        enum gw_failure_class cls;
                        const char *text;
                } act[] = {
                        [GW_END_CANCELLED] = { GW_FAILURE_CANCELLED, "stopped by gpuward: cancelled" },
                        [GW_END_TIMEOUT] = { GW_FAILURE_TIMEOUT, "stopped by gpuward: time limit reached" },
                        [GW_END_RECLAIMED] = { GW_FAILURE_RECLAIMED, "stopped by gpuward: idle GPUs reclaimed" },
                };
                v.cls = act[in->end].cls;
                snprintf(v.evidence, sizeof(v.evidence), "%s", act[in->end].text);
                goto done;
        }

        /* 2. A clean exit. */
        if (!in->lost && in->end == GW_END_EXITED && in->status == 0) {
                v.cls = GW_FAILURE_OK;
                snprintf(v.evidence, sizeof(v.evidence), "exit 0");
                goto done;
        }

        /* 3. The GPU failed. */
        if (drain_ev) {
                v.cls = GW_FAILURE_GPU_FAULT;
                describe_event(drain_ev, v.evidence, sizeof(v.evidence));
                v.gpu = drain_ev->gpu;
                v.xid = drain_ev->kind == GW_GPU_EVENT_XID ? drain_ev->xid : 0;
                goto done;
        }
        scan_log(in, &s);
        if (s.gpu.set) {
                verdict_from_hit(&v, &s.gpu);
                goto done;
        }

        /* 3b. The node could not do its part before the command. */
        if (node_step_failed(in, &v))
                goto done;

        /* 4. The first fatal line of the log. */
        if (s.first.set) {
                verdict_from_hit(&v, &s.first);
                goto done;
        }

        describe_status(in, st, sizeof(st));

        bool sigkill = in->end == GW_END_SIGNALED && in->status == SIGKILL;

        /* 5. The kernel's OOM killer. */
        if (sigkill && !in->oom_counted && !in->sigkill_why && in->host_oom_counted && in->host_oom_kills > 0) {
                v.cls = GW_FAILURE_HOST_OOM;
                snprintf(v.evidence, sizeof(v.evidence),
                         "killed by SIGKILL while the kernel's OOM killer was killing: host oom_kill +%llu (no "
                         "memory cgroup of the job's to tell whose)",
                         (unsigned long long) in->host_oom_kills);
                goto done;
        }
        if (in->oom_killed || in->oom_kills > 0) {
                v.cls = GW_FAILURE_HOST_OOM;
                if (in->oom_kills > 0)
                        snprintf(v.evidence, sizeof(v.evidence),
                                 "killed by the kernel OOM killer: %s, memory cgroup oom_kill +%llu", st,
                                 (unsigned long long) in->oom_kills);
                else
                        snprintf(v.evidence, sizeof(v.evidence), "killed by the kernel OOM killer: %s", st);
                goto done;
        }

        /* 6. An application fault only the driver reported. */
        if (job_ev) {
                v.cls = GW_FAILURE_CUDA_ERROR;
                describe_event(job_ev, v.evidence, sizeof(v.evidence));
                v.gpu = job_ev->gpu;
                v.xid = job_ev->xid;
                goto done;
        }

        /* 7. gpuward lost the job. */
        if (in->lost) {
                v.cls = GW_FAILURE_LOST;
                snprintf(v.evidence, sizeof(v.evidence), "lost: %s",
                         in->lost_why ? in->lost_why : "gpuward restarted or the host rebooted while the job ran");
                goto done;
        }

        /* 8. A SIGKILL: gpuward's outside a stop, else someone else's. */
        if (sigkill) {
                killed_by(in, &v);
                goto done;
        }

        /* 9. The job's own failure: a command that is not there, a traceback, its status. */
        if (command_not_run(in, &v))
                goto done;
        if (s.tb.last.set) {
                verdict_from_hit(&v, &s.tb.last);
                goto done;
        }
        v.cls = GW_FAILURE_USER_ERROR;
        snprintf(v.evidence, sizeof(v.evidence), "%s%s", in->end == GW_END_SIGNALED ? "killed by " : "", st);

done:
        *out = v;
        return 0;
}
