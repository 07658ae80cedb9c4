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
 *     A supervisor it forks gets a channel (fd 4) whose other end goes to the daemon with the
 *     answer: when its job has ended (the exit recorded, the report pipe closed) the
 *     supervisor waits there, and the daemon sends it its next job directly, in the same
 *     request format, instead of asking the launcher for another fork.  The daemon sends only
 *     to supervisors whose attempt it has seen end, so a supervisor runs one job at a time and
 *     nothing meant for an earlier job reaches a later one.  A supervisor rewrites its command
 *     line to "gpuward-shim --job ID --attempt N --exits FILE" (the PADDING argument reserves
 *     the room), "--idle --exits FILE" between jobs; the first is how a restarted daemon finds
 *     it (src/daemon/exec/proc.c).  An idle supervisor ends when the daemon closes its end of the
 *     channel (unused for a while, or the daemon gone); the server ends when the daemon
 *     closes the socket, and the supervisors it started live on.
 *
 * Request (one datagram): "GWS3", uint32 argc, uint32 envc, then argc + envc NUL-terminated
 * strings (the supervisor's argv as above, then its environment), with the report pipe's
 * write end attached (SCM_RIGHTS).  The launcher's answer: int32 pid (or -errno), with the
 * supervisor's pidfd and the daemon's end of its channel attached when pid > 0 (the channel
 * may be missing: the supervisor then ends with its job).
 *
 * It is linked statically and looks up no user database (the daemon passes the groups). */
#pragma once
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#define SHIM_REPORT_FD 3
#define SHIM_CHANNEL_FD 4
#define SHIM_MAGIC "GWS3"
#define SHIM_HEADER_LEN 12
#define SHIM_REQUEST_MAX (128 * 1024)
/* The report pipe carries the job's pid ("PID\n"), and before it, when the job could not be
 * set up, the reason ("gpuward: ...\n", at most this long).  The pid is told once the job has
 * run SHIM_PID_TELL_MS (at once for a session or a start that failed); a job that ends sooner
 * has it told with its end (only a job sent on a supervisor's channel: see shim_pid_may_wait).
 * Once the job has ended, its end goes to the exits journal as
 * "\nID ATTEMPT WAIT_STATUS WALL_US MONO_US[ PID]\n" (CLOCK_REALTIME and CLOCK_MONOTONIC right
 * after its wait, in microseconds; PID when still untold; older supervisors wrote the first
 * three fields only), and then the supervisor closes the pipe: the close tells the daemon to
 * read it there.  Only when the journal did not take it (a full disk) does the end go on the
 * pipe, before the close: "[PID\n]end WAIT_STATUS WALL_US MONO_US\n".  The daemon wakes for
 * every report: a job that ends at once wakes it once, at the close.  A signal for the whole
 * job reaches it before its pid is told through its cgroup or the supervisor's tree; one for
 * its main process alone finds none yet (ESRCH), as before the job's exec. */
#define SHIM_REPORT_LINE_MAX 1024
#define SHIM_PID_TELL_MS 20
#define SHIM_END_PREFIX "end "

/* A supervisor started with the job's environment (a request too large for one datagram)
 * starts as root: the C library would read the job's GLIBC_TUNABLES and MALLOC_ settings at
 * that start.  Such names are handed over held (with this prefix, which the daemon never lets
 * a user set) and given back, as the user, just before the job's exec. */
#define SHIM_HELD_PREFIX "GPUWARD_HELD_"

static inline bool shim_env_held_at_start(const char *entry) {
        /* Not *SAN_OPTIONS: a sanitizer build (tests only) must keep its strict settings. */
        static const char *const held[] = { "GLIBC_", "MALLOC_", "LD_" };
        for (size_t i = 0; i < sizeof held / sizeof held[0]; i++)
                if (!strncmp(entry, held[i], strlen(held[i])))
                        return true;
        return false;
}

int shim_supervise(int argc, char **argv);
/* Whether the next shim_supervise may tell its job's pid late (SHIM_PID_TELL_MS): only for a
 * job sent on the channel; a supervisor spawned, or just forked by the launcher, tells it at
 * once (see server.c).  False until set. */
void shim_pid_may_wait(bool may);
int shim_serve(int argc, char **argv);

/* How and when the job ended: its wait status, and the clocks right after its wait. */
struct shim_end {
        int status;
        long long wall_us, mono_us;
};
/* supervise.c: reaps what has exited; the job's end into *end (true) when it is among them,
 * and then what it left behind is killed. */
bool shim_reap_some(pid_t job, struct shim_end *end);
/* A signalfd for SIGCHLD, made (SIGCHLD blocked) by the supervisor's first job and kept for
 * the next ones; -1 when it could not be made (exits are then polled for).  The job's child
 * unblocks every signal before its exec. */
int shim_chld_fd(void);
/* How long output may go on coming once the job has exited and what it left is killed: only
 * a process outside the job's tree that was handed the pipe (or the terminal) can still write. */
#define OUTPUT_GRACE_MS 2000
int64_t shim_mono_ms(void);

/* A request's two counts, once its header and its final NUL are checked: -EBADMSG else.
 * Every string takes at least its NUL, so neither count exceeds the datagram's length. */
static inline int shim_request_counts(const char *buf, size_t len, uint32_t *ret_argc, uint32_t *ret_envc) {
        if (len <= SHIM_HEADER_LEN || memcmp(buf, SHIM_MAGIC, 4) || buf[len - 1] != '\0')
                return -EBADMSG;
        memcpy(ret_argc, buf + 4, 4);
        memcpy(ret_envc, buf + 8, 4);
        return (uint64_t) *ret_argc + *ret_envc <= len - SHIM_HEADER_LEN ? 0 : -EBADMSG;
}

/* Points argv[0..argc) and envp[0..envc) at the request's strings, in place; the callers'
 * arrays have room for the counts and a NULL after each.  Shared by the launcher, which
 * links no daemon code, and the daemon, which decodes its own requests again when the
 * launcher died before answering. */
static inline int shim_request_split(char *buf, size_t len, uint32_t argc, uint32_t envc, char **argv, char **envp) {
        char *p = buf + SHIM_HEADER_LEN, *end = buf + len;
        for (uint32_t i = 0; i < argc + envc; i++) {
                if (p >= end)
                        return -EBADMSG;
                if (i < argc)
                        argv[i] = p;
                else
                        envp[i - argc] = p;
                p += strlen(p) + 1;
        }
        argv[argc] = NULL;
        envp[envc] = NULL;
        return 0;
}
