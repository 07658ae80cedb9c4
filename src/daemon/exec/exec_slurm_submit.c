/* Handing attempts to Slurm without waiting for it (exec_slurm.h): each sbatch runs as a
 * child whose pipe the loop reads as it becomes readable, as the squeue poll does, so a slow
 * or silent slurmctld holds no one but the jobs it has not answered for.  Until sbatch
 * answers the attempt is RUNNING, "submitting to Slurm"; its answer makes it a followed Slurm
 * job (gw_slurm_follow), its refusal ends it FAILED, and its silence (SBATCH_TIMEOUT_USEC) is
 * not the job's fault: the attempt waits and is submitted again, with a growing backoff. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/directive.h"
#include "core/slurm.h"
#include "daemon/exec/exec_slurm.h"

/* sbatch only hands the job to slurmctld: longer than this, the controller is busy or gone. */
#define SBATCH_TIMEOUT_USEC (10 * GW_USEC_PER_SEC)
#define RETRY_FIRST_USEC (30 * GW_USEC_PER_SEC)
#define RETRY_MAX_USEC (300 * GW_USEC_PER_SEC)
/* sbatch children at once: each is a process and a connection to slurmctld. */
#define SUBMITS_IN_FLIGHT_MAX 8
/* sbatch prints a line; the tag probe a line for each of the user's Slurm jobs (~40 bytes). */
#define SUB_OUT_MAX (1u << 20)

static void event(struct gw_daemon *d, int64_t id, enum gw_job_state state, const char *msg) {
        if (gw_store_job_event(d->store, id, state, "slurm", msg) < 0)
                log_warn("job %lld: %s, not recorded: %s", (long long) id, msg, gw_store_errmsg(d->store));
        log_info("job %lld: %s", (long long) id, msg);
}

static struct gw_slurm_submit *sub_free(struct gw_slurm_submit *u) {
        if (!u)
                return NULL;
        gw_strv_free(u->argv);
        gw_strv_free(u->env);
        free(u->out);
        free(u->groups);
        free(u->how);
        free(u);
        return NULL;
}

/* Takes u out of the table (it is freed by the caller). */
static void sub_remove(struct gw_exec_slurm *s, struct gw_slurm_submit *u) {
        for (size_t i = 0; i < s->n_subs; i++)
                if (s->subs[i] == u) {
                        s->subs[i] = s->subs[--s->n_subs];
                        return;
                }
}

static struct gw_slurm_submit *sub_of_job(struct gw_exec_slurm *s, int64_t id) {
        for (size_t i = 0; i < s->n_subs; i++)
                if (s->subs[i]->dj && s->subs[i]->id == id)
                        return s->subs[i];
        return NULL;
}

static void pipe_close(struct gw_daemon *d, struct gw_slurm_submit *u) {
        if (u->fd < 0)
                return;
        (void) epoll_ctl(d->loop.epfd, EPOLL_CTL_DEL, u->fd, NULL);
        (void) close(u->fd);
        u->fd = -1;
}

static size_t in_flight(const struct gw_exec_slurm *s) {
        size_t n = 0;
        for (size_t i = 0; i < s->n_subs; i++)
                n += s->subs[i]->pid > 0;
        return n;
}

/* Ends the attempt of u (taken out of the table and freed first: the end may release it). */
static void sub_end(struct gw_daemon *d, struct gw_slurm_submit *u, const struct gw_exec_end *end) {
        struct gw_exec_slurm *s = slurm_of(d);
        struct gw_djob *dj = u->dj;
        sub_remove(s, u);
        sub_free(u);
        if (dj)
                d->exec->ended(d, dj, end);
}

/* sbatch, or, before trying again after an sbatch given up on, squeue for the attempt's
 * tag: that sbatch may have reached slurmctld, and must not make a second Slurm job. */
static void spawn(struct gw_daemon *d, struct gw_slurm_submit *u) {
        struct gw_exec_slurm *s = slurm_of(d);
        int p[2];
        char why[300], user[32], conf[4200], *cenv[2];
        char *probe[] = { s->squeue, "--states=all", "--noheader", user, GW_SLURM_TAG_FORMAT, NULL };
        snprintf(user, sizeof user, "--user=%u", (unsigned) u->uid);
        gw_slurm_client_env(conf, sizeof conf, cenv);
        u->probe = u->backoff && !u->probed;
        u->probed = false;
        pid_t pid = -EMFILE;
        if (pipe2(p, O_CLOEXEC) == 0) {
                if (u->probe)
                        pid = gw_slurm_spawn(probe, cenv, false, 0, 0, NULL, 0, NULL, p[1]);
                else
                        pid = gw_slurm_spawn(u->argv, u->env, u->drop, u->uid, u->gid, u->groups, u->n_groups,
                                             u->dj->job->cwd, p[1]);
                (void) close(p[1]);
                if (pid < 0)
                        (void) close(p[0]);
        } else
                pid = -errno;
        if (pid < 0) {
                snprintf(why, sizeof why, "%s: cannot start it: %s", u->probe ? "squeue" : "sbatch",
                         strerror((int) -pid));
                sub_end(d, u, &(struct gw_exec_end){ .kind = GW_EXEC_NOT_STARTED, .why = why });
                return;
        }
        (void) fcntl(p[0], F_SETFL, O_NONBLOCK);
        u->pid = pid;
        u->fd = p[0];
        u->len = 0;
        u->eof = u->reaped = false;
        u->started = d->now;
        s->sub_src = (struct gw_source){ GW_SRC_EXEC, s };
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &s->sub_src };
        if (epoll_ctl(d->loop.epfd, EPOLL_CTL_ADD, u->fd, &ev) < 0)
                log_warn("job %lld: epoll on its sbatch: %s", (long long) u->id, strerror(errno));
}

/* A cancel asked for while sbatch was out, now that the Slurm job is known. */
static void cancel_known(struct gw_daemon *d, uint32_t slurm_id, int64_t id) {
        struct gw_exec_slurm *s = slurm_of(d);
        char sid[16], conf[4200], *env[2];
        snprintf(sid, sizeof sid, "%" PRIu32, slurm_id);
        char *argv[] = { s->scancel, sid, NULL };
        gw_slurm_client_env(conf, sizeof conf, env);
        pid_t pid = gw_slurm_spawn(argv, env, false, 0, 0, NULL, 0, NULL, -1);
        if (pid > 0)
                gw_slurm_kid_add(s, pid);
        log_info("job %lld: scancel %s (its sbatch answered after it was given up)", (long long) id, sid);
}

/* No answer to be had now (a silent or failing slurmctld): the attempt waits and tries
 * again, later each time, said in its events (why: what went wrong). */
static void retry_later(struct gw_daemon *d, struct gw_slurm_submit *u, const char *why) {
        if (!u->dj || u->cancel_sig)
                return; /* ended by the tick */
        u->backoff = u->backoff ? u->backoff * 2 : RETRY_FIRST_USEC;
        if (u->backoff > RETRY_MAX_USEC)
                u->backoff = RETRY_MAX_USEC;
        u->next_try = d->now + u->backoff;
        char msg[300];
        snprintf(msg, sizeof msg, "%s; trying again in %lld s", why, (long long) (u->backoff / GW_USEC_PER_SEC));
        event(d, u->id, u->dj->job->state, msg);
}

/* Slurm job sid is the attempt's: followed from now on (u is freed). */
static void answered(struct gw_daemon *d, struct gw_slurm_submit *u, uint32_t sid, const char *how) {
        struct gw_djob *dj = u->dj;
        int sig = u->cancel_sig;
        unsigned flags = u->cancel_flags;
        sub_remove(slurm_of(d), u);
        if (!dj) { /* its job has gone meanwhile: what it submitted must not run */
                cancel_known(d, sid, u->id);
                sub_free(u);
                return;
        }
        _cleanup_free_ char *own = u->how;
        u->how = NULL;
        sub_free(u);
        gw_slurm_follow(d, dj, sid, how ? how : own);
        if (sig)
                (void) d->exec->signal(d, dj, sig, flags);
}

/* The probe's squeue has exited: the attempt's Slurm job if the sbatch given up on made one,
 * else sbatch runs again at once. */
static void probe_done(struct gw_daemon *d, struct gw_slurm_submit *u) {
        u->pid = 0;
        if (!WIFEXITED(u->status) || WEXITSTATUS(u->status) != 0) {
                retry_later(d, u, "squeue, asked whether the last sbatch reached Slurm, failed");
                return;
        }
        for (char *line = u->out; line && *line;) {
                char *nl = strchr(line, '\n');
                struct gw_slurm_tagged t;
                if (gw_slurm_tag_parse(line, nl ? (size_t) (nl - line) : strlen(line), &t) == 0 && t.job == u->id &&
                    t.attempt == u->attempt && t.uid == (uint32_t) u->uid) {
                        answered(d, u, t.slurm_id, "found by its tag: the sbatch given up on had reached Slurm");
                        return;
                }
                line = nl ? nl + 1 : NULL;
        }
        u->probed = true;
        u->next_try = d->now;
}

/* sbatch has exited and its output is read: the Slurm job it made, or its refusal. */
static void sub_done(struct gw_daemon *d, struct gw_slurm_submit *u) {
        if (!u->out)
                u->out = gw_xcalloc(1, 1);
        if (u->probe) {
                probe_done(d, u);
                return;
        }
        u->out[strcspn(u->out, "\n")] = '\0';
        char *end = NULL;
        unsigned long sid = strtoul(u->out, &end, 10);
        bool ok = WIFEXITED(u->status) && WEXITSTATUS(u->status) == 0 && end != u->out && sid > 0 &&
                  sid <= UINT32_MAX && (!*end || *end == ';');
        u->pid = 0;
        if (!ok) {
                char why[300];
                snprintf(why, sizeof why, "sbatch refused the job: %.200s", u->out[0] ? u->out : "(no output)");
                sub_end(d, u, &(struct gw_exec_end){ .kind = GW_EXEC_NOT_STARTED, .why = why });
                return;
        }
        answered(d, u, (uint32_t) sid, NULL);
}

static void sub_read(struct gw_daemon *d, struct gw_slurm_submit *u) {
        while (u->fd >= 0) {
                if (u->cap - u->len < 512 && u->cap < SUB_OUT_MAX) {
                        u->cap = u->cap ? 2 * u->cap : 1024;
                        u->out = gw_xrealloc(u->out, u->cap);
                }
                ssize_t k = read(u->fd, u->out + u->len, u->cap - 1 - u->len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN)
                        return;
                if (k > 0)
                        u->len += (size_t) k;
                u->out[u->len] = '\0';
                if (k <= 0 || u->len == u->cap - 1) {
                        u->eof = true;
                        pipe_close(d, u);
                }
        }
}

/* One of the pipes is readable (which one, epoll does not say: each is read until EAGAIN). */
bool gw_slurm_submit_ready(struct gw_daemon *d, struct gw_source *src) {
        struct gw_exec_slurm *s = slurm_of(d);
        if (src != &s->sub_src)
                return false;
        for (size_t i = 0; i < s->n_subs;) {
                struct gw_slurm_submit *u = s->subs[i];
                if (u->fd >= 0) {
                        sub_read(d, u);
                        if (u->eof && u->reaped) {
                                sub_done(d, u);
                                continue; /* the table changed at i */
                        }
                }
                i++;
        }
        return true;
}

bool gw_slurm_submit_reaped(struct gw_daemon *d, pid_t pid, int status) {
        struct gw_exec_slurm *s = slurm_of(d);
        for (size_t i = 0; i < s->n_subs; i++)
                if (s->subs[i]->pid == pid && pid > 0) {
                        struct gw_slurm_submit *u = s->subs[i];
                        u->status = status;
                        u->reaped = true;
                        sub_read(d, u); /* what is left in the pipe */
                        if (!u->eof) { /* a grandchild holds it: what was read is the answer */
                                u->eof = true;
                                pipe_close(d, u);
                        }
                        sub_done(d, u);
                        return true;
                }
        return false;
}

/* The child did not answer in time: killed (reaped as a kid, its words ignored); the attempt
 * waits and tries again, unless it was cancelled meanwhile. */
static void sub_timeout(struct gw_daemon *d, struct gw_slurm_submit *u) {
        (void) kill(u->pid, SIGKILL);
        gw_slurm_kid_add(slurm_of(d), u->pid);
        u->pid = 0;
        pipe_close(d, u);
        char why[100];
        snprintf(why, sizeof why, "slurmctld did not answer %s within %d s", u->probe ? "squeue" : "sbatch",
                 (int) (SBATCH_TIMEOUT_USEC / GW_USEC_PER_SEC));
        retry_later(d, u, why);
}

gw_usec_t gw_slurm_submit_tick(struct gw_daemon *d) {
        struct gw_exec_slurm *s = slurm_of(d);
        gw_usec_t next = GW_USEC_INFINITY;
        for (size_t i = 0; i < s->n_subs;) {
                struct gw_slurm_submit *u = s->subs[i];
                if (u->pid > 0 && d->now - u->started >= SBATCH_TIMEOUT_USEC)
                        sub_timeout(d, u);
                if (u->pid == 0 && (!u->dj || u->cancel_sig)) {
                        /* Cancelled (or released) with no sbatch out: nothing reached Slurm. */
                        int sig = u->cancel_sig ? u->cancel_sig : SIGKILL;
                        sub_end(d, u, &(struct gw_exec_end){ .kind = GW_EXEC_EXITED, .status = sig });
                        continue; /* the table changed at i */
                }
                if (u->pid == 0 && u->next_try <= d->now && in_flight(s) < SUBMITS_IN_FLIGHT_MAX) {
                        size_t n = s->n_subs;
                        spawn(d, u);
                        if (s->n_subs != n)
                                continue;
                }
                gw_usec_t at = u->pid > 0 ? u->started + SBATCH_TIMEOUT_USEC : u->next_try;
                if (u->pid > 0 || in_flight(s) < SUBMITS_IN_FLIGHT_MAX)
                        next = at < next ? at : next;
                i++;
        }
        return next;
}

int gw_slurm_submit_begin(struct gw_daemon *d, struct gw_djob *dj, char **argv, char **env, const struct gw_account *a,
                          const char *how) {
        struct gw_exec_slurm *s = slurm_of(d);
        struct gw_job *j = dj->job;
        struct gw_slurm_submit *u = gw_xcalloc(1, sizeof *u);
        *u = (struct gw_slurm_submit){ .id = j->id,
                                       .attempt = j->attempt,
                                       .dj = dj,
                                       .argv = argv,
                                       .env = env,
                                       .drop = d->loop.euid == 0 && j->uid != 0,
                                       .uid = j->uid,
                                       .gid = j->gid,
                                       .fd = -1,
                                       .next_try = d->now,
                                       .how = how ? gw_xstrdup(how) : NULL };
        if (a && a->n_groups > 0) {
                u->groups = gw_xcalloc((size_t) a->n_groups, sizeof *u->groups);
                memcpy(u->groups, a->groups, (size_t) a->n_groups * sizeof *u->groups);
                u->n_groups = a->n_groups;
        }
        if (s->n_subs == s->cap_subs) {
                s->cap_subs = s->cap_subs ? 2 * s->cap_subs : 8;
                s->subs = gw_xrealloc(s->subs, s->cap_subs * sizeof *s->subs);
        }
        s->subs[s->n_subs++] = u;
        char msg[64];
        snprintf(msg, sizeof msg, "attempt %d: submitting to Slurm", j->attempt);
        event(d, j->id, j->state, msg);
        return 0;
}

int gw_slurm_submit_signal(struct gw_daemon *d, struct gw_djob *dj, int sig, unsigned flags) {
        struct gw_slurm_submit *u = sub_of_job(slurm_of(d), dj->job->id);
        if (!u || (flags & GW_EXEC_SIGNAL_MAIN))
                return -ESRCH; /* nothing of it runs yet to take a warning */
        if (!u->cancel_sig) {
                u->cancel_sig = sig;
                u->cancel_flags = flags;
                log_info("job %lld: signal %d while its sbatch is %s; %s", (long long) dj->job->id, sig,
                         u->pid > 0 ? "out" : "waiting to be tried again",
                         u->pid > 0 ? "given to the Slurm job once sbatch answers" : "nothing reached Slurm");
        }
        return 0;
}

bool gw_slurm_submit_release(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_slurm_submit *u = sub_of_job(slurm_of(d), dj->job->id);
        if (!u)
                return false;
        u->dj = NULL; /* an answer still to come is cancelled in Slurm; none to come: dropped */
        if (u->pid == 0) {
                sub_remove(slurm_of(d), u);
                sub_free(u);
        }
        return true;
}

void gw_slurm_submit_close(struct gw_daemon *d) {
        struct gw_exec_slurm *s = slurm_of(d);
        for (size_t i = 0; i < s->n_subs; i++) {
                struct gw_slurm_submit *u = s->subs[i];
                if (u->pid > 0) {
                        (void) kill(u->pid, SIGKILL);
                        (void) waitpid(u->pid, NULL, 0);
                }
                pipe_close(d, u);
                sub_free(u);
        }
        free(s->subs);
        s->subs = NULL;
        s->n_subs = s->cap_subs = 0;
}
