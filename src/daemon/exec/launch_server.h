/* The daemon's side of the resident launcher (`gpuward-shim --server`, src/shim/shim.h): one
 * long-lived process, spawned once, that forks a job's supervisor on request.  A start then
 * costs one datagram each way instead of a spawn and an exec of the shim, which on a small
 * host is most of the time between one job's end and the next one's start.  When the
 * launcher is missing or fails, starts fall back to spawning (launcher.h), and it is
 * restarted later. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct gw_launch_server;

/* Spawns the launcher; NULL (with the reason in err) when it cannot. */
struct gw_launch_server *gw_launch_server_open(const char *exits_path, char *err, size_t errlen);
/* Closes the socket (the launcher exits; the supervisors it forked live on). */
struct gw_launch_server *gw_launch_server_close(struct gw_launch_server *s);
/* Asks it to fork a supervisor for this request datagram (gw_launch_request_encode) with
 * report_fd as its fd 3, without waiting for the answer (gw_launch_server_next hands it back):
 * 0 sent, and the request is now the server's; else -errno, nothing was started and the
 * request is still the caller's (-ENOTCONN: the launcher is down). */
int gw_launch_server_send(struct gw_launch_server *s, char *request, size_t len, int report_fd, int64_t job_id,
                          int attempt);
/* Reads the answers that have arrived (when the socket is readable, or to check). */
void gw_launch_server_poll(struct gw_launch_server *s);

/* A request's outcome, in the order they were sent.  pid > 0 with pidfd: the supervisor;
 * pid < 0: -errno, nothing was started; lost: the launcher died first, and a supervisor may
 * or may not exist (gw_launch_recover).  The request datagram is the caller's to free. */
struct gw_launch_answer {
        int64_t job_id;
        int attempt;
        bool lost;
        pid_t pid;
        int pidfd;
        int chan; /* pid > 0: the daemon's end of its channel (warm.h), or -1 */
        char *request;
        size_t len;
};
bool gw_launch_server_next(struct gw_launch_server *s, struct gw_launch_answer *ret);
/* Whether some request awaits its answer; the socket answers arrive on (-1 while down: it
 * changes when the launcher is restarted). */
bool gw_launch_server_waiting(const struct gw_launch_server *s);
int gw_launch_server_fd(const struct gw_launch_server *s);
/* The request datagram (shim.h) in a fresh buffer; NULL when too large for one. */
char *gw_launch_request_encode(char *const *argv, char *const *envp, size_t *ret_len);
/* A request's argv and environment again, pointing into buf (the arrays are malloc'ed). */
int gw_launch_request_decode(char *buf, size_t len, char ***ret_argv, char ***ret_envp);
/* The daemon reaped pid: if it was the launcher, it is gone (restarted on a later start). */
void gw_launch_server_reaped(struct gw_launch_server *s, pid_t pid);
