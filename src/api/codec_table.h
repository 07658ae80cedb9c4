/* One field table per resource: each row a key of the JSON object, its JSON type, where it
 * sits in the plain struct and who may read it.  The encoders in codec_*.c are these tables
 * and the few functions their rows name; a handler fills the struct and asks for the object. */
#pragma once
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "base/time.h"

/* What the reader may see (GW_VIEW_* of api/codec.h) and the wall clock now, for the few
 * values that depend on it (a token's "expired"). */
struct gw_codec_ctx {
        unsigned view;
        gw_usec_t now;
};

enum gw_codec_type {
        GW_CT_INT, /* int */
        GW_CT_UINT, /* unsigned */
        GW_CT_U32, /* uint32_t (uids) */
        GW_CT_I64, /* int64_t */
        GW_CT_U64, /* uint64_t (as a signed JSON integer, as jansson holds it) */
        GW_CT_ID_OR_NULL, /* int64_t; null when 0 or less (no job, no booking) */
        GW_CT_BOOL, /* bool */
        GW_CT_REAL, /* double */
        GW_CT_CHARS, /* char[N] inside the struct, as text */
        GW_CT_STR, /* const char *, as text; NULL reads "" */
        GW_CT_STR_OR_NULL, /* const char *; NULL reads null */
        GW_CT_SECONDS, /* gw_usec_t, as Unix seconds (a real) */
        GW_CT_SECONDS_OR_NULL, /* the same, null when 0 or less (not yet, never) */
        GW_CT_GPUS, /* uint64_t mask, as the array of its GPU indices */
        GW_CT_FN, /* what fn makes of the whole struct */
};

struct gw_codec_field {
        const char *name;
        enum gw_codec_type type;
        size_t offset;
        json_t *(*fn)(const void *obj, const struct gw_codec_ctx *ctx);
        unsigned need; /* GW_VIEW_* bits the reader must hold, else the value is null */
};

#define GW_CODEC_FIELD(key, type, st, member) \
        { key, type, offsetof(st, member), NULL, 0 }
#define GW_CODEC_FIELD_NEED(key, type, st, member, need) \
        { key, type, offsetof(st, member), NULL, need }
#define GW_CODEC_FIELD_FN(key, fn) \
        { key, GW_CT_FN, 0, fn, 0 }

/* The value of field f of obj for the reader ctx.  A new reference. */
json_t *gw_codec_field_value(const struct gw_codec_field *f, const void *obj, const struct gw_codec_ctx *ctx);
/* The object of the n fields of table, in their order.  A new reference. */
json_t *gw_codec_table_object(const struct gw_codec_field *table, size_t n, const void *obj,
                              const struct gw_codec_ctx *ctx);
/* An array of n objects of size bytes each, from items.  A new reference. */
json_t *gw_codec_table_array(const struct gw_codec_field *table, size_t n, const void *items, size_t count, size_t size,
                             const struct gw_codec_ctx *ctx);
/* A uint64_t mask of GPUs as the array of its indices. */
json_t *gw_codec_gpu_mask(uint64_t mask);
struct gw_job;
/* codec_row.c: job field name of j written to out as JSON without a JSON value in between;
 * 1 when written, 0 when the field is left to its jansson encoder. */
int gw_codec_row_put(FILE *out, const char *name, const struct gw_job *j);
