/* MIG devices: a GPU in MIG mode is read slice by slice through its MIG device handles.
 * Every call here is optional (drivers before NVML 11 lack them, and GPUs without MIG answer
 * NOT_SUPPORTED): then the GPU is whole, which is what it is to such a driver.  The layout
 * is read again at each call because an admin may re-partition a GPU while we run. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/nvml_internal.h"

/* "NVIDIA A100-SXM4-80GB MIG 1g.10gb" -> "1g.10gb": the MIG device's name ends in its
 * profile.  Anything else leaves the profile unknown rather than guessed. */
static void profile_from_name(const char *name, char *dst, size_t n) {
        const char *p = NULL;
        for (const char *q = strstr(name, " MIG "); q; q = strstr(q + 1, " MIG "))
                p = q + 5;
        dst[0] = '\0';
        if (p && *p && strlen(p) < n && !strchr(p, ' '))
                snprintf(dst, n, "%s", p);
}

/* The leading "Ng" of a profile ("3g.40gb", "1c.3g.40gb" -> 3); 0 if it has none. */
static unsigned slices_from_profile(const char *profile) {
        const char *g = strchr(profile, 'g');
        while (g && g > profile) {
                const char *d = g;
                while (d > profile && d[-1] >= '0' && d[-1] <= '9')
                        d--;
                if (d < g && (d == profile || d[-1] == '.') && g - d <= 2)
                        return (unsigned) strtoul(d, NULL, 10);
                g = strchr(g + 1, 'g');
        }
        return 0;
}

static bool mig_calls_present(const struct gw_nvml_fns *fn) {
        return fn->mig_mode && fn->max_mig_count && fn->mig_handle_by_index;
}

static void read_mig_device(struct gw_gpu_lib *lib, nvmlDevice_t h, struct gw_gpu_mig *m) {
        const struct gw_nvml_fns *fn = &lib->fn;
        char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE];

        *m = (struct gw_gpu_mig){ .gi_id = UINT_MAX, .ci_id = UINT_MAX, .activity = -1 };
        if (fn->uuid && fn->uuid(h, buf, sizeof buf) == NVML_SUCCESS)
                gw_nvml_copy_string(m->uuid, sizeof m->uuid, buf, sizeof buf);
        if (fn->name && fn->name(h, buf, sizeof buf) == NVML_SUCCESS) {
                char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
                gw_nvml_copy_string(name, sizeof name, buf, sizeof buf);
                profile_from_name(name, m->profile, sizeof m->profile);
        }
        if (fn->gpu_instance_id && fn->gpu_instance_id(h, &m->gi_id) != NVML_SUCCESS)
                m->gi_id = UINT_MAX;
        if (fn->compute_instance_id && fn->compute_instance_id(h, &m->ci_id) != NVML_SUCCESS)
                m->ci_id = UINT_MAX;
        nvmlDeviceAttributes_t a;
        memset(&a, 0, sizeof a);
        if (fn->attributes && fn->attributes(h, &a) == NVML_SUCCESS && a.gpuInstanceSliceCount <= NVML_DEVICE_MIG_MAX)
                m->slices = a.gpuInstanceSliceCount;
        if (m->slices == 0)
                m->slices = slices_from_profile(m->profile);
        m->has_mem = gw_nvml_read_memory(lib, h, &m->mem_total, &m->mem_used) == NVML_SUCCESS;
        if (!m->has_mem)
                m->mem_total = m->mem_used = 0;
        m->has_procs = gw_nvml_procs(lib, h, NULL, m->procs, GW_GPU_MIG_PROCS_MAX, &m->n_procs) == 0;
        if (!m->has_procs)
                m->n_procs = 0;
}

int gw_gpu_mig(struct gw_gpu_lib *lib, unsigned idx, struct gw_gpu_mig_layout *ret) {
        if (!lib || !ret || idx >= lib->count)
                return -EINVAL;
        nvmlDevice_t h = lib->devs[idx].handle;
        struct gw_gpu_mig_layout l = { .enabled = false };
        unsigned cur = 0, pending = 0, max = 0;

        if (!h)
                return -EIO;
        if (!mig_calls_present(&lib->fn)) {
                *ret = l;
                return 0;
        }
        nvmlReturn_t r = lib->fn.mig_mode(h, &cur, &pending);
        if (r == NVML_ERROR_GPU_IS_LOST)
                return -EIO;
        if (r != NVML_SUCCESS || cur != NVML_DEVICE_MIG_ENABLE || lib->fn.max_mig_count(h, &max) != NVML_SUCCESS) {
                lib->devs[idx].gpm_in_mig = false;
                *ret = l; /* NOT_SUPPORTED (no MIG on this GPU), or off */
                return 0;
        }
        l.enabled = true;
        l.max_slices = max > NVML_DEVICE_MIG_MAX ? NVML_DEVICE_MIG_MAX : max;
        /* MIG device indexes may have holes where an instance was destroyed: NOT_FOUND. */
        for (unsigned i = 0; i < l.max_slices && l.n < GW_GPU_MIG_MAX; i++) {
                nvmlDevice_t mh = NULL;
                if (lib->fn.mig_handle_by_index(h, i, &mh) != NVML_SUCCESS || !mh)
                        continue;
                read_mig_device(lib, mh, &l.dev[l.n++]);
        }
        gw_nvml_gpm_round(lib, &lib->devs[idx], &l);
        *ret = l;
        return 0;
}
