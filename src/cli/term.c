/* The terminal as a full screen for `gpuward top` (see term.h). */
#include "cli/term.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fdio.h"
#include "cli/cli.h"
#include "cli/format.h"

/* Alternate screen on (xterm's 1049 also saves the cursor and the screen), cursor hidden;
 * and back.  Every terminal emulator in use today knows both. */
#define SEQ_ENTER "\x1b[?1049h\x1b[?25l"
#define SEQ_LEAVE "\x1b[?25h\x1b[?1049l"
#define SEQ_HOME "\x1b[H"
#define SEQ_CLEAR_LINE "\x1b[2K"
#define SEQ_CLEAR_BELOW "\x1b[J"

static const int handled[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGCONT, SIGTSTP };

static struct {
        bool open, atexit_done;
        int in_fd, out_fd; /* in_fd -1: not a terminal, keys are not ours to set up */
        struct termios saved, raw;
        int wake[2]; /* self-pipe: handlers write a byte, the loop polls the read end */
        struct sigaction old[ELEMENTSOF(handled)];
        /* Shared with the handlers. */
        volatile sig_atomic_t wanted; /* between open and close */
        volatile sig_atomic_t taken; /* the terminal is in our mode right now */
        volatile sig_atomic_t quit_signal, resized;
} term = { .in_fd = -1, .out_fd = -1, .wake = { -1, -1 } };

/* give_back and take run in signal handlers too: write() and tcsetattr() only, both
 * async-signal-safe. */
static void give_back(void) {
        if (!term.taken)
                return;
        term.taken = 0;
        ssize_t k = write(term.out_fd, SEQ_LEAVE, sizeof(SEQ_LEAVE) - 1);
        (void) k;
        if (term.in_fd >= 0)
                (void) tcsetattr(term.in_fd, TCSANOW, &term.saved);
}

static void take(void) {
        if (term.in_fd >= 0)
                (void) tcsetattr(term.in_fd, TCSANOW, &term.raw);
        ssize_t k = write(term.out_fd, SEQ_ENTER, sizeof(SEQ_ENTER) - 1);
        (void) k;
        term.taken = 1;
}

static void on_signal(int sig) {
        int saved_errno = errno;
        switch (sig) {
        case SIGWINCH:
        case SIGCONT:
                term.resized = 1;
                break;
        case SIGTSTP: {
                /* Ctrl-Z: the shell must get a sane terminal while we are stopped.  SIGSTOP
                 * cannot be caught, so we stop right here and go on below once resumed. */
                bool had = term.taken;
                give_back();
                (void) kill(getpid(), SIGSTOP);
                if (had && term.wanted)
                        take();
                term.resized = 1;
                break;
        }
        default:
                if (term.quit_signal) {
                        /* Asked twice: the loop did not get round to it (a daemon that does
                         * not answer holds it up to the call's timeout), so go now.  The
                         * signal is blocked in here; it kills us when the handler returns. */
                        give_back();
                        (void) signal(sig, SIG_DFL);
                        (void) raise(sig);
                        break;
                }
                term.quit_signal = sig;
        }
        ssize_t k = write(term.wake[1], "", 1);
        (void) k;
        errno = saved_errno;
}

static void restore_handlers(size_t n) {
        for (size_t i = 0; i < n; i++)
                (void) sigaction(handled[i], &term.old[i], NULL);
}

static void close_wake(void) {
        for (size_t i = 0; i < 2; i++)
                if (term.wake[i] >= 0) {
                        (void) close(term.wake[i]);
                        term.wake[i] = -1;
                }
}

static int install_handlers(void) {
        struct sigaction sa = { .sa_handler = on_signal };
        /* One handler at a time: the flags and the terminal are shared. */
        sigemptyset(&sa.sa_mask);
        for (size_t i = 0; i < ELEMENTSOF(handled); i++)
                sigaddset(&sa.sa_mask, handled[i]);
        for (size_t i = 0; i < ELEMENTSOF(handled); i++)
                if (sigaction(handled[i], &sa, &term.old[i]) < 0) {
                        int r = -errno;
                        restore_handlers(i);
                        return r;
                }
        return 0;
}

int cli_term_open(int in_fd, int out_fd, int *ret_wake_fd) {
        if (term.open)
                return -EBUSY;
        if (!isatty(out_fd))
                return -ENOTTY;
        term.out_fd = out_fd;
        term.in_fd = in_fd >= 0 && isatty(in_fd) ? in_fd : -1;
        if (term.in_fd >= 0) {
                if (tcgetattr(term.in_fd, &term.saved) < 0)
                        return -errno;
                term.raw = term.saved;
                /* Keys one at a time, unechoed; ISIG stays so Ctrl-C and Ctrl-Z work. */
                term.raw.c_lflag &= ~(tcflag_t) (ICANON | ECHO);
                term.raw.c_cc[VMIN] = 1;
                term.raw.c_cc[VTIME] = 0;
        }
        if (pipe2(term.wake, O_CLOEXEC | O_NONBLOCK) < 0) {
                int r = -errno;
                term.wake[0] = term.wake[1] = -1;
                return r;
        }
        if (!term.atexit_done) {
                if (atexit(cli_term_close) != 0) {
                        close_wake();
                        return -ENOMEM;
                }
                term.atexit_done = true;
        }
        term.quit_signal = term.resized = 0;
        int r = install_handlers();
        if (r < 0) {
                close_wake();
                return r;
        }
        term.open = true;
        term.wanted = 1;
        take();
        *ret_wake_fd = term.wake[0];
        return 0;
}

void cli_term_close(void) {
        if (!term.open)
                return;
        term.wanted = 0;
        give_back();
        /* Handlers first: a late one must not write to a descriptor number reused. */
        restore_handlers(ELEMENTSOF(handled));
        close_wake();
        term.open = false;
}

int cli_term_take_signals(bool *ret_resized) {
        sigset_t block, old;
        sigemptyset(&block);
        for (size_t i = 0; i < ELEMENTSOF(handled); i++)
                sigaddset(&block, handled[i]);
        /* Blocked, so that a signal between reading a flag and clearing it is not lost. */
        (void) sigprocmask(SIG_BLOCK, &block, &old);
        char buf[64];
        while (term.wake[0] >= 0 && read(term.wake[0], buf, sizeof(buf)) > 0)
                ;
        int sig = term.quit_signal;
        *ret_resized = term.resized;
        term.resized = 0;
        (void) sigprocmask(SIG_SETMASK, &old, NULL);
        return sig;
}

void cli_term_size(unsigned *ret_rows, unsigned *ret_cols) {
        struct winsize ws;
        int fd = term.out_fd >= 0 ? term.out_fd : STDOUT_FILENO;
        if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
                *ret_rows = ws.ws_row;
                *ret_cols = ws.ws_col;
        } else {
                *ret_rows = 24;
                *ret_cols = 80;
        }
}

/* Lines in text: '\n' ends a line, a last line needs none. */
static size_t count_lines(const char *text) {
        size_t n = 0;
        for (const char *p = text; *p; p++)
                if (*p == '\n' || !p[1])
                        n++;
        return n;
}

/* One screen line: cut to cols columns, control bytes (escape sequences!) made harmless. */
static void put_line(FILE *f, bool first, const char *s, size_t len, unsigned cols) {
        fputs(first ? SEQ_CLEAR_LINE : "\r\n" SEQ_CLEAR_LINE, f);
        size_t keep = cli_fit_bytes(s, len, cols);
        for (size_t i = 0; i < keep; i++)
                fputc((unsigned char) s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i], f);
}

char *cli_term_compose(const char *text, unsigned rows, unsigned cols) {
        struct cli_text t;
        if (cli_text_open(&t) < 0)
                return NULL;
        FILE *f = t.f;
        rows = rows > 0 ? rows : 1;
        size_t n = count_lines(text);
        size_t show = n <= rows ? n : rows - 1;
        fputs(SEQ_HOME, f);
        const char *p = text;
        for (size_t i = 0; i < show; i++) {
                size_t l = strcspn(p, "\n");
                put_line(f, i == 0, p, l, cols);
                p += l + (p[l] == '\n');
        }
        if (show < n) {
                char more[64];
                snprintf(more, sizeof(more), "(%zu more lines: enlarge the window)", n - show);
                put_line(f, show == 0, more, strlen(more), cols);
        } else if (show < rows) {
                /* Below the last line; never on the last column, where a pending wrap
                 * would make the clear eat the line's last character. */
                fputs(show == 0 ? SEQ_CLEAR_BELOW : "\r\n" SEQ_CLEAR_BELOW, f);
        }
        return cli_text_take(&t, true);
}

int cli_term_draw(const char *text, unsigned rows, unsigned cols) {
        _cleanup_free_ char *screen = cli_term_compose(text, rows, cols);
        if (!screen)
                return -ENOMEM;
        /* One write per frame: no half-drawn screen, no flicker. */
        return gw_write_all(term.out_fd, screen, strlen(screen));
}
