/* NVML off the event loop: a sampler thread takes a snapshot of every GPU each interval and
 * an event thread waits for Xid/ECC events; both hand their results to the loop through a
 * mutex-protected slot and an eventfd.  No lock is held across an NVML call. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"
#include "gpu/gpu.h"

struct gw_gpu_snapshot {
        struct gw_gpu_sample sample;
        struct gw_gpu_proc *procs;
        size_t n_procs;
        int procs_error; /* < 0 when the process list could not be read */
        struct gw_gpu_mig_layout *mig; /* NULL: whole (MIG off, unsupported or unreadable) */
};

struct gw_snapshot {
        gw_usec_t taken; /* wall clock */
        /* For /metrics: what sampling costs.  nvml_usec: how long this snapshot's NVML calls
         * took (monotonic, every GPU); sampler_cpu_usec: CPU time of the sampler thread up to
         * it (0 for a snapshot taken on another thread). */
        gw_usec_t nvml_usec, sampler_cpu_usec;
        unsigned n_gpus;
        struct gw_gpu_snapshot gpu[];
};

struct gw_snapshot *gw_snapshot_free(struct gw_snapshot *s);
/* Samples every GPU now, in the calling thread. */
struct gw_snapshot *gw_snapshot_take(struct gw_gpu_lib *lib, unsigned n_gpus);

struct gw_sampler;

#define GW_SAMPLER_MAX_GPUS 64 /* a probe's mask has one bit per GPU */

/* Starts both threads.  *ret_fd becomes readable (eventfd) when a snapshot or events wait. */
int gw_sampler_start(struct gw_gpu_lib *lib, unsigned n_gpus, gw_usec_t interval, struct gw_sampler **ret, int *ret_fd);
/* Stops and joins the threads; accepts NULL; returns NULL. */
struct gw_sampler *gw_sampler_stop(struct gw_sampler *s);
/* Takes the newest snapshot (NULL if none since the last call); caller frees it. */
struct gw_snapshot *gw_sampler_take(struct gw_sampler *s);
/* Takes the events received since the last call (at most max); returns how many. */
size_t gw_sampler_events(struct gw_sampler *s, struct gw_nvml_event *out, size_t max);
/* Clears the eventfd. */
void gw_sampler_ack(struct gw_sampler *s);
/* A fresh sample of the GPUs in mask, read on the sampler's thread as soon as it is between
 * two NVML calls, for a decision that must not rest on a sample up to an interval old.  Blocks
 * the caller for at most bound, and not at all while an earlier probe is still unanswered
 * (NVML hangs: every failed job would stall the loop in turn).  0 with ret[i] written for each GPU i in mask (ret has room
 * for every GPU); -ETIMEDOUT when no answer came in time (ret untouched); -EINVAL for an
 * empty mask. */
int gw_sampler_probe(struct gw_sampler *s, uint64_t mask, gw_usec_t bound, struct gw_gpu_sample *ret);
