/* The resident launcher (see shim.h): a supervisor forked per request; and a supervisor's
 * loop over the jobs the daemon sends it on its channel. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fdpass.h"
#include "base/latency.h"
#include "shim/shim.h"

#define SERVER_FD 3

extern char **environ;

struct request {
        int argc;
        char **argv;
        char **envp;
        int report_fd;
};

/* The bytes of the server's own arguments after argv[0]: the room a supervisor writes its
 * "--job ID --attempt N --exits FILE" into. */
static char *title_start, *title_end;

static void title_write(const char *const *parts, size_t n) {
        size_t room = (size_t) (title_end - title_start), used = 0;
        for (size_t i = 0; i < n; i++) {
                size_t l = strlen(parts[i]) + 1;
                if (used + l > room)
                        break; /* the daemon reserved enough; never overrun */
                memcpy(title_start + used, parts[i], l);
                used += l;
        }
        memset(title_start + used, 0, room - used);
}

static const char *arg_after(int argc, char **argv, const char *name) {
        for (int i = 1; i + 1 < argc; i++)
                if (!strcmp(argv[i], "--"))
                        return NULL;
                else if (!strcmp(argv[i], name))
                        return argv[i + 1];
        return NULL;
}

static void request_free(struct request *rq) {
        free(rq->argv);
        free(rq->envp);
        rq->argv = rq->envp = NULL;
        if (rq->report_fd >= 0)
                (void) close(rq->report_fd);
        rq->report_fd = -1;
}

/* Splits a request datagram; 0, or -EBADMSG when it is not one. */
static int request_parse(char *buf, size_t len, struct request *rq) {
        uint32_t argc, envc;
        if (shim_request_counts(buf, len, &argc, &envc) < 0 || argc < 2)
                return -EBADMSG;
        rq->argv = calloc((size_t) argc + 1, sizeof(char *));
        rq->envp = calloc((size_t) envc + 1, sizeof(char *));
        if (!rq->argv || !rq->envp)
                return -ENOMEM;
        rq->argc = (int) argc;
        return shim_request_split(buf, len, argc, envc, rq->argv, rq->envp);
}

/* One datagram from fd into buf (its length in *ret_len), with the descriptor it carried. */
static int receive(int fd, char *buf, size_t cap, size_t *ret_len, int *ret_fd) {
        union gw_fdpass_ctl ctl;
        struct iovec iov = { buf, cap };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        gw_fdpass_expect(&mh, &ctl);
        ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
        if (n <= 0)
                return n == 0 ? -EPIPE : -errno;
        *ret_fd = gw_fdpass_take(&mh);
        *ret_len = (size_t) n;
        return mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC) ? -EBADMSG : 0;
}

static int receive_request(int fd, char *buf, size_t cap, size_t *ret_len, struct request *rq) {
        int r = receive(fd, buf, cap, ret_len, &rq->report_fd);
        if (r < 0)
                return r;
        return rq->report_fd < 0 ? -EBADMSG : request_parse(buf, *ret_len, rq);
}

/* The answer: pid (or -errno), with the supervisor's pidfd and the daemon's end of its
 * channel (-1: none) attached. */
static void reply(int32_t pid, int pidfd, int chan) {
        union gw_fdpass_ctl ctl;
        struct iovec iov = { &pid, sizeof pid };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        int fds[2] = { pidfd, chan };
        if (pidfd >= 0)
                gw_fdpass_attach_n(&mh, &ctl, fds, chan >= 0 ? 2 : 1);
        (void) sendmsg(SERVER_FD, &mh, MSG_NOSIGNAL);
}

/* Moves fd to target, inheritable (the number may be free, and fd may already be it). */
static int fd_move(int fd, int target) {
        if (fd == target)
                return fcntl(fd, F_SETFD, 0);
        if (dup2(fd, target) < 0)
                return -1;
        (void) close(fd);
        return 0;
}

/* Takes the next request on the channel into the process (its fd 3, environment and title):
 * -1 when the daemon closed the channel (it will send nothing more, or it is gone). */
static int supervisor_next(char *buf, struct request *rq, const char *exits) {
        const char *idle[] = { "--idle", "--exits", exits };
        title_write(idle, 3);
        static char *no_environment[] = { NULL };
        environ = no_environment;
        request_free(rq);
        size_t len;
        for (;;) {
                int r = receive_request(SHIM_CHANNEL_FD, buf, SHIM_REQUEST_MAX, &len, rq);
                if (r == 0)
                        break;
                if (r != -EINTR && r != -EBADMSG && r != -ENOMEM)
                        return -1;
                request_free(rq);
        }
        int r = fd_move(rq->report_fd, SHIM_REPORT_FD);
        rq->report_fd = -1;
        return r;
}

/* In the forked child: become what a spawned supervisor would be, then supervise, and with a
 * channel go on with the jobs the daemon sends on it until it closes it. */
static _Noreturn void become_supervisor(char *buf, struct request *rq, int sigfd, int chan, const char *exits) {
        sigset_t none;
        sigemptyset(&none);
        (void) signal(SIGCHLD, SIG_DFL);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);
        (void) close(sigfd);
        (void) setsid();
        (void) gw_latency_short_slice(); /* the fork gave the default back */
        /* fd 3 is our copy of the server socket, 4 most likely the signalfd; both give way.
         * The pipe and the channel were received or made after them: above 4. */
        if (fd_move(rq->report_fd, SHIM_REPORT_FD) < 0 || (chan >= 0 && fd_move(chan, SHIM_CHANNEL_FD) < 0))
                _exit(127);
        rq->report_fd = -1;
        (void) close_range(chan >= 0 ? SHIM_CHANNEL_FD + 1 : SHIM_REPORT_FD + 1, ~0U, 0);
        /* The launcher's own job: were the launcher to die before its answer, the daemon learns
         * from the pid on the report pipe that this supervisor exists (an EOF without it means
         * none was forked), so that pid goes at once.  Jobs sent on the channel may wait. */
        bool from_channel = false;
        for (;;) {
                const char *job = arg_after(rq->argc, rq->argv, "--job");
                const char *attempt = arg_after(rq->argc, rq->argv, "--attempt");
                const char *parts[] = {
                        "--job", job ? job : "0", "--attempt", attempt ? attempt : "0", "--exits", exits
                };
                title_write(parts, 6);
                environ = rq->envp;
                shim_pid_may_wait(from_channel);
                int rc = shim_supervise(rq->argc, rq->argv);
                if (rc != 0 && chan >= 0) {
                        /* Not reused after a failure.  The channel closes first (an exit closes
                         * fd 3 before fd 4): a start the daemon sends here once it has seen the
                         * pipe close fails at once (EPIPE), rather than being lost. */
                        (void) close(SHIM_CHANNEL_FD);
                        chan = -1;
                }
                if (chan < 0 || supervisor_next(buf, rq, exits) < 0)
                        _exit(rc);
                from_channel = true;
        }
}

static void launch(char *buf, struct request *rq, int sigfd, const char *exits) {
        /* The channel's other end goes to the daemon, which sends this supervisor its next
         * jobs; without one (no socket to spare) the supervisor ends with its job. */
        int sv[2] = { -1, -1 };
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                sv[0] = sv[1] = -1;
        pid_t pid = fork();
        if (pid == 0)
                become_supervisor(buf, rq, sigfd, sv[1], exits);
        int err = errno;
        if (sv[1] >= 0)
                (void) close(sv[1]);
        /* Not reaped before this (we reap only on SIGCHLD, read after this): the pid cannot
         * have been reused. */
        int pidfd = pid > 0 ? (int) syscall(SYS_pidfd_open, pid, 0) : -1;
        if (pid > 0 && pidfd < 0)
                err = errno;
        reply(pidfd >= 0 ? (int32_t) pid : -err, pidfd, pidfd >= 0 ? sv[0] : -1);
        if (pidfd >= 0)
                (void) close(pidfd);
        if (sv[0] >= 0)
                (void) close(sv[0]);
}

static void reap(int sigfd) {
        struct signalfd_siginfo si;
        while (read(sigfd, &si, sizeof si) == sizeof si)
                ;
        while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
}

/* One request from the daemon; -1 when it is gone. */
static int serve_one(char *buf, int sigfd, const char *exits) {
        struct request rq = { .report_fd = -1 };
        size_t len = 0;
        int r = receive_request(SERVER_FD, buf, SHIM_REQUEST_MAX, &len, &rq);
        if (r < 0 && r != -EBADMSG && r != -ENOMEM)
                return -1; /* what we started lives on without us */
        if (r < 0)
                reply(r, -1, -1);
        else
                launch(buf, &rq, sigfd, exits);
        request_free(&rq);
        return 0;
}

int shim_serve(int argc, char **argv) {
        /* A copy: the supervisors write their titles over the arguments. */
        const char *arg = arg_after(argc, argv, "--exits");
        char *exits = arg ? strdup(arg) : NULL;
        if (!exits || argc < 3) {
                fprintf(stderr, "gpuward-shim: started by gpuwardd only (bad arguments)\n");
                return 2;
        }
        title_start = argv[1];
        title_end = argv[argc - 1] + strlen(argv[argc - 1]) + 1;
        (void) signal(SIGPIPE, SIG_IGN);
        sigset_t chld;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        (void) sigprocmask(SIG_BLOCK, &chld, NULL);
        int sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
        char *buf = malloc(SHIM_REQUEST_MAX);
        if (sigfd < 0 || !buf)
                return 1;
        for (;;) {
                struct pollfd p[2] = { { SERVER_FD, POLLIN, 0 }, { sigfd, POLLIN, 0 } };
                if (poll(p, 2, -1) < 0 && errno != EINTR)
                        break;
                if (p[1].revents)
                        reap(sigfd);
                if (p[0].revents && serve_one(buf, sigfd, exits) < 0)
                        break;
        }
        free(buf);
        free(exits);
        return 0;
}
