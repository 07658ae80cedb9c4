/* Every reason a waiting job cannot start now, not only the scheduler's.  Pure.
 *
 * The scheduler gives each waiting job one reason, the first it meets (held, backoff, a
 * quota or a booking, a dependency, GPUs); a job held back by two things showed only the
 * first, and its user fixed that one only to meet the next.  gw_sched_why reads the same
 * input as the plan, after it, for all of them; gw_why_list puts them into words, the
 * plan's own reason (the API's `reason`) first. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/job.h"
#include "core/sched.h"

#define GW_WHY_MAX 6 /* reasons listed at most, the main one included */
#define GW_WHY_TEXT 320 /* bytes of one reason's words, the NUL included */

/* A set of reasons: bit (1u << reason) for each. */
#define GW_WHY_BIT(r) (UINT32_C(1) << (r))

/* The same for a reason read from elsewhere (the store): 0 for one out of range. */
static inline uint32_t gw_why_bit(enum gw_job_reason r) { return r >= 0 && r < _GW_REASON_MAX ? GW_WHY_BIT(r) : 0; }

/* After gw_sched_plan (or _fair) of in gave plan: for each pending job i, every reason it
 * cannot start now into ret_bits[i], plan->reasons[i]'s included (0 for a job that
 * starts).  Read from the same input: held, backoff, blocked (its quota, its booking), an
 * unmet dependency, no GPU that bookings leave it, a GPU out of service without which it
 * can never fit (DRAINED), and RESOURCES when, whatever else holds it back, fewer GPUs than
 * it asks are free once the plan's starts took theirs.  The daemon tells a job held by its
 * array's %N (ARRAY_LIMIT) from a held one: that is not in in.  O(gpus + running + starts
 * + pending); ret_bits has room for in->n_pending.  Returns 0 or -EINVAL. */
int gw_sched_why(const struct gw_sched_input *in, const struct gw_sched_plan *plan, uint32_t *ret_bits);

/* One GPU as the words about GPUs out of service need it. */
struct gw_why_gpu {
        int index;
        bool usable; /* in service: healthy and not drained */
        bool drained; /* drained (by an admin or by gpuwardd); else, not usable, unhealthy */
        uint64_t mem_total; /* bytes, 0 = unknown (it fits any job) */
        const char *why; /* the drain's reason, NULL or "" = none given */
};

/* Why a job of ngpus GPUs (each with gpu_mem bytes, 0 = any) waits for GPUs out of
 * service, into buf: "needs 4 GPUs, 3 are in service: GPU 2 drained (fan noise (by ann))",
 * naming up to three of the GPUs that could take it.  NULL (buf untouched) when every GPU
 * it could use is in service. */
const char *gw_why_drained(int ngpus, uint64_t gpu_mem, const struct gw_why_gpu *gpus, size_t n, char *buf,
                           size_t size);

/* What the words of a job's reasons need besides the reasons. */
struct gw_why_facts {
        int ngpus;
        int priority;
        int64_t after_job; /* its dependency, 0 = none */
        bool after_ok; /* that job must complete, not just end */
        bool after_never; /* that job ended in a way that can never satisfy it */
        int64_t booking_id; /* its booking, 0 = none */
        const char *quota; /* the quota it waits on, in words ("Quota: max_gpus=1, ..."),
                                     * NULL = none */
        const char *preempted_by; /* who preempted it (PREEMPTED), NULL = not said */
        const char *drained; /* gw_why_drained's words, NULL = none */
        const char *slices; /* a job on MIG slices: what it waits for in their words
                                     * (gw_mig_wait_words), said for RESOURCES; NULL = none */
};

struct gw_why {
        enum gw_job_reason code;
        char text[GW_WHY_TEXT];
};

/* The reasons as a list into out (room for max): main first, whether or not bits has it,
 * then the others of bits in the order of enum gw_job_reason, at most max in all.  NONE is
 * never listed.  Returns how many were written. */
size_t gw_why_list(enum gw_job_reason main, uint32_t bits, const struct gw_why_facts *f, struct gw_why *out,
                   size_t max);
