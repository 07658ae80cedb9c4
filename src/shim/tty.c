/* An interactive job's terminal and its relay to the user's client (tty.h). */
#include "shim/tty.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "base/fdio.h"

static void close_fd(int *fd) {
        if (*fd >= 0)
                (void) close(*fd);
        *fd = -1;
}

static int open_pty(struct shim_tty *t, uid_t uid, gid_t gid, bool chown) {
        char name[128];
        t->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (t->master < 0 || grantpt(t->master) < 0 || unlockpt(t->master) < 0 ||
            ptsname_r(t->master, name, sizeof name) != 0)
                return -errno;
        t->slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (t->slave < 0)
                return -errno;
        /* The job's own terminal, as login would give it (tty(1), mesg, ssh-agent look). */
        if (chown && fchown(t->slave, uid, gid) < 0)
                return -errno;
        struct winsize ws = { .ws_row = 24, .ws_col = 80 };
        (void) ioctl(t->master, TIOCSWINSZ, &ws);
        /* The relay waits on poll, never on the job. */
        int fl = fcntl(t->master, F_GETFL);
        return fl >= 0 && fcntl(t->master, F_SETFL, fl | O_NONBLOCK) == 0 ? 0 : -errno;
}

/* The socket: bound under a temporary name with no access for anyone else (umask), given to
 * the user, listening, and only then renamed into place: a client never finds it half made
 * (root's, or not listening yet). */
static int open_socket(struct shim_tty *t, uid_t uid, gid_t gid, bool chown) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char final[sizeof sa.sun_path];
        int n = snprintf(sa.sun_path, sizeof sa.sun_path, "%s.new", t->path);
        if (n < 0 || (size_t) n >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        memcpy(final, t->path, strlen(t->path) + 1);
        char *slash = strrchr(final, '/');
        if (slash && slash != final) {
                *slash = '\0';
                if (mkdir(final, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *slash = '/';
        }
        (void) unlink(t->path); /* left by a supervisor that died */
        (void) unlink(sa.sun_path);
        t->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (t->listen_fd < 0)
                return -errno;
        mode_t old = umask(0177);
        int r = bind(t->listen_fd, (struct sockaddr *) &sa, sizeof sa);
        int e = errno;
        (void) umask(old);
        if (r < 0)
                return -e;
        if ((chown && lchown(sa.sun_path, uid, gid) < 0) || listen(t->listen_fd, 4) < 0 ||
            rename(sa.sun_path, t->path) < 0) {
                e = errno;
                (void) unlink(sa.sun_path);
                return -e;
        }
        return 0;
}

int shim_tty_open(struct shim_tty *t, const char *path, uid_t uid, gid_t gid, bool chown, const char **ret_what) {
        *t = (struct shim_tty){ .master = -1, .slave = -1, .listen_fd = -1, .conn = -1, .path = path, .uid = uid };
        t->connect_by = shim_mono_ms() + SHIM_TTY_CONNECT_MS;
        int r = open_pty(t, uid, gid, chown);
        if (r < 0) {
                *ret_what = "cannot make the session's terminal";
        } else if ((r = open_socket(t, uid, gid, chown)) < 0) {
                *ret_what = "cannot make the session's socket";
        }
        if (r < 0) {
                shim_tty_close(t);
                t->path = NULL;
        }
        return r;
}

/* Runs in the vfork()ed child: no stdio, no malloc. */
int shim_tty_attach(const struct shim_tty *t) {
        if (ioctl(t->slave, TIOCSCTTY, 0) < 0)
                return -errno;
        for (int fd = 0; fd < 3; fd++)
                if (dup2(t->slave, fd) < 0)
                        return -errno;
        return 0;
}

void shim_tty_fds(const struct shim_tty *t, int ret[2]) {
        ret[0] = t->master;
        ret[1] = t->listen_fd;
}

/* The terminal closed: what the kernel does on a hangup, to the job's process group (the job
 * is its session's leader: the group is its own). */
static void hang_up(struct shim_tty *t, pid_t job) {
        if (t->hangup_at)
                return;
        t->hangup_at = shim_mono_ms();
        (void) kill(-job, SIGHUP);
        (void) kill(-job, SIGCONT);
        close_fd(&t->conn);
}

/* A client knocks: the job's user, the first time only. */
static void accept_client(struct shim_tty *t) {
        int fd = accept4(t->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
                return;
        struct ucred cred;
        socklen_t len = sizeof cred;
        const char *refuse = NULL;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != t->uid)
                refuse = "gpuward: this session is not yours\r\n";
        else if (t->had_client || t->hangup_at)
                refuse = "gpuward: this session has had its terminal; it is not taken twice\r\n";
        if (refuse) {
                (void) !write(fd, refuse, strlen(refuse));
                (void) close(fd);
                return;
        }
        /* A client that stops reading for this long is taken for gone. */
        struct timeval tv = { 10, 0 };
        (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        t->conn = fd;
        t->had_client = true;
        if (t->early_len && gw_write_all(fd, t->early, t->early_len) < 0)
                close_fd(&t->conn);
        t->early_len = 0;
}

/* Output while no client has come yet: kept for it, the newest SHIM_TTY_EARLY_MAX bytes. */
static void keep_early(struct shim_tty *t, const uint8_t *p, size_t n) {
        if (n >= SHIM_TTY_EARLY_MAX) {
                p += n - SHIM_TTY_EARLY_MAX;
                n = SHIM_TTY_EARLY_MAX;
        }
        if (t->early_len + n > SHIM_TTY_EARLY_MAX) {
                size_t drop = t->early_len + n - SHIM_TTY_EARLY_MAX;
                memmove(t->early, t->early + drop, t->early_len - drop);
                t->early_len -= drop;
        }
        memcpy(t->early + t->early_len, p, n);
        t->early_len += n;
}

/* As much of p as the terminal takes now; the rest waits in t->pend.  The job gone (EIO):
 * its end is being reaped, and the input has nowhere to go. */
static void to_job(struct shim_tty *t, const uint8_t *p, size_t n) {
        while (n) {
                ssize_t w = write(t->master, p, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0 && errno == EAGAIN) {
                        memmove(t->pend, p, n); /* p may point into pend itself */
                        t->pend_len = n;
                        return;
                }
                if (w <= 0)
                        break;
                p += w;
                n -= (size_t) w;
        }
        t->pend_len = 0;
}

/* The input waiting, then the frames held, until the terminal takes no more.  -1: a
 * malformed frame (the client is dropped). */
static int feed_job(struct shim_tty *t) {
        if (t->pend_len)
                to_job(t, t->pend, t->pend_len);
        struct gw_ttyframe f;
        int r = 0;
        while (!t->pend_len && (r = gw_ttyframe_next(&t->in, &f)) == 1) {
                if (f.type == GW_TTYFRAME_DATA) {
                        to_job(t, f.data, f.len);
                } else {
                        struct winsize ws = { .ws_row = (unsigned short) f.rows, .ws_col = (unsigned short) f.cols };
                        (void) ioctl(t->master, TIOCSWINSZ, &ws);
                }
        }
        return r < 0 ? -1 : 0;
}

/* What the client sent: input for the terminal, its window size.  -1: the client is gone. */
static int from_client(struct shim_tty *t) {
        size_t room;
        uint8_t *at = gw_ttyframe_space(&t->in, &room);
        if (!room) /* a whole frame held (not read while input waited): that first */
                return feed_job(t);
        ssize_t n = read(t->conn, at, room);
        if (n < 0 && errno == EINTR)
                return 0;
        if (n <= 0)
                return -1;
        gw_ttyframe_filled(&t->in, (size_t) n);
        return feed_job(t);
}

/* The terminal's output: into the log, and to the client.  false: no more will come. */
static bool from_job(struct shim_tty *t, struct logcap *cap) {
        static uint8_t buf[16 << 10];
        ssize_t n = read(t->master, buf, sizeof buf);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return true;
        if (n <= 0) {
                t->pend_len = 0; /* input has nowhere to go */
                return false; /* EIO: nothing has the terminal open any more */
        }
        logcap_write(cap, (const char *) buf, (size_t) n);
        if (!t->had_client)
                keep_early(t, buf, (size_t) n);
        if (t->conn >= 0 && gw_write_all(t->conn, buf, (size_t) n) < 0)
                close_fd(&t->conn); /* gone, or not reading: the terminal closed */
        return true;
}

/* The next deadline (ms from now, -1 none) and what is due now. */
static int due(struct shim_tty *t, pid_t job, bool exited, int64_t until) {
        int64_t now = shim_mono_ms(), next = INT64_MAX;
        if (!exited && !t->had_client && !t->hangup_at) {
                if (now >= t->connect_by)
                        hang_up(t, job);
                else
                        next = t->connect_by;
        }
        if (!exited && t->had_client && t->conn < 0)
                hang_up(t, job);
        if (!exited && t->hangup_at) {
                int64_t kill_at = t->hangup_at + SHIM_TTY_HANGUP_KILL_MS;
                if (now >= kill_at) {
                        (void) kill(-job, SIGKILL);
                        (void) kill(job, SIGKILL);
                        t->hangup_at = now - SHIM_TTY_HANGUP_KILL_MS + 1000; /* again in a second */
                } else if (kill_at < next)
                        next = kill_at;
        }
        if (exited && until < next)
                next = until;
        return next == INT64_MAX ? -1 : next <= now ? 0 : (int) (next - now);
}

bool shim_tty_pump(struct shim_tty *t, struct logcap *cap, pid_t job, struct shim_end *end) {
        int sfd = shim_chld_fd();
        bool exited = false, output = true;
        int64_t until = 0;
        for (;;) {
                if (!exited && shim_reap_some(job, end)) {
                        exited = true;
                        until = shim_mono_ms() + OUTPUT_GRACE_MS;
                }
                if ((exited && (!output || shim_mono_ms() >= until)))
                        break;
                int wait = due(t, job, exited, until);
                /* Without a signalfd, exits are looked for every 100 ms. */
                if (sfd < 0 && (wait < 0 || wait > 100))
                        wait = 100;
                /* With input waiting for the terminal, the client is not read (its hangup still
                 * shows), and the terminal is watched for room. */
                short in = t->pend_len ? 0 : POLLIN;
                struct pollfd p[4] = { { sfd, POLLIN, 0 },
                                       { output ? t->master : -1, (short) (POLLIN | (t->pend_len ? POLLOUT : 0)), 0 },
                                       { t->listen_fd, POLLIN, 0 },
                                       { t->conn, in, 0 } };
                int r = poll(p, 4, wait);
                if (r < 0 && errno != EINTR)
                        break;
                if (r <= 0)
                        continue;
                if (p[0].revents) {
                        struct signalfd_siginfo si;
                        while (read(sfd, &si, sizeof si) == (ssize_t) sizeof si)
                                ;
                }
                if ((p[1].revents & POLLOUT) && t->pend_len && feed_job(t) < 0)
                        close_fd(&t->conn);
                if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) && output)
                        output = from_job(t, cap);
                if (p[2].revents)
                        accept_client(t);
                if ((p[3].revents & POLLIN) && t->conn >= 0 && from_client(t) < 0)
                        close_fd(&t->conn);
                else if ((p[3].revents & (POLLHUP | POLLERR)) && t->conn >= 0)
                        close_fd(&t->conn); /* gone while we waited on the job */
        }
        logcap_done(cap);
        return exited;
}

void shim_tty_close(struct shim_tty *t) {
        close_fd(&t->conn);
        close_fd(&t->listen_fd);
        close_fd(&t->master);
        close_fd(&t->slave);
        if (t->path)
                (void) unlink(t->path);
        t->in.len = t->in.used = 0;
        t->early_len = 0;
        t->pend_len = 0;
}
