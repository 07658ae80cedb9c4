#include "base/latency.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel's struct sched_attr (its first version, 48 bytes): <linux/sched/types.h> clashes
 * with the C library's <sched.h>. */
struct sched_attr_v0 {
        uint32_t size, sched_policy;
        uint64_t sched_flags;
        int32_t sched_nice;
        uint32_t sched_priority;
        uint64_t sched_runtime, sched_deadline, sched_period;
};
#define FLAG_RESET_ON_FORK 0x01

/* The kernel's floor for a request slice: its default is 0.75 ms times a factor of the CPU
 * count, as long as a job's step takes here several times over. */
#define SHORT_SLICE_NS (100 * 1000)

int gw_latency_short_slice(void) {
        /* A policy an admin chose (chrt: real time, batch, idle) stays as it is. */
        if (sched_getscheduler(0) != SCHED_OTHER)
                return -EPERM;
        errno = 0;
        int nice = getpriority(PRIO_PROCESS, 0); /* this thread's */
        if (nice == -1 && errno)
                return -errno;
        struct sched_attr_v0 a = {
                .size = sizeof a,
                .sched_policy = SCHED_OTHER,
                .sched_flags = FLAG_RESET_ON_FORK,
                .sched_nice = nice,
                .sched_runtime = SHORT_SLICE_NS,
        };
        return syscall(SYS_sched_setattr, 0, &a, 0) < 0 ? -errno : 0;
}
