/* The relay between the user's terminal and an interactive job's (ttyrelay.h).  Raw mode
 * sends every key to the job, Ctrl-C and Ctrl-Z included: the job's terminal turns them
 * into signals for the job, as a terminal of its own would. */
#include "cli/ttyrelay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "base/fdio.h"
#include "base/ttyframe.h"
#include "cli/cli.h"

static volatile sig_atomic_t got_winch, got_stop;
static struct termios saved;
static bool raw_on;

static void on_signal(int sig) {
        if (sig == SIGWINCH)
                got_winch = 1;
        else
                got_stop = sig;
}

int cli_relay_signal(void) { return got_stop; }

/* The terminal as it was: on the relay's end, and from atexit for any other way out. */
static void raw_off(void) {
        if (raw_on)
                (void) tcsetattr(STDIN_FILENO, TCSADRAIN, &saved);
        raw_on = false;
}

static void raw_mode(void) {
        if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved) < 0)
                return;
        static bool registered;
        if (!registered)
                (void) atexit(raw_off);
        registered = true;
        struct termios t = saved;
        cfmakeraw(&t);
        if (tcsetattr(STDIN_FILENO, TCSADRAIN, &t) == 0)
                raw_on = true;
}

int cli_relay_connect(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, strlen(path) + 1);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                int e = errno;
                (void) close(fd);
                return -e;
        }
        return fd;
}

/* Frames not sent yet: the socket is non-blocking, and while the job's terminal does not take
 * input (a notebook server never reads it) the keys wait here and stdin is not read, so the
 * relay keeps showing the job's output and hears SIGHUP instead of blocking in a write. */
static uint8_t out[2 * (GW_TTYFRAME_DATA_MAX + GW_TTYFRAME_HEADER)];
static size_t out_len;

/* Sends what it can of out.  -1: the session is gone. */
static int flush_out(int fd) {
        while (out_len) {
                ssize_t w = send(fd, out, out_len, MSG_NOSIGNAL);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0 && errno == EAGAIN)
                        return 0;
                if (w <= 0)
                        return -1;
                memmove(out, out + w, out_len - (size_t) w);
                out_len -= (size_t) w;
        }
        return 0;
}

/* The window size, queued when there is room (else it is sent at the next change). */
static int send_winsize(int fd) {
        struct winsize ws;
        if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0 || ws.ws_row == 0)
                return 0; /* not a terminal: the job keeps 24x80 */
        if (out_len + 7 > sizeof out)
                return 0;
        out_len += gw_ttyframe_winsize(out + out_len, ws.ws_row, ws.ws_col);
        return flush_out(fd);
}

/* Keys to the job, read only when nothing waits to be sent.  -1: no more (our terminal is
 * gone).  From a pipe or a file rather than a terminal, its end is sent as the terminal's
 * end-of-file key (Ctrl-D), so `echo ls | gpuward run -- sh` ends as typing it would.  After
 * a last line with no newline, one Ctrl-D only hands that line over (`printf hi | gpuward
 * run -- cat` hung so): a second is the end of file. */
static int from_user(int fd, bool *ret_eof) {
        static bool mid_line;
        uint8_t buf[GW_TTYFRAME_DATA_MAX];
        ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return 0;
        if (n <= 0) {
                *ret_eof = true;
                if (isatty(STDIN_FILENO))
                        return -1;
                n = mid_line ? 2 : 1;
                buf[0] = buf[1] = 4;
        }
        mid_line = buf[n - 1] != '\n' && buf[n - 1] != 4;
        out_len += gw_ttyframe_data(out + out_len, buf, (size_t) n);
        return flush_out(fd);
}

static void handle(int sig, void (*fn)(int), struct sigaction *old) {
        struct sigaction sa = { .sa_handler = fn };
        sigemptyset(&sa.sa_mask);
        (void) sigaction(sig, &sa, old);
}

enum cli_relay_end cli_relay(int fd) {
        static const int sigs[] = { SIGWINCH, SIGHUP, SIGTERM, SIGQUIT, SIGINT };
        struct sigaction old[5];
        struct sigaction old_pipe;
        for (size_t i = 0; i < 5; i++)
                handle(sigs[i], on_signal, &old[i]);
        handle(SIGPIPE, SIG_IGN, &old_pipe); /* a session that closed is an error to read, not death */
        raw_mode();
        enum cli_relay_end end = CLI_RELAY_FAILED;
        bool stdin_done = false;
        out_len = 0;
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || send_winsize(fd) < 0)
                goto out;
        for (;;) {
                if (got_stop) {
                        end = CLI_RELAY_HUNG_UP;
                        break;
                }
                if (got_winch) {
                        got_winch = 0;
                        if (send_winsize(fd) < 0)
                                break;
                }
                struct pollfd p[2] = { { fd, (short) (POLLIN | (out_len ? POLLOUT : 0)), 0 },
                                       { stdin_done || out_len ? -1 : STDIN_FILENO, POLLIN, 0 } };
                int r = poll(p, 2, -1);
                if (r < 0 && errno != EINTR)
                        break;
                if (r <= 0)
                        continue;
                if ((p[0].revents & POLLOUT) && flush_out(fd) < 0)
                        break;
                if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
                        char buf[16 << 10];
                        ssize_t n = read(fd, buf, sizeof buf);
                        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                                continue;
                        if (n <= 0) {
                                end = n == 0 ? CLI_RELAY_SESSION_ENDED : CLI_RELAY_FAILED;
                                break;
                        }
                        if (gw_write_all(STDOUT_FILENO, buf, (size_t) n) < 0) {
                                end = CLI_RELAY_HUNG_UP; /* our terminal is gone */
                                break;
                        }
                }
                if (p[1].revents && from_user(fd, &stdin_done) < 0) {
                        end = stdin_done ? CLI_RELAY_HUNG_UP : CLI_RELAY_FAILED;
                        break;
                }
        }
out:
        /* Closing it is the hangup when the job still runs (the supervisor sends SIGHUP). */
        (void) close(fd);
        raw_off();
        for (size_t i = 0; i < 5; i++)
                (void) sigaction(sigs[i], &old[i], NULL);
        (void) sigaction(SIGPIPE, &old_pipe, NULL);
        return end;
}
