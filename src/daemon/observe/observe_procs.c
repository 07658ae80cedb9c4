/* Whose each GPU process is (attribution: its cgroup, else its ancestry up to a job's
 * supervisor), and what is done about the processes of no job on a job's GPU (rogue ones)
 * and of a job on a GPU it was not given (strays): told in the GPU's and the job's events,
 * killed under rogue_policy = kill.  Split from observe.c, which applies the rest of a
 * sample. */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/text.h"
#include "daemon/daemon.h"
#include "daemon/observe/observe.h"
#include "daemon/life/queue.h"
#include "daemon/observe/hostwatch.h"
#include "store/gpu_events.h"

#define MAX_ANCESTORS 64

/* --- attribution ------------------------------------------------------------------- */

static ssize_t read_small(const char *path, char *buf, size_t n) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t r = read(fd, buf, n - 1);
        if (r < 0)
                return -errno;
        buf[r] = '\0';
        return r;
}

static size_t ancestors_of(unsigned pid, unsigned *out, size_t max) {
        size_t n = 0;
        for (unsigned p = pid; n < max;) {
                char path[64], buf[512];
                snprintf(path, sizeof path, "/proc/%u/stat", p);
                if (read_small(path, buf, sizeof buf) <= 0)
                        break;
                char *rp = strrchr(buf, ')');
                unsigned ppid = 0;
                if (!rp || sscanf(rp + 1, " %*c %u", &ppid) != 1 || ppid <= 1)
                        break;
                out[n++] = ppid;
                p = ppid;
        }
        return n;
}

static void user_name(uint32_t uid, char *buf, size_t n) {
        static struct {
                uint32_t uid;
                char name[32];
                bool used;
        } cache[64];
        size_t slot = uid % ELEMENTSOF(cache);
        if (cache[slot].used && cache[slot].uid == uid) {
                snprintf(buf, n, "%s", cache[slot].name);
                return;
        }
        struct passwd pw, *pwp = NULL;
        char pwbuf[4096];
        if (getpwuid_r(uid, &pw, pwbuf, sizeof pwbuf, &pwp) == 0 && pwp)
                snprintf(buf, n, "%s", pw.pw_name);
        else
                snprintf(buf, n, "%u", uid);
        cache[slot].uid = uid;
        cache[slot].used = true;
        snprintf(cache[slot].name, sizeof cache[slot].name, "%s", buf);
}

/* Who runs pid and what: from /proc, or "?" when it is already gone. */
static void describe_proc(struct gw_dproc *p) {
        char path[64], buf[4096];
        snprintf(path, sizeof path, "/proc/%u/status", p->pid);
        unsigned long uid = 0;
        if (read_small(path, buf, sizeof buf) > 0) {
                char *u = strstr(buf, "\nUid:");
                if (u)
                        uid = strtoul(u + 5, NULL, 10);
        }
        p->uid = (uint32_t) uid;
        user_name(p->uid, p->user, sizeof p->user);
        snprintf(path, sizeof path, "/proc/%u/cmdline", p->pid);
        ssize_t n = read_small(path, buf, sizeof buf);
        for (ssize_t i = 0; i + 1 < n; i++)
                if (buf[i] == '\0' || (unsigned char) buf[i] < 0x20)
                        buf[i] = ' ';
        snprintf(p->cmd, sizeof p->cmd, "%s", n > 0 ? buf : "?");
}

/* The previous sample's view of pid, to skip /proc reads for processes already known. */
static const struct gw_dproc *known_proc(const struct gw_daemon *d, unsigned pid) {
        for (unsigned i = 0; i < d->host.n_gpus; i++)
                for (size_t k = 0; k < d->host.gpus[i].n_procs; k++)
                        if (d->host.gpus[i].procs[k].pid == pid)
                                return &d->host.gpus[i].procs[k];
        return NULL;
}

static int64_t attribute(const struct gw_daemon *d, unsigned pid, const struct gw_job_anchor *anchors, size_t n) {
        char path[64], cg[4096];
        unsigned anc[MAX_ANCESTORS];
        snprintf(path, sizeof path, "/proc/%u/cgroup", pid);
        struct gw_proc_facts f = {
                .pid = pid,
                .cgroup = read_small(path, cg, sizeof cg) > 0 ? cg : NULL,
                .ancestors = anc,
                .n_ancestors = ancestors_of(pid, anc, MAX_ANCESTORS),
        };
        return gw_attribute(&f, anchors, n);
}

struct gw_job_anchor *gw_observe_job_anchors(const struct gw_daemon *d) {
        struct gw_job_anchor *a = gw_xcalloc(d->jobs.n_running + 1, sizeof *a);
        for (size_t i = 0; i < d->jobs.n_running; i++) {
                const struct gw_job *j = d->jobs.running[i]->job;
                const char *slash = j->cgroup ? strrchr(j->cgroup, '/') : NULL;
                a[i] = (struct gw_job_anchor){ j->id, (unsigned) j->shim_pid, slash ? slash + 1 : NULL };
        }
        return a;
}

/* A process's command line (its first 120 bytes) for a job's events: marked private
 * (base/text.h), as it is another user's, or the job's own arguments, which guests must not
 * read there any more than on GET /api/v1/gpus; as it is for the GPU's events and the log. */
static const char *proc_cmd(const struct gw_dproc *p, bool mark, char *buf, size_t n) {
        if (!mark) {
                snprintf(buf, n, "%.120s", p->cmd);
                return buf;
        }
        return gw_text_private_wrap(buf, n < 123 ? n : 123, p->cmd);
}

/* rogue_policy = kill: a process of no job (or a stray of another job) on a GPU that a job
 * holds is stopped, never one of ours, and the job's record says who and what. */
static void rogue_kill(struct gw_daemon *d, const struct gw_dgpu *g, const struct gw_dproc *p) {
        if (!g->job_id || strcmp(d->cfg->rogue_policy, "kill") || p->pid == (unsigned) getpid())
                return;
        char msg[512], whose[48] = "";
        int r = kill((pid_t) p->pid, SIGKILL);
        if (p->stray)
                snprintf(whose, sizeof whose, " of job %lld", (long long) p->job_id);
        struct gw_djob *stray_of = p->stray ? gw_jobmap_get(&d->jobs.map, p->job_id) : NULL;
        if (r == 0 && stray_of && stray_of->job->pid == (pid_t) p->pid)
                /* Its main process: the attempt's end is this kill, not someone else's. */
                snprintf(stray_of->sigkill_why, sizeof stray_of->sigkill_why,
                         "its main process ran on GPU %u, which job %lld holds (rogue_policy=kill)", g->info.index,
                         (long long) g->job_id);
        for (int mark = 0; mark < 2; mark++) {
                char cmd[128];
                snprintf(msg, sizeof msg, "rogue process %u%s (user %s: %s) on GPU %u %s", p->pid, whose, p->user,
                         proc_cmd(p, mark, cmd, sizeof cmd), g->info.index,
                         r == 0 ? "killed (rogue_policy=kill)" : "could not be killed");
                if (mark)
                        gw_observe_job_event(d, g->job_id, "rogue", msg);
                else {
                        log_warn("job %lld: %s", (long long) g->job_id, msg);
                        (void) gw_store_gpu_event(d->store, NULL, g->info.index, "rogue", -1, g->job_id, msg);
                }
        }
}

/* "2.1 GiB" ("500 MiB" under one GiB), or what stands for memory NVML does not report. */
static void mem_text(uint64_t mem, char *buf, size_t n) {
        if (mem == UINT64_MAX)
                snprintf(buf, n, "memory NVML does not report");
        else if (mem >= (UINT64_C(1) << 30))
                snprintf(buf, n, "%.1f GiB", (double) mem / (double) (UINT64_C(1) << 30));
        else
                snprintf(buf, n, "%llu MiB", (unsigned long long) (mem >> 20));
}

/* mark: for a job's events (proc_cmd). */
static void rogue_text(const struct gw_dgpu *g, const struct gw_dproc *p, bool mark, char *buf, size_t n) {
        char mem[48], cmd[128];
        mem_text(p->mem, mem, sizeof mem);
        snprintf(buf, n, "pid %u (%s, %s) on GPU %u started outside gpuward, using %s", p->pid, p->user,
                 proc_cmd(p, mark, cmd, sizeof cmd), g->info.index, mem);
}

/* A process of no job, first seen on this GPU: the GPU's record says who, what and how much
 * memory, and the job holding the GPU learns why it may run short of memory or speed.  Under
 * rogue_policy = kill that job hears of the kill instead (rogue_kill). */
static void rogue_tell(struct gw_daemon *d, const struct gw_dgpu *g, const struct gw_dproc *p) {
        char msg[400];
        rogue_text(g, p, false, msg, sizeof msg);
        if (g->job_id)
                log_warn("job %lld: %s", (long long) g->job_id, msg);
        else
                log_warn("%s", msg);
        (void) gw_store_gpu_event(d->store, NULL, g->info.index, "rogue", -1, g->job_id, msg);
        rogue_text(g, p, true, msg, sizeof msg);
        if (g->job_id && strcmp(d->cfg->rogue_policy, "kill"))
                gw_observe_job_event(d, g->job_id, "rogue", msg);
}

void gw_observe_job_placed(struct gw_daemon *d, const struct gw_djob *dj) {
        for (unsigned i = 0; i < d->host.n_gpus; i++) {
                const struct gw_dgpu *g = &d->host.gpus[i];
                if (!(dj->job->gpu_mask & (UINT64_C(1) << i)) || !g->rogue)
                        continue;
                for (size_t k = 0; k < g->n_procs; k++) {
                        const struct gw_dproc *p = &g->procs[k];
                        if (p->job_id && !p->stray)
                                continue;
                        char what[400], msg[600];
                        for (int mark = 0; mark < 2; mark++) {
                                rogue_text(g, p, mark, what, sizeof what);
                                snprintf(msg, sizeof msg,
                                         "placed beside a process of no job: %s (GPUs without one "
                                         "come first; none was free for this job)",
                                         what);
                                if (mark)
                                        gw_observe_job_event(d, dj->job->id, "rogue", msg);
                                else
                                        log_info("job %lld: %s", (long long) dj->job->id, msg);
                        }
                }
        }
}

static bool was_on(const struct gw_dgpu *g, unsigned pid) {
        for (size_t k = 0; k < g->n_procs; k++)
                if (g->procs[k].pid == pid)
                        return true;
        return false;
}

/* A process of a job on a GPU the job was not given: CUDA_VISIBLE_DEVICES changed inside
 * the job, or a library that ignores it.  It takes that GPU from whoever holds it or gets it
 * next, as a rogue process would, so it counts as one. */
static const struct gw_djob *stray_of(struct gw_daemon *d, const struct gw_dgpu *g, const struct gw_dproc *p) {
        const struct gw_djob *dj = p->job_id ? gw_jobmap_get(&d->jobs.map, p->job_id) : NULL;
        return dj && !(dj->job->gpu_mask & (UINT64_C(1) << g->info.index)) ? dj : NULL;
}

/* Told once per process and GPU: to its job, to the GPU's holder, in the GPU's events. */
static void stray_tell(struct gw_daemon *d, const struct gw_dgpu *g, const struct gw_dproc *p,
                       const struct gw_djob *dj) {
        char gpus[96], msg[512], cmd[128];
        gw_gpu_mask_format(dj->job->gpu_mask, gpus, sizeof gpus);
        for (int mark = 0; mark < 2; mark++) {
                snprintf(msg, sizeof msg,
                         "process %u (%s) runs on GPU %u, which this job was not given (its GPUs: %s): "
                         "was CUDA_VISIBLE_DEVICES changed inside the job?",
                         p->pid, proc_cmd(p, mark, cmd, sizeof cmd), g->info.index, gpus);
                if (mark)
                        gw_observe_job_event(d, p->job_id, "stray", msg);
                else
                        log_warn("job %lld: %s", (long long) p->job_id, msg);
        }
        for (int mark = 0; mark < 2; mark++) {
                snprintf(msg, sizeof msg,
                         "process %u of job %lld (user %s: %s) on GPU %u, which that job was not given", p->pid,
                         (long long) p->job_id, p->user, proc_cmd(p, mark, cmd, sizeof cmd), g->info.index);
                if (!mark)
                        (void) gw_store_gpu_event(d->store, NULL, g->info.index, "stray", -1, g->job_id, msg);
                else if (g->job_id)
                        gw_observe_job_event(d, g->job_id, "rogue", msg);
        }
}

void gw_observe_apply_procs(struct gw_daemon *d, struct gw_dgpu *g, const struct gw_gpu_snapshot *s,
                            const struct gw_job_anchor *anchors, size_t n_anchors) {
        struct gw_dproc *v = s->n_procs ? gw_xcalloc(s->n_procs, sizeof *v) : NULL;
        unsigned rogue = 0;
        for (size_t k = 0; k < s->n_procs; k++) {
                struct gw_dproc *p = &v[k];
                const struct gw_dproc *old = known_proc(d, s->procs[k].pid);
                if (old)
                        *p = *old;
                else {
                        p->pid = s->procs[k].pid;
                        describe_proc(p);
                        p->job_id = attribute(d, p->pid, anchors, n_anchors);
                }
                p->mem = s->procs[k].mem_used;
                p->sm_util = s->procs[k].sm_util;
                gw_hostwatch_proc_cpu(d, p);
                bool seen_here = was_on(g, p->pid);
                const struct gw_djob *stray = stray_of(d, g, p);
                p->stray = stray != NULL;
                if (stray && !seen_here)
                        stray_tell(d, g, p, stray);
                if (!p->job_id && !seen_here)
                        rogue_tell(d, g, p);
                if (!p->job_id || p->stray) {
                        rogue++;
                        if (!old || !old->job_id || (p->stray && !seen_here))
                                rogue_kill(d, g, p);
                }
        }
        free(g->procs);
        g->procs = v;
        g->n_procs = s->n_procs;
        g->rogue = rogue;
}
