/* The daemon's side of the resident launcher (`gpuward-shim --server`, src/shim/shim.h): one
 * long-lived process, spawned once, that forks a job's supervisor on request.  A start then
 * costs one datagram each way instead of a spawn and an exec of the shim, which on a small
 * host is most of the time between one job's end and the next one's start.  When the
 * launcher is missing or fails, starts fall back to spawning (launcher.h), and it is
 * restarted later. */
#pragma once
#include <stdbool.h>
#include <sys/types.h>

struct gw_launch_server;

/* Spawns the launcher; NULL (with the reason in err) when it cannot. */
struct gw_launch_server *gw_launch_server_open(const char *exits_path, char *err, size_t errlen);
/* Closes the socket (the launcher exits; the supervisors it forked live on). */
struct gw_launch_server *gw_launch_server_close(struct gw_launch_server *s);
/* Asks it to fork a supervisor with this argv and environment and report_fd as its fd 3:
 * 0 with the supervisor's pid and pidfd; -EINPROGRESS when the launcher died before
 * answering (a supervisor may or may not exist: see gw_launch_start); else -errno, and
 * nothing was started. */
int gw_launch_server_start(struct gw_launch_server *s, char *const *argv, char *const *envp, int report_fd,
                           pid_t *ret_pid, int *ret_pidfd);
/* The daemon reaped pid: if it was the launcher, it is gone (restarted on a later start). */
void gw_launch_server_reaped(struct gw_launch_server *s, pid_t pid);
