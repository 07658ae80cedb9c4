/* gpuward run's side of an interactive session: the user's terminal in raw mode, relayed to
 * the job's terminal through its supervisor's socket (src/shim/tty.h; frames of
 * base/ttyframe.h one way, the terminal's bytes the other). */
#pragma once
#include <stdbool.h>

enum cli_relay_end {
        CLI_RELAY_SESSION_ENDED, /* the supervisor closed the session: the job has ended */
        CLI_RELAY_HUNG_UP, /* our terminal went away (or SIGHUP, SIGTERM): the job is hung up */
        CLI_RELAY_FAILED, /* the socket failed */
};

/* Connects to the session's socket: a connected fd, or -errno. */
int cli_relay_connect(const char *path);
/* Relays stdin to fd and fd to stdout until one side ends; stdin in raw mode while it is a
 * terminal, given back as it was on every way out.  Takes fd (closes it). */
enum cli_relay_end cli_relay(int fd);
/* The signal that ended the relay (SIGHUP, SIGTERM), 0 if none: the CLI's exit says it. */
int cli_relay_signal(void);
