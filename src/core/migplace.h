/* MIG slices for jobs: what a job asks for (submit --gpus PROFILE[:COUNT]) and which free
 * slices it gets.  Pure: the daemon hands in the slices as the last sample showed them.
 *
 * Placement: the slices of one job come from ONE GPU whenever some GPU in service holds as
 * many slices of the profile as it asks (free or not): slices of two GPUs cannot share
 * memory or NVLink the way one GPU's can, and a job written for one device count sees them
 * as unrelated devices.  Among the GPUs with enough free, the one with the fewest free
 * (best fit, lowest index on a tie), so that GPUs with more room stay whole for larger asks;
 * its slices in the order the driver lists them.  Only an ask larger than any GPU's layout
 * (more than one GPU's worth: 10 x 1g.10gb where a GPU holds 7) spreads over several GPUs,
 * those with the most free first (lowest index on a tie), so it spans as few as it can. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GW_MIG_PROFILE_MAX 32 /* bytes of a profile name, the NUL included */
#define GW_MIG_COUNT_MAX 64 /* slices one job may ask for */

struct gw_mig_ask {
        char profile[GW_MIG_PROFILE_MAX]; /* "1g.10gb", as NVML names it */
        int count; /* 1..GW_MIG_COUNT_MAX */
};

/* One slice (MIG device) of a GPU in MIG mode, as the placement needs it. */
struct gw_mig_slot {
        int gpu; /* the index of the GPU holding it */
        const char *uuid; /* borrowed, "MIG-..."; for the caller (placement reads it not) */
        const char *profile; /* borrowed; NULL or "": not known (never matches) */
        unsigned slices; /* the GPU-instance slices it holds; 0: not known */
        unsigned max_slices; /* the GPU's; 0: not known */
        int64_t job_id; /* the job given it; 0: free */
        bool usable; /* its GPU in service: not drained, not lost */
};

/* Whether s is a profile name as NVML writes them ("1g.10gb", "1g.10gb+me", "1c.3g.40gb"):
 * 1 to GW_MIG_PROFILE_MAX - 1 bytes of [0-9a-z.+], a digit first, with a "g." in it. */
bool gw_mig_profile_valid(const char *s);

/* Reads "PROFILE" (one slice) or "PROFILE:COUNT" into *ret.  0, or -EINVAL with why (one
 * line, no field name) in why[0..n-1]; *ret is written only on success. */
int gw_mig_ask_parse(const char *s, struct gw_mig_ask *ret, char *why, size_t n);

/* Picks ask->count free slices of ask->profile from slots[0..n-1] (see the placement above)
 * and writes their indexes into slots to ret_pick (room for ask->count), in the order they
 * are to be given (CUDA_VISIBLE_DEVICES's).  Returns 0; -EAGAIN: some GPU in service holds
 * enough such slices but none has that many free now; -EBUSY: the ask is more than one
 * GPU's worth and fewer are free on all GPUs in service now; -ENOENT: no GPU in service has
 * a slice of that profile; -EINVAL: bad input.  ret_pick is written only on success. */
int gw_mig_place(const struct gw_mig_slot *slots, size_t n, const struct gw_mig_ask *ask, size_t *ret_pick);

/* The GPUs the picked slices make up, each slice slices/max_slices of its GPU (1g.10gb of
 * an A100: 1/7), for accounting; a slice whose share is not known counts as a whole GPU,
 * never as nothing. */
double gw_mig_share(const struct gw_mig_slot *slots, const size_t *pick, size_t n_pick);

/* Why a slice job waits, from gw_mig_place's answer r, into buf: "no free 1g.10gb slice",
 * "no GPU with 2 free 1g.10gb slices", "fewer than 10 1g.10gb slices free", "no free
 * 1g.10gb slice: no GPU in service has that profile".  Returns buf. */
const char *gw_mig_wait_words(int r, const struct gw_mig_ask *ask, char *buf, size_t size);
