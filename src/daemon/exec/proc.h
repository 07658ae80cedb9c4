/* Processes through /proc: identity by pid *and* start time, trees under a subreaper. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Start time of pid in clock ticks since boot (/proc/PID/stat field 22). */
int gw_proc_start_time(pid_t pid, uint64_t *ret);
/* The value of a "KEY N" line of a counters file (/proc/vmstat, a cgroup's memory.events):
 * 0, -ENOENT (no such file or line), or -errno.  Read with one read(2) of at most 16 KiB, no
 * stdio: these run at job starts and ends. */
int gw_proc_counter(const char *path, const char *key, uint64_t *ret);
/* The same from such a file kept open (fd), read again from its start: a pooled cgroup's
 * cgroup.events at each end, /proc/vmstat at each start (there the open and close are ~2 µs
 * of the ~24 µs a read costs; the kernel's formatting of the whole file is the rest). */
int gw_proc_counter_fd(int fd, const char *key, uint64_t *ret);
/* The same in text (NUL-terminated). */
int gw_proc_counter_in(const char *text, const char *key, uint64_t *ret);
/* Whether pid is alive and is the same process that had start time start. */
bool gw_proc_is(pid_t pid, uint64_t start);
/* Sends sig to every descendant of root (not root itself), depth first from the top so a
 * parent cannot respawn a child it no longer runs.  Returns how many were signalled. */
int gw_proc_signal_descendants(pid_t root, int sig, pid_t skip_group);
struct gw_shim_ref {
        pid_t pid;
        int64_t job_id;
        int attempt;
};
/* Every running gpuward-shim of the daemon whose exits journal is exits, from
 * /proc/PID/cmdline ("gpuward-shim --job ID --attempt N --exits PATH ..."; an idle one,
 * "gpuward-shim --idle --exits PATH", with job_id 0).  Caller frees *ret. */
void gw_proc_find_shims(const char *exits, struct gw_shim_ref **ret, size_t *ret_n);

/* One child of pid (the job, for a shim), 0 if none. */
pid_t gw_proc_first_child(pid_t pid);
/* The parent of pid, or 0. */
pid_t gw_proc_parent(pid_t pid);
/* Whether root has any child. */
bool gw_proc_has_children(pid_t root);
