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
 *     The forked supervisor rewrites its command line to "gpuward-shim --job ID --attempt N
 *     --exits FILE" (the PADDING argument reserves the room), which is how a restarted daemon
 *     finds it (src/daemon/proc.c).  The server ends when the daemon closes the socket; the
 *     supervisors it forked live on, like spawned ones.
 *
 * Request (one datagram): "GWS1", uint32 argc, uint32 envc, then argc + envc NUL-terminated
 * strings (the supervisor's argv as above, then its environment), with the report pipe's
 * write end attached (SCM_RIGHTS).  Reply: int32 pid (or -errno), with a pidfd of the
 * supervisor attached when pid > 0.
 *
 * It is linked statically and looks up no user database (the daemon passes the groups). */
#pragma once

#define SHIM_REPORT_FD 3
#define SHIM_MAGIC "GWS1"
#define SHIM_REQUEST_MAX (128 * 1024)

int shim_supervise(int argc, char **argv);
int shim_serve(int argc, char **argv);
