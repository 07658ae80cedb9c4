/* gpuwardd: one epoll loop does all the work: signals (signalfd), the two HTTP doors, the
 * executor's fds (the local one, exec_shim.h: the supervisors' pidfds and reports, the
 * launcher's answers), and the deadlines of running jobs.
 * Four helper threads only wait on slow calls: the GPU sampler's two (sampler.c: periodic
 * snapshots, NVML events), the webhook sender (notify.c) and the store's WAL checkpoints
 * (store/checkpoint.c).  None touches the daemon's state: the sampler's results and the
 * webhooks pass through a locked slot or queue, the checkpoints use a connection of their own. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/latency.h"
#include "base/log.h"
#include "daemon/agent/agent.h"
#include "daemon/cache/cache.h"
#include "daemon/daemon.h"
#include "daemon/base/fairshare.h"
#include "daemon/base/helper.h"
#include "daemon/notify/notify.h"
#include "daemon/nodes/nodes.h"
#include "daemon/nodewatch/nodes_watch.h"
#include "daemon/preempt/preempt.h"
#include "daemon/publish/publish.h"
#include "daemon/scratch/scratch.h"
#include "daemon/http/web.h"
#include "daemon/backup/backup.h"
#include "daemon/base/jobclock.h"
#include "daemon/http/api.h"
#include "daemon/life/jobs.h"
#include "daemon/life/queue.h"
#include "daemon/observe/gpus.h"
#include "daemon/observe/observe.h"
#include "daemon/sharing/sharing.h"
#include "daemon/training/training.h"

static int mkdir_p(const char *path, mode_t mode) {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s", path);
        for (char *p = buf + 1; *p; p++)
                if (*p == '/') {
                        *p = '\0';
                        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                                return -errno;
                        *p = '/';
                }
        if (mkdir(buf, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

/* Tells systemd we are ready (Type=notify), without linking libsystemd. */
static void notify_ready(void) {
        const char *path = getenv("NOTIFY_SOCKET");
        if (!path || (path[0] != '/' && path[0] != '@'))
                return;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t l = strlen(path);
        if (l >= sizeof sa.sun_path)
                return;
        memcpy(sa.sun_path, path, l);
        if (sa.sun_path[0] == '@')
                sa.sun_path[0] = '\0';
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd >= 0)
                (void) sendto(fd, "READY=1", 7, MSG_NOSIGNAL, (struct sockaddr *) &sa,
                              (socklen_t) (offsetof(struct sockaddr_un, sun_path) + l));
}

/* One daemon per state dir: a second one would re-adopt the first one's running jobs, write
 * the same database and hand out the same GPUs.  The lock goes with the process, kill -9 included. */
static int lock_state_dir(struct gw_daemon *d) {
        char path[4200];
        snprintf(path, sizeof path, "%s/gpuwardd.lock", d->cfg->state_dir);
        d->loop.lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (d->loop.lock_fd < 0) {
                int e = errno;
                log_err("cannot open %s: %s", path, strerror(e));
                return -e;
        }
        if (flock(d->loop.lock_fd, LOCK_EX | LOCK_NB) < 0) {
                int e = errno;
                char pid[32] = "";
                ssize_t n = pread(d->loop.lock_fd, pid, sizeof pid - 1, 0);
                pid[n > 0 ? n : 0] = '\0';
                pid[strcspn(pid, "\n")] = '\0';
                if (e == EWOULDBLOCK)
                        log_err("state dir %s is in use by another gpuwardd%s%s%s: stop it first, or give this one "
                                "its own --state-dir",
                                d->cfg->state_dir, pid[0] ? " (pid " : "", pid, pid[0] ? ")" : "");
                else
                        log_err("cannot lock %s: %s", path, strerror(e));
                return -e;
        }
        char pid[32];
        int n = snprintf(pid, sizeof pid, "%d\n", (int) getpid());
        if (ftruncate(d->loop.lock_fd, 0) < 0 || pwrite(d->loop.lock_fd, pid, (size_t) n, 0) != n)
                log_warn("cannot write the pid into %s: %s", path, strerror(errno));
        return 0;
}

static int setup_dirs(struct gw_daemon *d) {
        const char *sd = d->cfg->state_dir;
        snprintf(d->loop.log_dir, sizeof d->loop.log_dir, "%s/logs", sd);
        snprintf(d->loop.run_dir, sizeof d->loop.run_dir, "%s/run", sd);
        char sock_dir[4096];
        snprintf(sock_dir, sizeof sock_dir, "%s", d->cfg->socket);
        char *slash = strrchr(sock_dir, '/');
        if (slash && slash != sock_dir)
                *slash = '\0';
        const char *dirs[] = { sd, d->loop.log_dir, d->loop.run_dir, sock_dir };
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                int r = mkdir_p(dirs[i], 0755);
                if (r < 0) {
                        log_err("cannot create %s: %s", dirs[i], strerror(-r));
                        return r;
                }
                if (i == 0 && (r = lock_state_dir(d)) < 0)
                        return r;
        }
        return 0;
}

static int epoll_add(struct gw_daemon *d, int fd, struct gw_source *src) {
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = src };
        return epoll_ctl(d->loop.epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

static int setup_signals(struct gw_daemon *d) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGCHLD);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
                return -errno;
        (void) signal(SIGPIPE, SIG_IGN);
        d->loop.sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
        if (d->loop.sigfd < 0)
                return -errno;
        d->loop.sig_src = (struct gw_source){ GW_SRC_SIGNAL, NULL };
        return epoll_add(d, d->loop.sigfd, &d->loop.sig_src);
}

static int start_door(struct gw_daemon *d, int idx, int fd, bool unix_door) {
        int r = gw_http_start(fd, unix_door, gw_web_handle, gw_api_conn_gone, d, &d->loop.http[idx]);
        if (r < 0) {
                log_err("cannot start the HTTP server");
                (void) close(fd);
                return r;
        }
        d->loop.http_src[idx] = (struct gw_source){ GW_SRC_HTTP, d->loop.http[idx] };
        return epoll_add(d, gw_http_fd(d->loop.http[idx]), &d->loop.http_src[idx]);
}

static int setup_http(struct gw_daemon *d) {
        char err[512];
        /* The Unix door checks it at each accept. */
        gw_http_set_max_per_uid(d->cfg->max_conns_per_user);
        int fd = gw_http_listen_unix(d->cfg->socket, err, sizeof err);
        if (fd < 0) {
                log_err("%s", err);
                return fd;
        }
        d->loop.socket_bound = true;
        int r = start_door(d, 0, fd, true);
        if (r < 0 || !d->cfg->listen[0])
                return r;
        fd = gw_http_listen_tcp(d->cfg->listen, &d->loop.tcp_port, err, sizeof err);
        if (fd < 0) {
                log_err("%s", err);
                return fd;
        }
        r = start_door(d, 1, fd, false);
        if (r < 0)
                return r;
        char path[4200], tmp[4300];
        snprintf(d->loop.tcp_addr, sizeof d->loop.tcp_addr, "%.*s:%d",
                 (int) (strrchr(d->cfg->listen, ':') - d->cfg->listen), d->cfg->listen, d->loop.tcp_port);
        snprintf(path, sizeof path, "%s/listen.addr", d->cfg->state_dir);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        /* Not fatal (a full disk must not keep the daemon from serving reads), but said: with
         * port 0 this file is how scripts find the port. */
        FILE *f = fopen(tmp, "we");
        bool ok = f && fprintf(f, "%s\n", d->loop.tcp_addr) > 0;
        ok = f && fclose(f) == 0 && ok;
        if (!ok || rename(tmp, path) < 0) {
                log_warn("cannot write %s (%m): the HTTP API is at %s", path, d->loop.tcp_addr);
                (void) unlink(tmp);
        }
        return 0;
}

/* SIGCHLD: the executor's children, else a snapshot's restore helper. */
static void reap(struct gw_daemon *d) {
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
                if (!d->exec->reaped(d, pid, status) && !gw_train_restore_reaped(d, pid, status))
                        if (!gw_cache_reaped(d, pid, status))
                                (void) gw_scratch_reaped(d, pid, status);
}

static void on_signal(struct gw_daemon *d) {
        struct signalfd_siginfo si;
        while (read(d->loop.sigfd, &si, sizeof si) == sizeof si) {
                if (si.ssi_signo == SIGCHLD)
                        reap(d);
                else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
                        log_info("signal %s: stopping; running jobs keep running and are re-adopted at the next start",
                                 sigabbrev_np((int) si.ssi_signo));
                        d->loop.quit = true;
                } else if (si.ssi_signo == SIGHUP)
                        log_info("SIGHUP: nothing to reload yet");
        }
}

void gw_daemon_clock_read(struct gw_daemon *d) {
        d->now = gw_now_mono();
        d->now_wall = gw_now_wall();
}

static int loop_timeout(struct gw_daemon *d, gw_usec_t deadline) {
        gw_usec_t wait = 60 * GW_USEC_PER_SEC;
        if (deadline != GW_USEC_INFINITY && deadline - d->now < wait)
                wait = deadline - d->now;
        int ms = wait <= 0 ? 0 : (int) ((wait + 999) / 1000);
        for (int i = 0; i < 2; i++)
                if (d->loop.http[i]) {
                        int t = gw_http_timeout_ms(d->loop.http[i]);
                        if (t >= 0 && t < ms)
                                ms = t;
                }
        return ms;
}

/* Whether a wake-up may change jobs: HTTP requests are served after the batch (each write
 * is its own transaction), and an empty BEGIN IMMEDIATE...COMMIT still takes the WAL's
 * locks: six system calls per request for nothing.  (No pass is due here: the loop ran any
 * before waiting.) */
static bool batch_needed(const struct epoll_event *evs, int n) {
        for (int i = 0; i < n; i++)
                if (((const struct gw_source *) evs[i].data.ptr)->kind != GW_SRC_HTTP)
                        return true;
        return false;
}

/* The features' own deadlines, then the jobs' (time limits, SIGKILLs, backoffs): the bookings
 * first, as one that begins or ends changes the limits of running jobs that the jobs' tick
 * then enforces; then the snapshots' restore helpers, the backups and the models being
 * published, which change no job.
 * The earliest deadline (monotonic), or INFINITY. */
static gw_usec_t tick(struct gw_daemon *d) {
        gw_usec_t next = gw_sharing_tick(d), restore = gw_train_restore_tick(d), backup = gw_backup_tick(d);
        gw_usec_t jobs = gw_jobs_tick(d), nodes = gw_nodes_watch_tick(d), preempt = gw_preempt_tick(d);
        gw_usec_t cache = gw_cache_tick(d), whole = gw_schedule_tick(d);
        if (cache < next)
                next = cache;
        if (whole < next)
                next = whole;
        gw_usec_t scratch = gw_scratch_tick(d);
        if (scratch < next)
                next = scratch;
        gw_usec_t publish = gw_publish_tick(d);
        if (publish < next)
                next = publish;
        if (nodes < next)
                next = nodes;
        if (preempt < next)
                next = preempt;
        if (restore < next)
                next = restore;
        if (backup < next)
                next = backup;
        return jobs < next ? jobs : next;
}

static void run_loop(struct gw_daemon *d) {
        struct epoll_event evs[64];
        while (!d->loop.quit) {
                gw_daemon_clock_read(d);
                gw_usec_t deadline = tick(d);
                if (d->jobs.sched_dirty)
                        gw_schedule(d);
                gw_prelog_head(d);
                /* The executor's own deadlines (an idle supervisor's minute, a cgroup to remove). */
                gw_usec_t exec_due = d->exec->tick(d);
                if (exec_due < deadline)
                        deadline = exec_due;
                if (d->jobs.sched_dirty)
                        continue;
                /* Idle work (log files made ahead) only when no event is waiting. */
                bool idle_work = gw_prelog_pending(d);
                int n = epoll_wait(d->loop.epfd, evs, (int) ELEMENTSOF(evs), idle_work ? 0 : loop_timeout(d, deadline));
                if (n < 0 && errno != EINTR) {
                        log_err("epoll_wait: %s", strerror(errno));
                        break;
                }
                if (n == 0 && idle_work) {
                        gw_prelog_one(d);
                        continue;
                }
                gw_daemon_clock_read(d);
                if (batch_needed(evs, n))
                        gw_jobs_batch_begin(d);
                bool http_fired[2] = { false, false };
                for (int i = 0; i < n; i++) {
                        struct gw_source *src = evs[i].data.ptr;
                        if (src->kind == GW_SRC_HTTP)
                                http_fired[src->ptr == d->loop.http[1]] = true;
                        else if (src->kind == GW_SRC_SIGNAL)
                                on_signal(d);
                        else if (src->kind == GW_SRC_SAMPLER)
                                gw_observe_ready(d);
                        else if (src->kind == GW_SRC_EXEC)
                                d->exec->ready(d, src);
                        else if (src->kind == GW_SRC_PREEMPT)
                                gw_preempt_ready(d);
                }
                /* The starts these ends allow go into the same transaction: one commit for
                 * both, then the launches. */
                if (d->jobs.sched_dirty)
                        gw_schedule(d);
                gw_jobs_batch_end(d);
                /* Resumed connections (a cancel that waited, an event stream) need a run even
                 * when the server's fd did not fire; an iteration of job ends alone needs none
                 * (two epoll_waits saved per job on a busy queue). */
                for (int i = 0; i < 2; i++)
                        if (d->loop.http[i] && (http_fired[i] || gw_http_due(d->loop.http[i])))
                                gw_http_run(d->loop.http[i]);
                gw_jobs_bury(d);
                if (d->loop.big_reply) {
                        /* glibc keeps freed heap for reuse; a daemon that answered one large
                         * listing should not hold that peak forever. */
                        d->loop.big_reply = false;
                        (void) malloc_trim(0);
                }
        }
        gw_jobs_bury(d);
}

static void shutdown_daemon(struct gw_daemon *d) {
        gw_publish_close(d); /* its outcome is an event, told like any */
        gw_lifecycle_close(d); /* what is written from now on is told to no one */
        gw_events_close(d);
        for (int i = 0; i < 2; i++)
                d->loop.http[i] = gw_http_stop(d->loop.http[i]);
        gw_train_restore_free_all(d); /* their helpers finish on their own */
        gw_backup_close(d);
        gw_events_free(d);
        gw_notify_close(d->notify);
        d->notify = NULL;
        if (d->loop.socket_bound) /* never the socket of the daemon that made this one give up */
                (void) unlink(d->cfg->socket);
        gw_jobs_unwritten_close(d);
        for (size_t i = 0; i < d->jobs.map.cap; i++) {
                struct gw_djob *dj = d->jobs.map.slots[i];
                if (dj && (uintptr_t) dj != 1)
                        gw_djob_free(d, dj);
        }
        gw_jobmap_free(&d->jobs.map);
        gw_cache_close(d); /* after the jobs: each let go of its entry */
        gw_scratch_close(d);
        free(d->jobs.queue);
        free(d->jobs.running);
        free(d->jobs.to_launch);
        gw_observe_stop(d);
        gw_gpus_close(d);
        gw_sharing_close(d);
        d->nodes = gw_nodes_free(d->nodes);
        gw_fair_close(d);
        gw_userdb_free(d->users);
        d->store = gw_store_close(d->store);
        if (d->exec)
                d->exec->close(d);
        if (d->loop.sigfd >= 0)
                (void) close(d->loop.sigfd);
        if (d->loop.lock_fd >= 0)
                (void) close(d->loop.lock_fd); /* last: the state is closed, another daemon may have it */
        if (d->loop.epfd >= 0)
                (void) close(d->loop.epfd);
}

static bool is_check_config(const char *arg) {
        return !strncmp(arg, "--check-config", 14) && (!arg[14] || arg[14] == '=');
}

/* gpuwardd --check-config [FILE] (or --check-config=FILE): the config alone, read and judged
 * before anything else happens.  -1 when not asked for, else the exit status. */
static int check_config(int argc, char **argv) {
        bool asked = false;
        for (int i = 1; i < argc; i++)
                asked = asked || is_check_config(argv[i]);
        if (!asked)
                return -1;
        bool first = is_check_config(argv[1]), inline_file = first && argv[1][14] == '=';
        const char *file = inline_file ? argv[1] + 15 : argc > 2 ? argv[2] : NULL;
        if (!first || argc > (inline_file ? 2 : 3) || (file && (!file[0] || file[0] == '-'))) {
                fputs("gpuwardd: error: --check-config takes one FILE at most, and no other option\n"
                      "Try 'gpuwardd --help'.\n",
                      stderr);
                return 2;
        }
        return gw_config_check(file);
}

int main(int argc, char **argv) {
        const char *helper = gw_helper_kind(argc, argv); /* a helper of the daemon's, in its own image */
        if (helper) {
                int r = gw_cache_helper_main(helper);
                r = r >= 0 ? r : gw_scratch_helper_main(helper);
                return r >= 0 ? r : 2;
        }
        int r = gw_stage_run_main(argc, argv); /* a Slurm job's dataset step (stage_run.c) */
        if (r >= 0)
                return r;
        r = gw_scratch_step_main(argc, argv); /* a Slurm job's --scratch step (scratch_step.c) */
        if (r >= 0)
                return r;
        r = gw_agent_main(argc, argv); /* a node agent: none of the daemon below */
        if (r >= 0)
                return r;
        r = check_config(argc, argv);
        if (r >= 0)
                return r;
        struct gw_config cfg;
        r = gw_config_load(&cfg, argc, argv);
        if (r != 0) {
                gw_config_done(&cfg);
                return r > 0 ? 0 : 2;
        }
        gw_log_set_level(cfg.debug ? GW_LOG_DEBUG : GW_LOG_INFO);
        /* The loop's thread only: the threads and helpers made later get the default back. */
        (void) gw_latency_short_slice();
        struct gw_daemon d = { .cfg = &cfg, .loop = { .epfd = -1, .sigfd = -1, .lock_fd = -1, .euid = geteuid() } };
        char err[512];
        int rc = 1;
        gw_lifecycle_subscribe_features(&d.hooks); /* before anything can start or end a job */
        d.users = gw_userdb_new(NULL);
        if (!d.users || setup_dirs(&d) < 0 || gw_backend_open(&d) < 0)
                goto out;
        d.exec->ended = gw_exec_attempt_end; /* the executor tells the job code each end */
        /* Before any other thread: libcurl's global set-up wants to be alone. */
        d.notify = gw_notify_open(&cfg);
        if (gw_store_open(cfg.state_dir, &d.store, err, sizeof err) < 0) {
                log_err("state: %s", err);
                goto out;
        }
        if (gw_store_checkpoint_in_background(d.store, err, sizeof err) < 0)
                log_warn("state: %s; checkpoints stay inside commits", err);
        gw_lifecycle_open(&d);
        (void) gw_events_open(&d);
        d.loop.epfd = epoll_create1(EPOLL_CLOEXEC);
        if (d.loop.epfd < 0 || setup_signals(&d) < 0 || gw_gpus_open(&d) < 0)
                goto out;
        gw_daemon_clock_read(&d);
        if (gw_sharing_open(&d) < 0) {
                log_err("cannot load bookings and quotas: %s", gw_store_errmsg(d.store));
                goto out;
        }
        if (gw_cache_open(&d) < 0)
                goto out;
        if (gw_scratch_open(&d) < 0)
                goto out;
        if (gw_fair_open(&d) < 0) {
                log_err("cannot read the usage for fair share: %s", gw_store_errmsg(d.store));
                goto out;
        }
        if (gw_jobs_recover(&d) < 0) {
                log_err("cannot load jobs from the state database: %s", gw_store_errmsg(d.store));
                goto out;
        }
        if (gw_observe_start(&d) < 0 || setup_http(&d) < 0)
                goto out;
        if (d.exec->serve)
                d.exec->serve(&d);
        log_info("ready: state %s, socket %s%s%s, %u GPU%s, %zu job%s queued, %zu running", cfg.state_dir, cfg.socket,
                 d.loop.tcp_addr[0] ? ", http://" : "", d.loop.tcp_addr, d.host.n_gpus, d.host.n_gpus == 1 ? "" : "s",
                 d.jobs.n_queue, d.jobs.n_queue == 1 ? "" : "s", d.jobs.n_running);
        notify_ready();
        d.jobs.sched_dirty = true;
        run_loop(&d);
        rc = 0;
out:
        shutdown_daemon(&d);
        gw_config_done(&cfg);
        return rc;
}
