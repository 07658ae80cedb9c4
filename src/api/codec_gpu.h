/* GPUs and the processes on them as the API shows them (GET /api/v1/gpus, a drain's reply,
 * the dashboard's event stream).  The daemon keeps its GPUs in its own structs; it fills these
 * plain views, which borrow its strings, and codec_gpu.c's field tables encode them. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/jobrec.h"

struct gw_codec_proc {
        int pid;
        const char *user;
        const char *cmd; /* a detail (GW_VIEW_DETAILS): other users' arguments */
        uint64_t mem; /* UINT64_MAX: not known */
        int sm_util; /* < 0: not known */
        double cpu; /* percent of one CPU since the last sample; < 0: not known */
        int64_t job_id; /* 0: a process of no job */
        bool stray; /* its job's, on a GPU that job was not given */
};

/* One MIG device (slice) of a GPU in MIG mode. */
struct gw_codec_mig {
        const char *uuid; /* "MIG-..." */
        const char *profile; /* "1g.10gb"; "" or NULL: not known */
        int gi_id, ci_id; /* GPU / compute instance; < 0: not known */
        unsigned slices, max_slices; /* its slices of the GPU's; 0: not known */
        bool has_mem, has_procs; /* what NVML gave for it */
        int activity; /* GPM SM activity, percent, where the GPU offers GPM; < 0: none measured */
        uint64_t mem_total, mem_used;
        int64_t job_id; /* the job given it; 0: none */
        const struct gw_codec_proc *procs;
        size_t n_procs;
};

struct gw_codec_gpu {
        int index;
        const char *name, *uuid;
        uint64_t mem_total;
        /* The sample's values, each read only when its has_ bit says the driver gave it. */
        bool has_mem, has_util, has_temp, has_power;
        uint64_t mem_used;
        unsigned util, mem_util, temp_c, power_mw;
        const char *health; /* "ok", "drained", "lost" */
        const char *drain_reason; /* NULL: not drained */
        int64_t job_id; /* 0: none */
        const struct gw_job *job; /* the job on it, while the daemon runs it; NULL: none */
        /* What the job's page says of it, for the GPU's card (job_info): when the idle watch
         * stops it unless it makes progress (wall clock; 0: no warning outstanding), and its
         * leak's forecast (leak_evidence NULL: no leak reported this attempt). */
        gw_usec_t reclaim_at;
        const char *leak_evidence;
        double leak_epochs_to_oom, leak_seconds_to_oom; /* < 0: not known */
        const struct gw_codec_proc *procs;
        size_t n_procs;
        gw_usec_t sampled_at; /* wall clock; 0: never sampled */
        bool mig_mode; /* in MIG mode: jobs get its slices (mig), never the whole GPU */
        bool gpm; /* in MIG mode: its slices have GPM activity figures (mig[].activity) */
        const struct gw_codec_mig *mig;
        size_t n_mig;
};

/* One GPU for a reader with view (GW_VIEW_DETAILS: the processes' command lines). */
json_t *gw_codec_gpu(const struct gw_codec_gpu *g, unsigned view);
