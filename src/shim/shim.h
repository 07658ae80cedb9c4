/* gpuward-shim: the supervisor of job attempts, started by gpuwardd only.
 *
 *   gpuward-shim --job ID --attempt N --exits FILE --log FILE [--log-private]
 *                [--user UID:GID --groups G1,G2,...] --cwd DIR [--cgroup DIR] -- COMMAND [ARGS...]
 *     supervises one attempt (shim_supervise); its environment is the job's, fd 3 the pipe
 *     on which it reports the job's pid.
 *
 *   gpuward-shim --server --exits FILE --title-space PADDING
 *     the daemon's resident launcher (shim_serve): reads launch requests on the SOCK_SEQPACKET
 *     socket at fd 3 and forks a supervisor for each, so a job start costs the daemon one
 *     message and the host one fork of a small static process instead of a spawn and an exec.
 *     A supervisor it forked keeps a channel to it (fd 4): when its job has ended (the exit
 *     recorded, the report pipe closed) it waits there for the next job, and a request naming
 *     it (the serial the launcher answered with) is handed to it instead of forking another.
 *     The daemon names only supervisors whose attempt it has seen end, so a supervisor runs one
 *     job at a time and nothing meant for an earlier job reaches a later one.  A supervisor
 *     rewrites its command line to "gpuward-shim --job ID --attempt N --exits FILE" (the
 *     PADDING argument reserves the room), "--idle --exits FILE" between jobs; the first is how a
 *     restarted daemon finds it (src/daemon/proc.c).  The server ends when the daemon closes
 *     the socket; then the idle supervisors end, the busy ones when their job does.
 *
 * Request (one datagram): "GWS2", uint32 argc, uint32 envc, uint64 serial of the idle
 * supervisor to use (0: fork one), then argc + envc NUL-terminated strings (the supervisor's
 * argv as above, then its environment), with the report pipe's write end attached
 * (SCM_RIGHTS).  Reply: struct shim_reply (pid or -errno, and the serial to name this
 * supervisor by later, 0 when it cannot be reused), with a pidfd of the supervisor attached
 * when pid > 0.  "GWR2", uint64 serial (no descriptor, no reply): the daemon will not use
 * that supervisor again; it ends.
 *
 * It is linked statically and looks up no user database (the daemon passes the groups). */
#pragma once
#include <stdint.h>

#define SHIM_REPORT_FD 3
#define SHIM_CHANNEL_FD 4
#define SHIM_MAGIC "GWS2"
#define SHIM_RETIRE_MAGIC "GWR2"
#define SHIM_HEADER_LEN 20
#define SHIM_REQUEST_MAX (128 * 1024)

struct shim_reply {
        int32_t pid;
        uint32_t reserved;
        uint64_t serial;
};

int shim_supervise(int argc, char **argv);
int shim_serve(int argc, char **argv);
