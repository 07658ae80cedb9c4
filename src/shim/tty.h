/* An interactive job's terminal (gpuward run): the supervisor makes a pty, gives the job its
 * slave side as stdin, stdout, stderr and controlling terminal, and relays the master side to
 * one client on a Unix socket that only the job's user may use (the socket is theirs, mode
 * 0600, and each connection's SO_PEERCRED uid is checked).  Client to job: frames
 * (base/ttyframe.h); job to client: the terminal's bytes as they are, copied into the job's
 * log as well.  The client's leaving is the terminal closing: the job's process group gets
 * SIGHUP (and SIGCONT), and SIGKILL if it is still there SHIM_TTY_HANGUP_KILL_MS later; so is
 * no client at all within SHIM_TTY_CONNECT_MS of the start. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/ttyframe.h"
#include "shim/logcap.h"
#include "shim/shim.h"

#define SHIM_TTY_CONNECT_MS 60000
#define SHIM_TTY_HANGUP_KILL_MS 10000
/* Output from before the client came (a shell's first prompt), kept to be shown it: the
 * newest this many bytes. */
#define SHIM_TTY_EARLY_MAX (64 << 10)

struct shim_tty {
        int master, slave; /* -1: none */
        int listen_fd, conn; /* -1: none */
        const char *path; /* the socket's path, borrowed */
        uid_t uid; /* who may connect */
        bool had_client; /* a client came (and maybe left): no second one */
        int64_t connect_by; /* monotonic ms: hang up unless a client came by then */
        int64_t hangup_at; /* monotonic ms of the hangup, 0: none yet */
        struct gw_ttyframe_reader in;
        /* Input the terminal did not take yet (a job that does not read it: a notebook
         * server): the client is not read until it has, so nothing is lost and the relay
         * never blocks on the job. */
        uint8_t pend[GW_TTYFRAME_DATA_MAX];
        size_t pend_len;
        size_t early_len;
        uint8_t early[SHIM_TTY_EARLY_MAX];
};

/* Makes the pty (its slave owned by uid:gid when chown) and the socket at path (the user's,
 * 0600).  0, or -errno with the step that failed in *ret_what; t is cleaned up then. */
int shim_tty_open(struct shim_tty *t, const char *path, uid_t uid, gid_t gid, bool chown, const char **ret_what);
/* In the job's vforked child, a session leader: the slave becomes its controlling terminal
 * and its fds 0, 1 and 2.  0, or -errno. */
int shim_tty_attach(const struct shim_tty *t);
/* Relays until the job's output has ended (all its terminal's users gone) and, once the job
 * has exited, OUTPUT_GRACE_MS later at the latest; true when the job's exit was reaped here
 * (its end in *end).  The output goes into cap too. */
bool shim_tty_pump(struct shim_tty *t, struct logcap *cap, pid_t job, struct shim_end *end);
/* Closes everything (the client sees EOF: the session is over) and removes the socket. */
void shim_tty_close(struct shim_tty *t);
/* The fds the supervisor keeps open across its clean-up of inherited ones (-1: none). */
void shim_tty_fds(const struct shim_tty *t, int ret[2]);
