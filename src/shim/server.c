/* The resident launcher (see shim.h): one fork per job start, no exec. */
#include <errno.h>
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
#include "shim/shim.h"

#define SERVER_FD 3
#define MAX_STRINGS 65536

extern char **environ;

struct request {
        int argc;
        char **argv;
        char **envp;
        int report_fd;
};

/* The bytes of the server's own arguments after argv[0]: the room a forked supervisor
 * writes its "--job ID --attempt N --exits FILE" into. */
static char *title_start, *title_end;

static void title_set(const char *job, const char *attempt, const char *exits) {
        const char *parts[] = { "--job", job, "--attempt", attempt, "--exits", exits };
        size_t room = (size_t) (title_end - title_start), used = 0;
        for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
                size_t l = strlen(parts[i]) + 1;
                if (used + l > room)
                        return; /* the daemon reserved enough; never overrun */
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
        if (rq->report_fd >= 0)
                (void) close(rq->report_fd);
}

/* Splits a request datagram; 0, or -EBADMSG when it is not one. */
static int request_parse(char *buf, size_t len, struct request *rq) {
        uint32_t argc, envc;
        if (len < 12 || memcmp(buf, SHIM_MAGIC, 4))
                return -EBADMSG;
        memcpy(&argc, buf + 4, 4);
        memcpy(&envc, buf + 8, 4);
        if (argc < 2 || argc > MAX_STRINGS || envc > MAX_STRINGS || buf[len - 1] != '\0')
                return -EBADMSG;
        rq->argv = calloc((size_t) argc + 1, sizeof(char *));
        rq->envp = calloc((size_t) envc + 1, sizeof(char *));
        if (!rq->argv || !rq->envp)
                return -ENOMEM;
        char *p = buf + 12, *end = buf + len;
        for (uint32_t i = 0; i < argc + envc; i++) {
                if (p >= end)
                        return -EBADMSG;
                if (i < argc)
                        rq->argv[i] = p;
                else
                        rq->envp[i - argc] = p;
                p += strlen(p) + 1;
        }
        rq->argc = (int) argc;
        return 0;
}

static int receive(char *buf, size_t cap, struct request *rq) {
        union gw_fdpass_ctl ctl;
        struct iovec iov = { buf, cap };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        gw_fdpass_expect(&mh, &ctl);
        ssize_t n = recvmsg(SERVER_FD, &mh, MSG_CMSG_CLOEXEC);
        if (n <= 0)
                return n == 0 ? -EPIPE : -errno;
        rq->report_fd = gw_fdpass_take(&mh);
        if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC) || rq->report_fd < 0)
                return -EBADMSG;
        return request_parse(buf, (size_t) n, rq);
}

static void reply(int32_t pid, int pidfd) {
        union gw_fdpass_ctl ctl;
        struct iovec iov = { &pid, sizeof pid };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (pidfd >= 0)
                gw_fdpass_attach(&mh, &ctl, pidfd);
        (void) sendmsg(SERVER_FD, &mh, MSG_NOSIGNAL);
}

/* In the forked child: become what a spawned supervisor would be, then supervise. */
static _Noreturn void become_supervisor(struct request *rq, int sigfd, const char *exits) {
        sigset_t none;
        sigemptyset(&none);
        (void) signal(SIGCHLD, SIG_DFL);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);
        (void) close(sigfd);
        (void) setsid();
        if (dup2(rq->report_fd, SHIM_REPORT_FD) < 0)
                _exit(127);
        if (rq->report_fd != SHIM_REPORT_FD)
                (void) close(rq->report_fd);
        const char *job = arg_after(rq->argc, rq->argv, "--job");
        const char *attempt = arg_after(rq->argc, rq->argv, "--attempt");
        title_set(job ? job : "0", attempt ? attempt : "0", exits);
        environ = rq->envp;
        _exit(shim_supervise(rq->argc, rq->argv));
}

static void launch(struct request *rq, int sigfd, const char *exits) {
        pid_t pid = fork();
        if (pid == 0)
                become_supervisor(rq, sigfd, exits);
        if (pid < 0) {
                reply(-errno, -1);
                return;
        }
        /* Not reaped before this: the pid cannot have been reused. */
        int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        reply(pidfd >= 0 ? (int32_t) pid : -errno, pidfd);
        if (pidfd >= 0)
                (void) close(pidfd);
}

int shim_serve(int argc, char **argv) {
        /* A copy: the forked supervisors write their titles over the arguments. */
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
                if (p[1].revents) {
                        struct signalfd_siginfo si;
                        while (read(sigfd, &si, sizeof si) == sizeof si)
                                ;
                        while (waitpid(-1, NULL, WNOHANG) > 0)
                                ;
                }
                if (!p[0].revents)
                        continue;
                struct request rq = { .report_fd = -1 };
                int r = receive(buf, SHIM_REQUEST_MAX, &rq);
                if (r < 0 && r != -EBADMSG && r != -ENOMEM)
                        break; /* the daemon is gone: what we started lives on without us */
                if (r < 0)
                        reply(r, -1);
                else
                        launch(&rq, sigfd, exits);
                request_free(&rq);
        }
        free(buf);
        free(exits);
        return 0;
}
