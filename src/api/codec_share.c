#include "api/codec_share.h"

#include <math.h>
#include <stdio.h>

#include "api/codec.h"
#include "api/codec_table.h"
#include "base/cleanup.h"
#include "core/token.h"

static const struct gw_codec_ctx plain = { 0, 0 };

/* --- bookings and the schedule ---------------------------------------------------------- */

static json_t *booking_state(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        const struct gw_store_booking *b = obj;
        const char *name = gw_booking_state_name((enum gw_booking_state) b->state);
        return json_string(name ? name : "?");
}

#define B struct gw_store_booking
static const struct gw_codec_field booking_fields[] = {
        GW_CODEC_FIELD("id", GW_CT_I64, B, id),           GW_CODEC_FIELD("user", GW_CT_CHARS, B, user),
        GW_CODEC_FIELD("uid", GW_CT_U32, B, uid),         GW_CODEC_FIELD("name", GW_CT_CHARS, B, name),
        GW_CODEC_FIELD("ngpus", GW_CT_INT, B, ngpus),     GW_CODEC_FIELD("gpus", GW_CT_GPUS, B, gpu_mask),
        GW_CODEC_FIELD("start", GW_CT_SECONDS, B, start), GW_CODEC_FIELD("end", GW_CT_SECONDS, B, end),
        GW_CODEC_FIELD_FN("state", booking_state),        GW_CODEC_FIELD("note", GW_CT_CHARS, B, note),
};
#undef B

json_t *gw_codec_booking(const struct gw_store_booking *b) {
        return gw_codec_table_object(booking_fields, ELEMENTSOF(booking_fields), b, &plain);
}

json_t *gw_codec_booking_refusal(const char *message, gw_usec_t nearest_start, gw_usec_t nearest_end) {
        json_t *o = json_pack("{s:o,s:s}", "error", gw_json_text(message), "field", "start");
        if (nearest_end)
                json_object_set_new(o, "nearest",
                                    json_pack("{s:f,s:f}", "start", (double) nearest_start / 1e6, "end",
                                              (double) nearest_end / 1e6));
        return o;
}

static json_t *segment_kind(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        return gw_json_text(gw_segment_kind_name(((const struct gw_schedule_segment *) obj)->kind));
}

#define S struct gw_schedule_segment
static const struct gw_codec_field segment_fields[] = {
        GW_CODEC_FIELD("gpu", GW_CT_INT, S, gpu),       GW_CODEC_FIELD("start", GW_CT_SECONDS, S, start),
        GW_CODEC_FIELD("end", GW_CT_SECONDS, S, end),   GW_CODEC_FIELD_FN("kind", segment_kind),
        GW_CODEC_FIELD("id", GW_CT_I64, S, id),         GW_CODEC_FIELD("booking", GW_CT_I64, S, booking_id),
        GW_CODEC_FIELD("label", GW_CT_CHARS, S, label),
};
#undef S

json_t *gw_codec_segment(const struct gw_schedule_segment *s) {
        return gw_codec_table_object(segment_fields, ELEMENTSOF(segment_fields), s, &plain);
}

/* --- tokens ----------------------------------------------------------------------------- */

static json_t *token_expired(const void *obj, const struct gw_codec_ctx *ctx) {
        return json_boolean(gw_token_expired(((const struct gw_store_token *) obj)->expires, ctx->now));
}

/* null for a token with its account's whole rights, else its scope ("agent") */
static json_t *token_scope(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        const char *scope = ((const struct gw_store_token *) obj)->scope;
        return scope[0] ? json_string(scope) : json_null();
}

/* null for a token bound to no node, else the node whose snapshots it may post */
static json_t *token_node(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        const char *node = ((const struct gw_store_token *) obj)->node;
        return node[0] ? json_string(node) : json_null();
}

#define T struct gw_store_token
static const struct gw_codec_field token_fields[] = {
        GW_CODEC_FIELD("id", GW_CT_I64, T, id),
        GW_CODEC_FIELD("user", GW_CT_CHARS, T, user),
        GW_CODEC_FIELD("name", GW_CT_CHARS, T, name),
        GW_CODEC_FIELD("created", GW_CT_SECONDS, T, created),
        GW_CODEC_FIELD("last_used", GW_CT_SECONDS_OR_NULL, T, last_used),
        GW_CODEC_FIELD("expires", GW_CT_SECONDS_OR_NULL, T, expires),
        GW_CODEC_FIELD_FN("expired", token_expired),
        GW_CODEC_FIELD_FN("scope", token_scope),
        GW_CODEC_FIELD_FN("node", token_node),
};
#undef T

json_t *gw_codec_token(const struct gw_store_token *t, gw_usec_t now) {
        const struct gw_codec_ctx ctx = { 0, now };
        return gw_codec_table_object(token_fields, ELEMENTSOF(token_fields), t, &ctx);
}

#define M struct gw_codec_token_made
static const struct gw_codec_field token_made_fields[] = {
        GW_CODEC_FIELD("id", GW_CT_I64, M, id),
        GW_CODEC_FIELD("user", GW_CT_STR, M, user),
        GW_CODEC_FIELD("name", GW_CT_STR, M, name),
        GW_CODEC_FIELD("token", GW_CT_STR, M, token),
        GW_CODEC_FIELD("expires", GW_CT_SECONDS_OR_NULL, M, expires),
        GW_CODEC_FIELD("scope", GW_CT_STR_OR_NULL, M, scope),
        GW_CODEC_FIELD("node", GW_CT_STR_OR_NULL, M, node),
};
#undef M

json_t *gw_codec_token_made(const struct gw_codec_token_made *t) {
        return gw_codec_table_object(token_made_fields, ELEMENTSOF(token_made_fields), t, &plain);
}

/* --- quotas ----------------------------------------------------------------------------- */

static json_t *quota_limits(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        static const char *const sources[] = { "unlimited", "user", "group", "default", "role", "built-in" };
        const struct gw_codec_quota *q = obj;
        json_t *o = json_object();
        for (int k = 0; k < _GW_QUOTA_KEY_MAX; k++) {
                char val[64];
                unsigned from = (unsigned) q->from[k];
                gw_quota_format_value(k, q->limits->v[k], val, sizeof val);
                json_object_set_new(
                        o, gw_quota_key_name(k),
                        json_pack("{s:s,s:s}", "value", val, "from", from < ELEMENTSOF(sources) ? sources[from] : "?"));
        }
        return o;
}

static json_t *gpu_hours_7d(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        return json_real((double) ((const struct gw_quota_usage *) obj)->gpu_time_7d / 3.6e9);
}

#define U struct gw_quota_usage
static const struct gw_codec_field quota_usage_fields[] = {
        GW_CODEC_FIELD("gpus_running", GW_CT_I64, U, gpus_running),
        GW_CODEC_FIELD("pending_jobs", GW_CT_I64, U, pending_jobs),
        GW_CODEC_FIELD_FN("gpu_hours_7d", gpu_hours_7d),
};
#undef U

static json_t *quota_usage(const void *obj, const struct gw_codec_ctx *ctx) {
        return gw_codec_table_object(quota_usage_fields, ELEMENTSOF(quota_usage_fields),
                                     ((const struct gw_codec_quota *) obj)->usage, ctx);
}

static const struct gw_codec_field quota_fields[] = {
        GW_CODEC_FIELD("user", GW_CT_STR, struct gw_codec_quota, user),
        GW_CODEC_FIELD_FN("limits", quota_limits),
        GW_CODEC_FIELD_FN("usage", quota_usage),
};

json_t *gw_codec_quota(const struct gw_codec_quota *q) {
        return gw_codec_table_object(quota_fields, ELEMENTSOF(quota_fields), q, &plain);
}

/* --- usage accounting ------------------------------------------------------------------- */

/* One decimal: the mean of percentages is not more precise than that. */
static json_t *usage_util(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        double util = gw_acct_util(obj);
        return util >= 0 ? json_real(round(util * 10) / 10) : json_null();
}

static json_t *usage_states(const void *obj, const struct gw_codec_ctx *ctx) {
        (void) ctx;
        const struct gw_acct_user *u = obj;
        json_t *states = json_object();
        for (int s = 0; s < _GW_JOB_STATE_MAX; s++)
                if (u->by_state[s])
                        json_object_set_new(states, gw_job_state_name((enum gw_job_state) s),
                                            json_integer(u->by_state[s]));
        return states;
}

#define A struct gw_acct_user
static const struct gw_codec_field usage_user_fields[] = {
        GW_CODEC_FIELD("user", GW_CT_CHARS, A, user),
        GW_CODEC_FIELD("uid", GW_CT_U32, A, uid),
        GW_CODEC_FIELD("jobs", GW_CT_UINT, A, jobs),
        GW_CODEC_FIELD("gpu_hours", GW_CT_REAL, A, gpu_hours),
        GW_CODEC_FIELD_FN("util_mean", usage_util),
        GW_CODEC_FIELD("reclaimed_gpu_hours", GW_CT_REAL, A, reclaimed_gpu_hours),
        GW_CODEC_FIELD_FN("states", usage_states),
};
#undef A

json_t *gw_codec_usage_user(const struct gw_acct_user *u) {
        return gw_codec_table_object(usage_user_fields, ELEMENTSOF(usage_user_fields), u, &plain);
}
