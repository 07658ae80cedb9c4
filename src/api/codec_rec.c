/* The records of a job's history (its attempts and events) and of the GPUs' events, each one
 * field table (codec_table.h). */
#include <stdbool.h>

#include "api/codec.h"
#include "api/codec_table.h"
#include "base/cleanup.h"

static json_t *attempt_evidence(const void *obj, const struct gw_codec_ctx *ctx) {
        const struct gw_job_attempt *a = obj;
        return gw_codec_evidence(a->evidence, ctx->view, a->signal, a->has_exit, a->exit_code);
}

/* An exit code only for an exit: a signal's death has none. */
static json_t *attempt_exit(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        const struct gw_job_attempt *a = obj;
        return a->has_exit && !a->signal ? json_integer(a->exit_code) : json_null();
}

static json_t *attempt_signal(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        const struct gw_job_attempt *a = obj;
        return a->signal ? json_integer(a->signal) : json_null();
}

/* The epochs the checkpoint it resumed from holds: null when it was offered none, or its
 * epoch was not read (not a checkpoint the daemon reads, an attempt of an older version). */
static json_t *attempt_ckpt_epoch(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        const struct gw_job_attempt *a = obj;
        return a->resumed_from && a->ckpt_epoch > 0 ? json_integer(a->ckpt_epoch) : json_null();
}

/* Paths into the job's directory are details: guests read null (GW_VIEW_DETAILS). */
#define A struct gw_job_attempt
static const struct gw_codec_field attempt_fields[] = {
        GW_CODEC_FIELD("attempt", GW_CT_INT, A, attempt),
        GW_CODEC_FIELD("gpus", GW_CT_GPUS, A, gpu_mask),
        GW_CODEC_FIELD("start_time", GW_CT_SECONDS, A, start_time),
        GW_CODEC_FIELD("end_time", GW_CT_SECONDS, A, end_time),
        GW_CODEC_FIELD("class", GW_CT_STR, A, class_name),
        GW_CODEC_FIELD_FN("evidence", attempt_evidence),
        GW_CODEC_FIELD_NEED("resumed_from", GW_CT_STR_OR_NULL, A, resumed_from, GW_VIEW_DETAILS),
        GW_CODEC_FIELD("epoch", GW_CT_INT, A, epoch),
        GW_CODEC_FIELD_FN("ckpt_epoch", attempt_ckpt_epoch),
        GW_CODEC_FIELD_NEED("log_path", GW_CT_STR_OR_NULL, A, log_path, GW_VIEW_DETAILS),
        GW_CODEC_FIELD_FN("exit_code", attempt_exit),
        GW_CODEC_FIELD_FN("signal", attempt_signal),
};
#undef A

json_t *gw_codec_attempts(const struct gw_job_attempt *a, size_t n, unsigned view) {
        const struct gw_codec_ctx ctx = { view, 0 };
        return gw_codec_table_array(attempt_fields, ELEMENTSOF(attempt_fields), a, n, sizeof *a, &ctx);
}

static json_t *event_state(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        const char *name = gw_job_state_name(((const struct gw_job_event *) obj)->state);
        return json_string(name ? name : "?");
}

static json_t *event_message(const void *obj, const struct gw_codec_ctx *ctx) {
        return gw_codec_event_message(((const struct gw_job_event *) obj)->message, ctx->view);
}

#define E struct gw_job_event
static const struct gw_codec_field event_fields[] = {
        GW_CODEC_FIELD("time", GW_CT_SECONDS_OR_NULL, E, time),
        GW_CODEC_FIELD_FN("state", event_state),
        GW_CODEC_FIELD("kind", GW_CT_STR, E, kind),
        GW_CODEC_FIELD_FN("message", event_message),
};
#undef E

json_t *gw_codec_events(const struct gw_job_event *ev, size_t n, unsigned view) {
        const struct gw_codec_ctx ctx = { view, 0 };
        return gw_codec_table_array(event_fields, ELEMENTSOF(event_fields), ev, n, sizeof *ev, &ctx);
}

static json_t *gpu_event_xid(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        long long xid = ((const struct gw_gpu_event_rec *) obj)->xid;
        return xid >= 0 ? json_integer(xid) : json_null();
}

/* A rogue process's event names another user's pid and command line: its message is a
 * detail. */
#define G struct gw_gpu_event_rec
static const struct gw_codec_field gpu_event_fields[] = {
        GW_CODEC_FIELD("time", GW_CT_SECONDS_OR_NULL, G, time),
        GW_CODEC_FIELD("gpu", GW_CT_UINT, G, gpu),
        GW_CODEC_FIELD("node", GW_CT_STR_OR_NULL, G, node),
        GW_CODEC_FIELD("kind", GW_CT_STR, G, kind),
        GW_CODEC_FIELD_FN("xid", gpu_event_xid),
        GW_CODEC_FIELD("job", GW_CT_ID_OR_NULL, G, job_id),
        GW_CODEC_FIELD_NEED("message", GW_CT_STR, G, message, GW_VIEW_DETAILS),
};
#undef G

json_t *gw_codec_gpu_event(const struct gw_gpu_event_rec *e, bool with_message) {
        const struct gw_codec_ctx ctx = { with_message ? GW_VIEW_DETAILS : 0, 0 };
        return gw_codec_table_object(gpu_event_fields, ELEMENTSOF(gpu_event_fields), e, &ctx);
}
