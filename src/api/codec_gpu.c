#include "api/codec_gpu.h"

#include "api/codec.h"
#include "api/codec_table.h"
#include "base/cleanup.h"

#include <math.h>

static json_t *proc_mem(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        const struct gw_codec_proc *p = obj;
        return p->mem != UINT64_MAX ? json_integer((json_int_t) p->mem) : json_null();
}

static json_t *proc_sm_util(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        const struct gw_codec_proc *p = obj;
        return p->sm_util >= 0 ? json_integer(p->sm_util) : json_null();
}

static json_t *proc_cpu(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        const struct gw_codec_proc *p = obj;
        /* Whole percent: a JSON real of one decimal would print as 98.799999999999997. */
        return p->cpu >= 0 ? json_integer((json_int_t) llround(p->cpu)) : json_null();
}

#define P struct gw_codec_proc
static const struct gw_codec_field proc_fields[] = {
        GW_CODEC_FIELD("pid", GW_CT_INT, P, pid),
        GW_CODEC_FIELD("user", GW_CT_STR, P, user),
        GW_CODEC_FIELD_NEED("command", GW_CT_STR, P, cmd, GW_VIEW_DETAILS),
        GW_CODEC_FIELD_FN("mem_used", proc_mem),
        GW_CODEC_FIELD_FN("sm_util", proc_sm_util),
        GW_CODEC_FIELD_FN("cpu", proc_cpu),
        GW_CODEC_FIELD("job", GW_CT_ID_OR_NULL, P, job_id),
        GW_CODEC_FIELD("stray", GW_CT_BOOL, P, stray),
};
#undef P

/* A sample's value, null where the driver did not give it (never a made-up 0). */
#define SAMPLE(fname, has, expr)                                                \
        static json_t *fname(const void *obj, const struct gw_codec_ctx *ctx) { \
                (void) ctx;                                                     \
                const struct gw_codec_gpu *g = obj;                             \
                return g->has ? (expr) : json_null();                           \
        }
SAMPLE(gpu_mem_used, has_mem, json_integer((json_int_t) g->mem_used))
SAMPLE(gpu_util, has_util, json_integer(g->util))
SAMPLE(gpu_mem_util, has_util, json_integer(g->mem_util))
SAMPLE(gpu_temp, has_temp, json_integer(g->temp_c))
SAMPLE(gpu_power, has_power, json_real(g->power_mw / 1000.0))
#undef SAMPLE

static json_t *job_display_id(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        return gw_codec_display_id(obj);
}

#define J struct gw_job
static const struct gw_codec_field job_info_fields[] = {
        GW_CODEC_FIELD("id", GW_CT_I64, J, id),
        GW_CODEC_FIELD("user", GW_CT_STR, J, user),
        GW_CODEC_FIELD("name", GW_CT_STR, J, name),
        GW_CODEC_FIELD("start_time", GW_CT_SECONDS_OR_NULL, J, start_time),
        GW_CODEC_FIELD("eta", GW_CT_SECONDS_OR_NULL, J, eta),
        GW_CODEC_FIELD_FN("display_id", job_display_id),
};
#undef J

static json_t *real_or_null(double v) { return v >= 0 ? json_real(v) : json_null(); }

/* The same figures as the job's training.leak, for the card's "OOM in ~3 epochs". */
static json_t *job_info_leak(const struct gw_codec_gpu *g) {
        if (!g->leak_evidence)
                return json_null();
        return json_pack("{s:o,s:o,s:o}", "evidence", gw_json_text(g->leak_evidence), "epochs_to_oom",
                         real_or_null(g->leak_epochs_to_oom), "seconds_to_oom", real_or_null(g->leak_seconds_to_oom));
}

static json_t *gpu_job_info(const void *obj, const struct gw_codec_ctx *ctx) {
        const struct gw_codec_gpu *g = obj;
        if (!g->job)
                return json_null();
        json_t *o = gw_codec_table_object(job_info_fields, ELEMENTSOF(job_info_fields), g->job, ctx);
        json_object_set_new(o, "reclaim_at",
                            g->reclaim_at > 0 ? json_real((double) g->reclaim_at / GW_USEC_PER_SEC) : json_null());
        json_object_set_new(o, "leak", job_info_leak(g));
        return o;
}

static json_t *gpu_procs(const void *obj, const struct gw_codec_ctx *ctx) {
        const struct gw_codec_gpu *g = obj;
        return gw_codec_table_array(proc_fields, ELEMENTSOF(proc_fields), g->procs, g->n_procs, sizeof *g->procs, ctx);
}

static json_t *mig_share(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        const struct gw_codec_mig *m = obj;
        if (!m->slices || !m->max_slices)
                return json_null();
        return json_real(round((double) m->slices / m->max_slices * 10000.0) / 10000.0);
}

static json_t *mig_mem_used(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        const struct gw_codec_mig *m = obj;
        return m->has_mem ? json_integer((json_int_t) m->mem_used) : json_null();
}

static json_t *mig_mem_total(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        const struct gw_codec_mig *m = obj;
        return m->has_mem ? json_integer((json_int_t) m->mem_total) : json_null();
}

static json_t *int_or_null(int v) { return v >= 0 ? json_integer(v) : json_null(); }

static json_t *mig_gi(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        return int_or_null(((const struct gw_codec_mig *) obj)->gi_id);
}

static json_t *mig_ci(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        return int_or_null(((const struct gw_codec_mig *) obj)->ci_id);
}

static json_t *mig_activity(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        return int_or_null(((const struct gw_codec_mig *) obj)->activity);
}

static json_t *mig_profile(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        const struct gw_codec_mig *m = obj;
        return m->profile && *m->profile ? json_string(m->profile) : json_null();
}

static json_t *mig_procs(const void *obj, const struct gw_codec_ctx *ctx) {
        const struct gw_codec_mig *m = obj;
        if (!m->has_procs)
                return json_null();
        return gw_codec_table_array(proc_fields, ELEMENTSOF(proc_fields), m->procs, m->n_procs, sizeof *m->procs, ctx);
}

#define M struct gw_codec_mig
static const struct gw_codec_field mig_fields[] = {
        GW_CODEC_FIELD("uuid", GW_CT_STR, M, uuid),         GW_CODEC_FIELD_FN("profile", mig_profile),
        GW_CODEC_FIELD_FN("gpu_instance", mig_gi),          GW_CODEC_FIELD_FN("compute_instance", mig_ci),
        GW_CODEC_FIELD("slices", GW_CT_UINT, M, slices),    GW_CODEC_FIELD_FN("share", mig_share),
        GW_CODEC_FIELD_FN("mem_total", mig_mem_total),      GW_CODEC_FIELD_FN("mem_used", mig_mem_used),
        GW_CODEC_FIELD("job", GW_CT_ID_OR_NULL, M, job_id), GW_CODEC_FIELD_FN("processes", mig_procs),
        GW_CODEC_FIELD_FN("activity", mig_activity),
};
#undef M

static json_t *gpu_mig(const void *obj, const struct gw_codec_ctx *ctx) {
        const struct gw_codec_gpu *g = obj;
        return gw_codec_table_array(mig_fields, ELEMENTSOF(mig_fields), g->mig, g->n_mig, sizeof *g->mig, ctx);
}

/* Whether per-slice activity is offered; null for a whole GPU, where it is no question. */
static json_t *gpu_gpm(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        const struct gw_codec_gpu *g = obj;
        return g->mig_mode ? json_boolean(g->gpm) : json_null();
}

#define G struct gw_codec_gpu
static const struct gw_codec_field gpu_fields[] = {
        GW_CODEC_FIELD("index", GW_CT_INT, G, index),
        GW_CODEC_FIELD("name", GW_CT_STR, G, name),
        GW_CODEC_FIELD("uuid", GW_CT_STR, G, uuid),
        GW_CODEC_FIELD("mem_total", GW_CT_U64, G, mem_total),
        GW_CODEC_FIELD_FN("mem_used", gpu_mem_used),
        GW_CODEC_FIELD_FN("util", gpu_util),
        GW_CODEC_FIELD_FN("mem_util", gpu_mem_util),
        GW_CODEC_FIELD_FN("temp", gpu_temp),
        GW_CODEC_FIELD_FN("power_w", gpu_power),
        GW_CODEC_FIELD("health", GW_CT_STR, G, health),
        GW_CODEC_FIELD("drain_reason", GW_CT_STR_OR_NULL, G, drain_reason),
        GW_CODEC_FIELD("job", GW_CT_ID_OR_NULL, G, job_id),
        GW_CODEC_FIELD_FN("job_info", gpu_job_info),
        GW_CODEC_FIELD_FN("processes", gpu_procs),
        GW_CODEC_FIELD("sampled_at", GW_CT_SECONDS_OR_NULL, G, sampled_at),
        GW_CODEC_FIELD("mig_mode", GW_CT_BOOL, G, mig_mode),
        GW_CODEC_FIELD_FN("gpm", gpu_gpm),
        GW_CODEC_FIELD_FN("mig", gpu_mig),
};
#undef G

json_t *gw_codec_gpu(const struct gw_codec_gpu *g, unsigned view) {
        const struct gw_codec_ctx ctx = { view, 0 };
        return gw_codec_table_object(gpu_fields, ELEMENTSOF(gpu_fields), g, &ctx);
}
