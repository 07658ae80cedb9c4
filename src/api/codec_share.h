/* The encoders of what users share the host by: bookings, the schedule's segments, quotas,
 * API tokens and the usage accounting's rows.  Each is one field table (codec_table.h) in
 * codec_share.c; every function returns a new reference. */
#pragma once
#include <jansson.h>
#include <stddef.h>

#include "core/accounting.h"
#include "core/calendar.h"
#include "core/quota.h"
#include "core/sharerec.h"

json_t *gw_codec_booking(const struct gw_store_booking *b);
/* A booking that does not fit: {"error", "field": "start"}, and the nearest time it would,
 * "nearest": {"start", "end"}, when nearest_end is not 0. */
json_t *gw_codec_booking_refusal(const char *message, gw_usec_t nearest_start, gw_usec_t nearest_end);
json_t *gw_codec_segment(const struct gw_schedule_segment *s);
/* A token as `gpuward token list` shows it: never its secret; "expired" as of now. */
json_t *gw_codec_token(const struct gw_store_token *t, gw_usec_t now);

/* A token just made: the only reply that carries its secret. */
struct gw_codec_token_made {
        int64_t id;
        const char *user, *name; /* NULL name reads "" */
        const char *token;
        gw_usec_t expires; /* 0: never */
        const char *scope; /* NULL: the account's whole rights; "agent" */
        const char *node; /* an agent's: the node it may post for; NULL none */
};
json_t *gw_codec_token_made(const struct gw_codec_token_made *t);

/* A user's quota: each limit with where it came from, and what the user uses now. */
struct gw_codec_quota {
        const char *user;
        const struct gw_quota *limits;
        const enum gw_quota_source *from; /* _GW_QUOTA_KEY_MAX of them */
        const struct gw_quota_usage *usage;
};
json_t *gw_codec_quota(const struct gw_codec_quota *q);

/* One user's row of GET /api/v1/usage. */
json_t *gw_codec_usage_user(const struct gw_acct_user *u);
