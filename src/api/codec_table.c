#include "api/codec_table.h"

#include <stdbool.h>

#include "api/codec.h"

static json_t *seconds(gw_usec_t t) { return json_real((double) t / 1e6); }

json_t *gw_codec_gpu_mask(uint64_t mask) {
        json_t *a = json_array();
        for (int i = 0; i < 64; i++)
                if (mask & (UINT64_C(1) << i))
                        json_array_append_new(a, json_integer(i));
        return a;
}

json_t *gw_codec_field_value(const struct gw_codec_field *f, const void *obj, const struct gw_codec_ctx *ctx) {
        if ((ctx->view & f->need) != f->need)
                return json_null();
        const void *p = (const char *) obj + f->offset;
        switch (f->type) {
        case GW_CT_INT:
                return json_integer(*(const int *) p);
        case GW_CT_UINT:
                return json_integer(*(const unsigned *) p);
        case GW_CT_U32:
                return json_integer(*(const uint32_t *) p);
        case GW_CT_I64:
                return json_integer(*(const int64_t *) p);
        case GW_CT_U64:
                return json_integer((json_int_t) * (const uint64_t *) p);
        case GW_CT_ID_OR_NULL:
                return *(const int64_t *) p > 0 ? json_integer(*(const int64_t *) p) : json_null();
        case GW_CT_BOOL:
                return json_boolean(*(const bool *) p);
        case GW_CT_REAL:
                return json_real(*(const double *) p);
        case GW_CT_CHARS:
                return gw_json_text((const char *) p);
        case GW_CT_STR:
                return gw_json_text(*(const char *const *) p);
        case GW_CT_STR_OR_NULL:
                return *(const char *const *) p ? gw_json_text(*(const char *const *) p) : json_null();
        case GW_CT_SECONDS:
                return seconds(*(const gw_usec_t *) p);
        case GW_CT_SECONDS_OR_NULL:
                return *(const gw_usec_t *) p > 0 ? seconds(*(const gw_usec_t *) p) : json_null();
        case GW_CT_GPUS:
                return gw_codec_gpu_mask(*(const uint64_t *) p);
        case GW_CT_FN:
                return f->fn(obj, ctx);
        }
        return json_null();
}

json_t *gw_codec_table_object(const struct gw_codec_field *table, size_t n, const void *obj,
                              const struct gw_codec_ctx *ctx) {
        json_t *o = json_object();
        for (size_t i = 0; i < n; i++)
                json_object_set_new(o, table[i].name, gw_codec_field_value(&table[i], obj, ctx));
        return o;
}

json_t *gw_codec_table_array(const struct gw_codec_field *table, size_t n, const void *items, size_t count, size_t size,
                             const struct gw_codec_ctx *ctx) {
        json_t *a = json_array();
        for (size_t i = 0; i < count; i++)
                json_array_append_new(a, gw_codec_table_object(table, n, (const char *) items + i * size, ctx));
        return a;
}
