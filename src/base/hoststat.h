/* The host's CPU, memory and per-process CPU time as the kernel's text files give them
 * (/proc/stat, /proc/meminfo, /proc/PID/stat), parsed from text the caller has read: no I/O
 * here, so every odd line a kernel may write is a unit test.  The daemon reads the files at
 * its sampler's tick (daemon/observe/hostwatch.c) and keeps the previous reading for the deltas. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The "cpu " line of /proc/stat, in clock ticks since boot. */
struct gw_cpu_ticks {
        uint64_t busy; /* user + nice + system + irq + softirq + steal */
        uint64_t total; /* busy + idle + iowait */
};

/* The aggregate "cpu " line of text (the whole of /proc/stat) into *ret, and the number of
 * "cpuN" lines into *ret_ncpu (may be NULL).  0, or -EINVAL when there is no such line or it
 * has fewer than the 4 fields every kernel writes. */
int gw_hoststat_parse_cpu(const char *text, struct gw_cpu_ticks *ret, unsigned *ret_ncpu);

/* Percent of all CPUs busy between two readings, 0-100; -1 when cur is not after prev (the
 * first reading, a counter that went back). */
double gw_hoststat_cpu_percent(const struct gw_cpu_ticks *prev, const struct gw_cpu_ticks *cur);

/* MemTotal and MemAvailable of /proc/meminfo's text, in bytes.  0, or -EINVAL when either is
 * missing (kernels before 3.14 have no MemAvailable: the page then says nothing, rather than
 * a guess from MemFree). */
int gw_hoststat_parse_meminfo(const char *text, uint64_t *ret_total, uint64_t *ret_available);

/* utime + stime (fields 14 and 15, clock ticks) of one /proc/PID/stat line.  The command name
 * in parentheses may hold spaces and ')': the fields are counted from the last ')'.  0, or
 * -EINVAL. */
int gw_hoststat_parse_pid_ticks(const char *line, uint64_t *ret);

/* A process's CPU use between two readings of its ticks, in percent of one CPU (a process on
 * 4 busy cores reads 400, as top shows it); -1 when there is no earlier reading or no time
 * passed.  ticks_per_sec: sysconf(_SC_CLK_TCK); dt_usec: the time between the readings. */
double gw_hoststat_proc_percent(uint64_t prev_ticks, uint64_t cur_ticks, long ticks_per_sec, int64_t dt_usec);
