/* The Slurm executor (exec_slurm.h): its table of operations (executor.h), the start
 * (sbatch's command line and environment; it runs in exec_slurm_submit.c), signals
 * (scancel) and adoption at a restart.  Following the jobs to their end: exec_slurm_poll.c. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/directive.h"
#include "core/failure.h"
#include "core/scratch.h"
#include "core/slurm.h"
#include "daemon/exec/exec_slurm.h"

/* The longest the loop waits for a Slurm command it runs in the foreground (scontrol for a
 * booking, squeue at a restart). */
#define FOREGROUND_TIMEOUT_USEC (10 * GW_USEC_PER_SEC)

struct gw_slurm_job *gw_slurm_job_find(struct gw_exec_slurm *s, int64_t id) {
        for (size_t i = 0; i < s->n_jobs; i++)
                if (s->jobs[i].id == id)
                        return &s->jobs[i];
        return NULL;
}

void gw_slurm_job_forget(struct gw_exec_slurm *s, int64_t id) {
        struct gw_slurm_job *sj = gw_slurm_job_find(s, id);
        if (sj)
                *sj = s->jobs[--s->n_jobs];
}

static void jobx_free(struct gw_djob *dj) {
        free(dj->exec);
        dj->exec = NULL;
}

struct gw_slurm_jobx *gw_slurm_jobx_of(struct gw_djob *dj) {
        if (!dj->exec) {
                /* dj->exec is each executor's own (the shim's struct gw_exec_job). */
                dj->exec = gw_xcalloc(1, sizeof(struct gw_slurm_jobx));
                dj->exec_free = jobx_free;
        }
        return (struct gw_slurm_jobx *) (void *) dj->exec;
}

void gw_slurm_avoid_node(struct gw_daemon *d, struct gw_djob *dj, const char *node, const char *why) {
        struct gw_slurm_jobx *x = gw_slurm_jobx_of(dj);
        if (!node[0] || strlen(node) >= sizeof x->avoid[0] ||
            strspn(node, "abcdefghijklmnopqrstuvwxyz"
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") != strlen(node))
                return; /* a node list ("n[1-2]") is not one node: --exclude would refuse it whole */
        for (size_t i = 0; i < x->n_avoid; i++)
                if (!strcmp(x->avoid[i], node))
                        return;
        if (x->n_avoid == GW_SLURM_AVOID_MAX)
                memmove(x->avoid[0], x->avoid[1], --x->n_avoid * sizeof x->avoid[0]);
        snprintf(x->avoid[x->n_avoid++], sizeof x->avoid[0], "%s", node);
        char msg[300];
        snprintf(msg, sizeof msg, "node %s excluded from the next attempts: %s", node, why);
        if (gw_store_job_event(d->store, dj->job->id, dj->job->state, "slurm", msg) < 0)
                log_warn("job %lld: %s, not recorded: %s", (long long) dj->job->id, msg, gw_store_errmsg(d->store));
        log_info("job %lld: %s", (long long) dj->job->id, msg);
}

void gw_slurm_ended_keep(struct gw_exec_slurm *s, uint32_t slurm_id, int64_t id) {
        s->ended[s->n_ended++ % GW_SLURM_ENDED_KEEP] = (struct gw_slurm_ended){ slurm_id, id };
}

static struct gw_slurm_job *job_add(struct gw_exec_slurm *s, struct gw_djob *dj, uint32_t slurm_id, gw_usec_t now) {
        int64_t id = dj->job->id;
        gw_slurm_job_forget(s, id);
        if (s->n_jobs == s->cap_jobs) {
                s->cap_jobs = s->cap_jobs ? 2 * s->cap_jobs : 16;
                s->jobs = gw_xrealloc(s->jobs, s->cap_jobs * sizeof *s->jobs);
        }
        struct gw_slurm_job *sj = &s->jobs[s->n_jobs++];
        *sj = (struct gw_slurm_job){ .id = id,
                                     .dj = dj,
                                     .slurm_id = slurm_id,
                                     .submitted = now,
                                     .pending_in_slurm = true };
        return sj;
}

void gw_slurm_client_env(char *buf, size_t n, char *env[2]) {
        const char *conf = getenv("SLURM_CONF");
        env[0] = env[1] = NULL;
        if (conf) {
                snprintf(buf, n, "SLURM_CONF=%s", conf);
                env[0] = buf;
        }
}

void gw_slurm_kid_add(struct gw_exec_slurm *s, pid_t pid) {
        if (s->n_kids == s->cap_kids) {
                s->cap_kids = s->cap_kids ? 2 * s->cap_kids : 8;
                s->kids = gw_xrealloc(s->kids, s->cap_kids * sizeof *s->kids);
        }
        s->kids[s->n_kids++] = pid;
}

pid_t gw_slurm_spawn(char *const *argv, char *const *env, bool drop, uid_t uid, gid_t gid, const uint32_t *groups,
                     int n_groups, const char *cwd, int out_fd) {
        pid_t parent = getpid();
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid > 0)
                return pid;
        /* The child: only async-signal-safe calls until exec.  The daemon's blocked signals
         * (its signalfd) must not be the Slurm command's. */
        sigset_t none;
        sigemptyset(&none);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0 || dup2(null, 0) < 0 || dup2(out_fd >= 0 ? out_fd : null, 1) < 0 ||
            dup2(out_fd >= 0 ? out_fd : null, 2) < 0)
                _exit(126);
        if (drop) {
                gid_t g[64];
                int n = 0;
                for (; n < n_groups && n < 64; n++)
                        g[n] = groups[n];
                if (n == 0)
                        g[n++] = gid;
                /* Groups, then gid, then uid: after setuid nothing else can be dropped. */
                if (setgroups((size_t) n, g) < 0 || setgid(gid) < 0 || setuid(uid) < 0 || setuid(0) == 0)
                        _exit(126);
        }
        /* Dies with the daemon (set after the uid change, which clears it): an sbatch that
         * outlived a killed daemon could submit after the restarted one looked for its tag,
         * and the attempt would be submitted twice. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                _exit(126);
        if (!cwd || chdir(cwd) < 0)
                (void) !chdir("/");
        execve(argv[0], argv, env);
        _exit(127);
}

/* The job's environment for sbatch, which passes it on to the job (--export=ALL): the
 * submitter's as the local executor gives it, but the GPUs are Slurm's to choose, and the
 * cluster is the daemon's (SLURM_CONF). */
static char **sbatch_env(char *const *job_env) {
        size_t n = 0;
        while (job_env && job_env[n])
                n++;
        char **env = gw_xcalloc(n + 1, sizeof *env);
        for (size_t i = 0; i < n; i++)
                env[i] = gw_xstrdup(job_env[i]);
        n = 0;
        for (size_t i = 0; env[i]; i++) {
                if (!strncmp(env[i], "CUDA_VISIBLE_DEVICES=", 21) || !strncmp(env[i], "SLURM_CONF=", 11)) {
                        free(env[i]);
                        continue;
                }
                env[n++] = env[i];
        }
        env[n] = NULL;
        const char *conf = getenv("SLURM_CONF");
        if (conf) {
                env = gw_xrealloc(env, (n + 2) * sizeof *env);
                size_t len = strlen(conf) + 12;
                char *e = gw_xmalloc(len);
                snprintf(e, len, "SLURM_CONF=%s", conf);
                env[n++] = e;
                env[n] = NULL;
        }
        return env;
}

int gw_slurm_wait_child(pid_t pid, int fd, char *out, size_t n, int *status) {
        gw_usec_t deadline = gw_clock_mono() + FOREGROUND_TIMEOUT_USEC;
        size_t len = 0;
        for (;;) {
                gw_usec_t now = gw_clock_mono();
                if (now >= deadline)
                        break;
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int r = poll(&p, 1, (int) ((deadline - now) / 1000) + 1);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        break;
                ssize_t k = read(fd, out + len, n - 1 - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                len += (size_t) k;
                if (len == n - 1)
                        break;
        }
        out[len] = '\0';
        for (;;) {
                pid_t w = waitpid(pid, status, WNOHANG);
                if (w == pid)
                        return 0;
                if (w < 0 && errno != EINTR)
                        return -errno;
                if (gw_clock_mono() >= deadline) {
                        (void) kill(pid, SIGKILL);
                        (void) waitpid(pid, status, 0);
                        return -ETIMEDOUT;
                }
                usleep(10000);
        }
}

/* gpuward's own log file of the attempt (no --output), made here and handed to the user, as
 * the local supervisor does: slurmstepd opens it as the user, who could not create it in the
 * daemon's log directory.  The nodes must see the state directory at the same path. */
static void log_make(const struct gw_daemon *d, const struct gw_job *j) {
        if (j->output || !j->log_path || !*j->log_path)
                return;
        _cleanup_close_ int fd =
                open(j->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
        if (fd < 0)
                log_warn("job %lld: cannot make its log %s: %s", (long long) j->id, j->log_path, strerror(errno));
        else if (d->loop.euid == 0 && (j->uid || j->gid) && fchown(fd, j->uid, j->gid) < 0)
                log_warn("job %lld: cannot give its log %s to its user: %s", (long long) j->id, j->log_path,
                         strerror(errno));
}

static int start(struct gw_daemon *d, struct gw_djob *dj, const struct gw_exec_start *how, char *err, size_t errlen) {
        struct gw_job *j = dj->job;
        log_make(d, j);
        /* The nodes it avoids; its retry backoff is Slurm's --begin (gw_slurm_sbatch_argv). */
        struct gw_slurm_jobx *x = gw_slurm_jobx_of(dj);
        const char *avoid[GW_SLURM_AVOID_MAX];
        for (size_t i = 0; i < x->n_avoid; i++)
                avoid[i] = x->avoid[i];
        x->last_oom = false;
        x->last_node[0] = '\0';
        char tag[GW_SLURM_TAG_SIZE];
        if (gw_slurm_tag_format(j->id, j->attempt, tag, sizeof tag) < 0)
                return snprintf(err, errlen, "attempt %d of job %lld cannot be tagged", j->attempt, (long long) j->id),
                       -EINVAL;
        /* A slice job asks for Slurm's type of its profile; a whole-GPU job is kept off the
         * nodes of slices only, which a plain --gres=gpu:N would take (exec_slurm_gres.c). */
        const char *type, *const *slices;
        int r = gw_slurm_gres_type(d, j, &type, err, errlen);
        if (r < 0)
                return r;
        size_t n_slices = j->mig_profile || j->ngpus <= 0 ? 0 : gw_slurm_gres_slice_nodes(d, &slices);
        _cleanup_free_ const char **exclude = gw_xmalloc((x->n_avoid + n_slices + 1) * sizeof *exclude);
        memcpy(exclude, avoid, x->n_avoid * sizeof *avoid);
        for (size_t i = 0; i < n_slices; i++)
                exclude[x->n_avoid + i] = slices[i];
        struct gw_sbatch_opts o = { .now = d->now_wall,
                                    .gpu_type = type,
                                    .exclude = exclude,
                                    .n_exclude = x->n_avoid + n_slices,
                                    .comment = tag,
                                    .reservation = gw_slurm_book_reservation(d, j) };
        _cleanup_(gw_strv_freep) char **argv = NULL;
        /* The command as the job code made it for this attempt (with a retry's resume
         * arguments), in the job's place. */
        struct gw_job run = *j;
        run.argv = (char **) how->argv;
        /* Its dataset is staged on the node Slurm picks, by the batch script, before the command. */
        _cleanup_(gw_strv_freep) char **staged = NULL;
        if (j->dataset && !(staged = gw_slurm_stage_argv(d, j->dataset, how->argv, err, errlen)))
                return -EINVAL;
        if (staged)
                run.argv = staged;
        /* A --scratch job's step, outermost: its folder, copies and signals around all of it. */
        _cleanup_(gw_strv_freep) char **scratched = NULL;
        if (j->scratch && j->scratch_dir && !(scratched = gw_slurm_scratch_argv(d, j, run.argv, err, errlen)))
                return -EINVAL;
        if (scratched)
                run.argv = scratched;
        r = gw_slurm_sbatch_argv(&run, &o, &argv, err, errlen);
        if (r < 0)
                return r;
        /* The event says what sbatch was asked that gpuward chose: the slices' type, the
         * nodes of slices kept out, the booking's reservation. */
        char in[GW_SLURM_TYPE_MAX + 200] = "";
        if (type)
                snprintf(in, sizeof in, "as --gres=gpu:%s:%d", type, j->mig_count);
        else if (n_slices)
                snprintf(in, sizeof in, "kept off %zu node%s of MIG slices only", n_slices, n_slices == 1 ? "" : "s");
        if (o.reservation)
                snprintf(in + strlen(in), sizeof in - strlen(in), "%sin reservation %s, its user's booking",
                         in[0] ? "; " : "", o.reservation);
        free(argv[0]);
        argv[0] = gw_xstrdup(slurm_of(d)->sbatch);
        /* Not waited for: sbatch's answer comes to the loop (exec_slurm_submit.c). */
        return gw_slurm_submit_begin(d, dj, TAKE_PTR(argv), sbatch_env(how->envp), how->account, in[0] ? in : NULL);
}

int gw_slurm_follow(struct gw_daemon *d, struct gw_djob *dj, uint32_t id, const char *how) {
        struct gw_job *j = dj->job;
        job_add(slurm_of(d), dj, id, d->now);
        struct gw_slurm_jobx *x = gw_slurm_jobx_of(dj);
        char msg[sizeof x->avoid + 256], begin[32] = "", excl[sizeof x->avoid + 16] = "";
        if (j->not_before > d->now_wall)
                snprintf(begin, sizeof begin, ", to begin in %llds",
                         (long long) ((j->not_before - d->now_wall + GW_USEC_PER_SEC - 1) / GW_USEC_PER_SEC));
        for (size_t i = 0; i < x->n_avoid; i++)
                snprintf(excl + strlen(excl), sizeof excl - strlen(excl), "%s%s", i ? "," : ", excluding ",
                         x->avoid[i]);
        /* adopt() reads the id back from the start of this text.  Not recorded, the tag in
         * its comment still lets a restarted daemon find it. */
        snprintf(msg, sizeof msg, "attempt %d submitted to Slurm as job %" PRIu32 "%s%s%s%s%s", j->attempt, id, begin,
                 excl, how ? " (" : "", how ? how : "", how ? ")" : "");
        if (gw_store_job_event(d->store, j->id, j->state, "slurm_job", msg) < 0)
                log_warn("job %lld: %s, not recorded: %s", (long long) j->id, msg, gw_store_errmsg(d->store));
        log_info("job %lld: %s", (long long) j->id, msg);
        j->not_before = 0; /* the backoff is Slurm's now (--begin) */
        slurm_of(d)->poll_next = 0;
        return 0;
}

/* The relay signal that asks a --scratch job's step for sig to its command's main process:
 * its step is the batch script, which alone a signal with --batch reaches, and which passes a
 * plain signal on to the command's process group (scratch_step.c). */
static int relay_of(int sig) {
        int relay = gw_scratch_relay_of(sig);
        return relay < 0 ? -EOPNOTSUPP : relay; /* told by the caller: "could not be sent" */
}

/* scancel as the daemon (root may signal any job); not waited for: the loop reaps it.  A
 * job Slurm has not started yet cannot take a signal, only the cancel itself. */
static int signal_job(struct gw_daemon *d, struct gw_djob *dj, int sig, unsigned flags) {
        struct gw_exec_slurm *s = slurm_of(d);
        struct gw_slurm_job *sj = gw_slurm_job_find(s, dj->job->id);
        if (!sj)
                return gw_slurm_submit_signal(d, dj, sig, flags);
        bool main_only = flags & GW_EXEC_SIGNAL_MAIN, step = dj->job->scratch && dj->job->scratch_dir;
        int send = main_only && step ? relay_of(sig) : sig;
        if (send < 0)
                return send;
        char id[16], sigopt[32];
        snprintf(id, sizeof id, "%" PRIu32, sj->slurm_id);
        snprintf(sigopt, sizeof sigopt, "--signal=%d", send);
        char *plain[] = { s->scancel, id, NULL };
        /* A --scratch job's step passes a plain signal on to the command's process group: the
         * only way one reaches the command where Slurm signals a step's tasks alone (with
         * proctrack/cgroup the children of slurmstepd, but for SIGKILL).  --full would give
         * the command each signal twice where Slurm signals every process of the step
         * (proctrack/linuxproc: slurmstepd's whole process tree). */
        bool batch = main_only || step;
        char *full[] = { s->scancel, sigopt, batch ? "--batch" : "--full", id, NULL };
        bool cancel = sig == SIGKILL || (sj->pending_in_slurm && !(flags & GW_EXEC_SIGNAL_MAIN));
        if (sj->pending_in_slurm && (flags & GW_EXEC_SIGNAL_MAIN))
                return -ESRCH;
        char conf[4200], *env[2];
        gw_slurm_client_env(conf, sizeof conf, env);
        pid_t pid = gw_slurm_spawn(cancel ? plain : full, env, false, 0, 0, NULL, 0, NULL, -1);
        if (pid < 0)
                return (int) pid;
        gw_slurm_kid_add(s, pid);
        log_info("job %lld: scancel %s%s%s%s%s", (long long) dj->job->id, cancel ? "" : sigopt, cancel ? "" : " ",
                 cancel ? "" : full[2], cancel ? "" : " ", id);
        return 0;
}

static int adopt_begin(struct gw_daemon *d) {
        gw_slurm_tags_load(d);
        return 0;
}

/* The Slurm job of the current attempt, from its "slurm_job" event; the poll then tells
 * whether it still runs.  Without one (its submit was not recorded) the attempt is lost. */
static int adopt(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_job_event *ev = NULL;
        size_t n = 0;
        uint32_t id = 0;
        if (gw_store_job_attempt_events(d->store, dj->job->id, &ev, &n) == 0)
                for (size_t i = 0; i < n; i++) {
                        int attempt;
                        uint32_t sid;
                        if (!strcmp(ev[i].kind, "slurm_job") && ev[i].message &&
                            sscanf(ev[i].message, "attempt %d submitted to Slurm as job %" SCNu32, &attempt, &sid) ==
                                    2 &&
                            attempt == dj->job->attempt)
                                id = sid;
                }
        gw_job_events_free(ev, n);
        if (!id && (id = gw_slurm_tag_take(slurm_of(d), dj->job->id, dj->job->attempt, dj->job->uid))) {
                gw_slurm_follow(d, dj, id, "found by its tag after a restart");
                gw_slurm_job_find(slurm_of(d), dj->job->id)->submitted = 0;
                return 1;
        }
        if (!id) {
                struct gw_exec_end end = { .kind = GW_EXEC_LOST };
                log_warn("job %lld: no Slurm job recorded for attempt %d; lost", (long long) dj->job->id,
                         dj->job->attempt);
                d->exec->ended(d, dj, &end);
                return 0;
        }
        job_add(slurm_of(d), dj, id, 0);
        log_info("job %lld: following Slurm job %" PRIu32 " again", (long long) dj->job->id, id);
        return 1;
}

static void adopt_end(struct gw_daemon *d) {
        struct gw_exec_slurm *s = slurm_of(d);
        /* Every attempt that could own a tag has been adopted; starts from now on are new. */
        free(s->tags);
        s->tags = NULL;
        s->n_tags = 0;
        s->poll_next = 0;
}

static void ready(struct gw_daemon *d, struct gw_source *src) {
        if (!gw_slurm_submit_ready(d, src) && !gw_slurm_gres_ready(d, src))
                gw_slurm_poll_ready(d);
}

static bool reaped(struct gw_daemon *d, pid_t pid, int status) {
        struct gw_exec_slurm *s = slurm_of(d);
        for (size_t i = 0; i < s->n_kids; i++)
                if (s->kids[i] == pid) {
                        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                                log_warn("Slurm command (pid %d: scancel, or a squeue or sbatch given up on) "
                                         "ended with status %d",
                                         (int) pid, status);
                        s->kids[i] = s->kids[--s->n_kids];
                        return true;
                }
        return gw_slurm_submit_reaped(d, pid, status) || gw_slurm_gres_reaped(d, pid, status) ||
               gw_slurm_poll_reaped(d, pid, status);
}

static gw_usec_t tick(struct gw_daemon *d) {
        gw_usec_t a = gw_slurm_submit_tick(d), b = gw_slurm_poll_tick(d), c = gw_slurm_book_tick(d);
        gw_usec_t g = gw_slurm_gres_tick(d);
        gw_usec_t ab = a < b ? a : b, cg = c < g ? c : g;
        return ab < cg ? ab : cg;
}

static void release(struct gw_daemon *d, struct gw_djob *dj, bool started) {
        (void) started;
        (void) gw_slurm_submit_release(d, dj);
        gw_slurm_job_forget(slurm_of(d), dj->job->id);
}

static void nothing(struct gw_daemon *d) { (void) d; }

static void prepare(struct gw_daemon *d, struct gw_djob *dj) { (void) d, (void) dj; }

/* Slurm's OUT_OF_MEMORY is its memory cgroup's OOM kill, the single box's host_oom.  A job
 * with a dataset or a scratch folder ran behind a node step (gw_slurm_stage_argv,
 * gw_slurm_scratch_argv), which tells when its node could not do its part. */
static void end_facts(struct gw_daemon *d, const struct gw_djob *dj, struct gw_failure_input *in) {
        (void) d;
        const struct gw_slurm_jobx *x = (const void *) dj->exec;
        const struct gw_job *j = dj->job;
        if (x && x->last_oom)
                in->oom_killed = true;
        in->node_step = j->dataset || (j->scratch && j->scratch_dir);
        in->node = x && x->last_node[0] ? x->last_node : NULL;
}

/* The node, not the job: as after Slurm's NODE_FAIL, the next attempts go elsewhere.  The
 * event says why in gpuward's words (the step's own line is the job's log, private to it). */
static void node_failed(struct gw_daemon *d, struct gw_djob *dj) {
        const struct gw_slurm_jobx *x = gw_slurm_jobx_of(dj);
        char node[sizeof x->last_node];
        snprintf(node, sizeof node, "%s", x->last_node);
        if (node[0])
                gw_slurm_avoid_node(d, dj, node, "its dataset or scratch step could not do the node's part (exit 69)");
}

static void slurm_close(struct gw_daemon *d) {
        struct gw_exec_slurm *s = slurm_of(d);
        gw_slurm_poll_close(d);
        gw_slurm_submit_close(d);
        gw_slurm_gres_close(d);
        free(s->jobs);
        free(s->kids);
        free(s->tags);
        free(s->resv);
        free(s);
        d->exec = NULL;
}

/* An absolute path for name from the daemon's PATH (the commands run with the job's
 * environment, whose PATH is the user's). */
static int find_program(const char *name, char *out, size_t n) {
        const char *path = getenv("PATH");
        if (!path || !*path)
                path = "/usr/local/bin:/usr/bin:/bin";
        for (const char *p = path; *p;) {
                size_t l = strcspn(p, ":");
                snprintf(out, n, "%.*s/%s", (int) l, p, name);
                if (l && access(out, X_OK) == 0)
                        return 0;
                p += l + (p[l] == ':');
        }
        return -ENOENT;
}

int gw_exec_slurm_open(struct gw_daemon *d) {
        struct gw_exec_slurm *s = gw_xcalloc(1, sizeof *s);
        s->poll_fd = -1;
        s->gres.fd = -1;
        s->ops = (struct gw_executor){
                .name = "slurm",
                .state = s,
                .placement = GW_EXEC_PLACE_NODES,
                .preempts = false, /* Slurm's own preemption, if any, is Slurm's */
                .book = &gw_slurm_book_ops,
                .node_of = gw_slurm_node_of,
                .admit = gw_slurm_gres_admit,
                .prepare = prepare,
                .start = start,
                .signal = signal_job,
                .adopt_begin = adopt_begin,
                .adopt = adopt,
                .adopt_end = adopt_end,
                .ready = ready,
                .reaped = reaped,
                .tick = tick,
                .release = release,
                .sync = nothing,
                .end_facts = end_facts,
                .node_failed = node_failed,
                .close = slurm_close,
        };
        d->exec = &s->ops;
        gw_slurm_self_find(s);
        const struct {
                const char *name;
                char *to;
        } progs[] = { { "sbatch", s->sbatch },
                      { "squeue", s->squeue },
                      { "scancel", s->scancel },
                      { "scontrol", s->scontrol },
                      { "sinfo", s->sinfo } };
        for (size_t i = 0; i < ELEMENTSOF(progs); i++)
                if (find_program(progs[i].name, progs[i].to, sizeof s->sbatch) < 0) {
                        log_err("backend slurm: %s not found on PATH", progs[i].name);
                        return -ENOENT;
                }
        log_info("backend slurm: jobs go to Slurm with %s%s%s", s->sbatch, getenv("SLURM_CONF") ? ", SLURM_CONF=" : "",
                 getenv("SLURM_CONF") ? getenv("SLURM_CONF") : "");
        return 0;
}

const char *gw_slurm_node_of(struct gw_daemon *d, int64_t id) {
        if (!d->exec || !d->exec->state)
                return NULL;
        const struct gw_slurm_job *sj = gw_slurm_job_find(slurm_of(d), id);
        return sj && sj->node[0] ? sj->node : NULL;
}

int gw_slurm_read_start(struct gw_daemon *d, char *const *argv, const char *what, struct gw_source *src, int *fd,
                        pid_t *pid) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0) {
                log_warn("backend slurm: pipe: %s", strerror(errno));
                return -1;
        }
        char conf[4200], *env[2];
        gw_slurm_client_env(conf, sizeof conf, env);
        pid_t child = gw_slurm_spawn(argv, env, false, 0, 0, NULL, 0, NULL, p[1]);
        (void) close(p[1]);
        if (child < 0) {
                log_warn("backend slurm: cannot run %s: %s", what, strerror((int) -child));
                (void) close(p[0]);
                return -1;
        }
        (void) fcntl(p[0], F_SETFL, O_NONBLOCK);
        *fd = p[0];
        *pid = child;
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = src };
        if (epoll_ctl(d->loop.epfd, EPOLL_CTL_ADD, *fd, &ev) < 0)
                log_warn("backend slurm: epoll: %s", strerror(errno));
        return 0;
}
