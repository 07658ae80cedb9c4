/* gpuward's own processes on a busy host: each step of a job's start and end (the supervisor
 * woken by the job's exit, the daemon by the supervisor, the supervisor by the daemon's start)
 * waits for a CPU that the jobs themselves keep busy. */
#pragma once

/* Asks the scheduler to run the calling thread soon after it wakes: a short request slice
 * (Linux's EEVDF scheduler, 6.12 and later, sched_attr.sched_runtime for SCHED_OTHER; an older
 * kernel ignores it), which gives it no larger share of the CPU.  Its nice value is kept; the
 * processes and threads it makes later get the default back (SCHED_FLAG_RESET_ON_FORK), so
 * jobs never inherit it.  Only under SCHED_OTHER: a policy an admin chose stays.  0, or
 * -errno (the caller goes on without it). */
int gw_latency_short_slice(void);
