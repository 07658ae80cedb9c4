#include "daemon/exec/launch_server.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fdpass.h"
#include "base/log.h"
#include "daemon/exec/launcher.h"
#include "shim/shim.h"

/* After a failure, the launcher is tried again no sooner than this. */
#define RETRY_SECONDS 10
/* How long a request may wait to be taken by the launcher (it reads one at a time). */
#define SEND_TIMEOUT_MS 10000

extern char **environ;

/* A request sent and not yet handed back to the daemon.  Answers come in the order of the
 * requests (one socket, one launcher reading one at a time). */
struct waiting {
        int64_t job_id;
        int attempt;
        char *request; /* the datagram, kept for a spawn if the launcher dies first */
        size_t len;
        bool answered, lost;
        pid_t pid; /* answered: the supervisor, or -errno */
        int pidfd;
        int chan; /* answered: the daemon's end of the supervisor's channel, or -1 */
};

struct gw_launch_server {
        char exits_path[4200];
        int fd; /* -1: down */
        pid_t pid;
        time_t down_since;
        struct waiting *q; /* q[head..n) in request order */
        size_t head, n, cap;
};

static time_t mono_seconds(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec;
}

static int server_spawn(struct gw_launch_server *s, char *err, size_t errlen) {
        const char *shim = gw_launch_shim_path();
        if (!shim) {
                snprintf(err, errlen, "gpuward-shim not found beside gpuwardd");
                return -ENOENT;
        }
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                snprintf(err, errlen, "socketpair: %s", strerror(errno));
                return -errno;
        }
        /* No answer timeout: the launcher only forks, and if it dies the answer is EOF. */
        struct timeval tv = { SEND_TIMEOUT_MS / 1000, (SEND_TIMEOUT_MS % 1000) * 1000 };
        (void) setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        /* Room for a forked supervisor's "--job ID --attempt N" in place of "--server". */
        char space[97];
        memset(space, 'x', sizeof space - 1);
        space[sizeof space - 1] = '\0';
        char *argv[] = { (char *) shim, (char *) "--server",      (char *) "--exits",
                         s->exits_path, (char *) "--title-space", space,
                         NULL };
        int r = gw_launch_spawn(shim, argv, environ, sv[1], &s->pid);
        (void) close(sv[1]);
        if (r < 0) {
                (void) close(sv[0]);
                snprintf(err, errlen, "cannot start %s --server: %s", shim, strerror(-r));
                return r;
        }
        s->fd = sv[0];
        return 0;
}

struct gw_launch_server *gw_launch_server_open(const char *exits_path, char *err, size_t errlen) {
        struct gw_launch_server *s = gw_xcalloc(1, sizeof *s);
        snprintf(s->exits_path, sizeof s->exits_path, "%s", exits_path);
        s->fd = -1;
        if (server_spawn(s, err, errlen) < 0) {
                free(s);
                return NULL;
        }
        return s;
}

static void server_down(struct gw_launch_server *s, const char *why) {
        if (s->fd < 0)
                return;
        for (size_t i = s->head; i < s->n; i++)
                s->q[i].lost = !s->q[i].answered;
        log_warn("job launcher (pid %d) %s; starting jobs by spawning until it is back", (int) s->pid, why);
        (void) close(s->fd);
        s->fd = -1;
        /* A stuck launcher must not linger: it is our child, reaped on SIGCHLD. */
        if (s->pid > 0)
                (void) kill(s->pid, SIGKILL);
        s->pid = 0;
        s->down_since = mono_seconds();
}

struct gw_launch_server *gw_launch_server_close(struct gw_launch_server *s) {
        if (!s)
                return NULL;
        if (s->fd >= 0)
                (void) close(s->fd);
        /* Supervisors still unanswered live on: the next daemon finds them by their titles
         * (their channels close here: each ends after its job). */
        for (size_t i = s->head; i < s->n; i++) {
                free(s->q[i].request);
                if (s->q[i].pidfd >= 0)
                        (void) close(s->q[i].pidfd);
        }
        for (size_t i = s->head; i < s->n; i++)
                if (s->q[i].chan >= 0)
                        (void) close(s->q[i].chan);
        free(s->q);
        free(s);
        return NULL;
}

int gw_launch_server_fd(const struct gw_launch_server *s) { return s ? s->fd : -1; }

bool gw_launch_server_waiting(const struct gw_launch_server *s) { return s && s->head < s->n; }

void gw_launch_server_reaped(struct gw_launch_server *s, pid_t pid) {
        if (s && s->pid == pid) {
                s->pid = 0;
                server_down(s, "exited");
        }
}

char *gw_launch_request_encode(char *const *argv, char *const *envp, size_t *ret_len) {
        uint32_t counts[2] = { 0, 0 };
        size_t len = SHIM_HEADER_LEN;
        char *const *lists[2] = { argv, envp };
        for (int k = 0; k < 2; k++)
                for (size_t i = 0; lists[k] && lists[k][i]; i++, counts[k]++)
                        len += strlen(lists[k][i]) + 1;
        if (len > SHIM_REQUEST_MAX)
                return NULL;
        char *buf = gw_xmalloc(len), *p = buf + SHIM_HEADER_LEN;
        memcpy(buf, SHIM_MAGIC, 4);
        memcpy(buf + 4, &counts[0], 4);
        memcpy(buf + 8, &counts[1], 4);
        for (int k = 0; k < 2; k++)
                for (size_t i = 0; i < counts[k]; i++) {
                        size_t l = strlen(lists[k][i]) + 1;
                        memcpy(p, lists[k][i], l);
                        p += l;
                }
        *ret_len = len;
        return buf;
}

static int send_request(int fd, const char *buf, size_t len, int report_fd) {
        union gw_fdpass_ctl ctl;
        struct iovec iov = { (void *) buf, len };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        gw_fdpass_attach(&mh, &ctl, report_fd);
        ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);
        return n == (ssize_t) len ? 0 : n < 0 ? -errno : -EIO;
}

static int receive_answer(int fd, int32_t *ret_pid, int *ret_pidfd, int *ret_chan) {
        union gw_fdpass_ctl ctl;
        struct iovec iov = { ret_pid, sizeof *ret_pid };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        gw_fdpass_expect(&mh, &ctl);
        ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n < 0)
                return -errno;
        int fds[2];
        (void) gw_fdpass_take_n(&mh, fds, 2);
        if (n != (ssize_t) sizeof *ret_pid) {
                for (int i = 0; i < 2; i++)
                        if (fds[i] >= 0)
                                (void) close(fds[i]);
                return -EPIPE;
        }
        *ret_pidfd = fds[0];
        *ret_chan = fds[1];
        return 0;
}

/* Takes the answers that have arrived, in order, without waiting. */
static size_t first_unanswered(const struct gw_launch_server *s) {
        size_t i = s->head;
        while (i < s->n && s->q[i].answered)
                i++;
        return i;
}

static void read_answers(struct gw_launch_server *s) {
        /* Not once more than there are answers due: that read would only say EAGAIN. */
        while (s->fd >= 0 && first_unanswered(s) < s->n) {
                int32_t pid = 0;
                int pidfd = -1, chan = -1;
                int r = receive_answer(s->fd, &pid, &pidfd, &chan);
                if (r == -EAGAIN || r == -EINTR)
                        return;
                if (r < 0) {
                        server_down(s, "died while starting jobs");
                        return;
                }
                struct waiting *w = &s->q[first_unanswered(s)];
                w->answered = true;
                w->pid = pid > 0 && pidfd >= 0 ? (pid_t) pid : pid < 0 ? (pid_t) pid : -EIO;
                w->pidfd = w->pid > 0 ? pidfd : -1;
                w->chan = w->pid > 0 ? chan : -1;
                if (w->pid <= 0 && pidfd >= 0)
                        (void) close(pidfd);
                if (w->pid <= 0 && chan >= 0)
                        (void) close(chan);
        }
}

static void waiting_push(struct gw_launch_server *s, int64_t job_id, int attempt, char *request, size_t len) {
        if (s->head == s->n)
                s->head = s->n = 0;
        if (s->n == s->cap && s->head > 0) {
                memmove(s->q, s->q + s->head, (s->n - s->head) * sizeof *s->q);
                s->n -= s->head;
                s->head = 0;
        }
        if (s->n == s->cap) {
                s->cap = s->cap ? 2 * s->cap : 16;
                s->q = gw_xrealloc(s->q, s->cap * sizeof *s->q);
        }
        s->q[s->n++] = (struct waiting){ .job_id = job_id,
                                         .attempt = attempt,
                                         .request = request,
                                         .len = len,
                                         .pidfd = -1,
                                         .chan = -1 };
}

int gw_launch_server_send(struct gw_launch_server *s, char *request, size_t len, int report_fd, int64_t job_id,
                          int attempt) {
        if (s->fd < 0) {
                char err[256];
                if (mono_seconds() - s->down_since < RETRY_SECONDS)
                        return -ENOTCONN;
                if (server_spawn(s, err, sizeof err) < 0) {
                        s->down_since = mono_seconds();
                        log_warn("job launcher: %s", err);
                        return -ENOTCONN;
                }
                log_info("job launcher back (pid %d)", (int) s->pid);
        }
        /* Unread answers must not fill our socket while the launcher waits to send one. */
        read_answers(s);
        int r = s->fd >= 0 ? send_request(s->fd, request, len, report_fd) : -ENOTCONN;
        if (r < 0) {
                /* Not taken: nothing was started. */
                server_down(s, r == -EAGAIN ? "did not take a request in time" : "is gone");
                return r;
        }
        waiting_push(s, job_id, attempt, request, len);
        return 0;
}

void gw_launch_server_poll(struct gw_launch_server *s) {
        if (s)
                read_answers(s);
}

bool gw_launch_server_next(struct gw_launch_server *s, struct gw_launch_answer *ret) {
        if (!s || s->head == s->n || !(s->q[s->head].answered || s->q[s->head].lost))
                return false;
        struct waiting *w = &s->q[s->head++];
        *ret = (struct gw_launch_answer){ .job_id = w->job_id,
                                          .attempt = w->attempt,
                                          .lost = w->lost,
                                          .pid = w->pid,
                                          .pidfd = w->pidfd,
                                          .chan = w->chan,
                                          .request = w->request,
                                          .len = w->len };
        return true;
}

int gw_launch_request_decode(char *buf, size_t len, char ***ret_argv, char ***ret_envp) {
        uint32_t argc, envc;
        /* Ours, so never short of the shim and one argument; checked anyway (argv[0] is used). */
        if (shim_request_counts(buf, len, &argc, &envc) < 0 || argc < 2)
                return -EBADMSG;
        char **argv = gw_xcalloc((size_t) argc + 1, sizeof(char *)),
             **envp = gw_xcalloc((size_t) envc + 1, sizeof(char *));
        if (shim_request_split(buf, len, argc, envc, argv, envp) < 0) {
                free(argv);
                free(envp);
                return -EBADMSG;
        }
        *ret_argv = argv;
        *ret_envp = envp;
        return 0;
}
