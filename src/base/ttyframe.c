/* An interactive session's frames (ttyframe.h). */
#include "base/ttyframe.h"

#include <errno.h>
#include <string.h>

static void put16(uint8_t *p, unsigned v) {
        if (v > 65535)
                v = 65535;
        p[0] = (uint8_t) (v >> 8);
        p[1] = (uint8_t) v;
}

static unsigned get16(const uint8_t *p) { return (unsigned) p[0] << 8 | p[1]; }

size_t gw_ttyframe_data(uint8_t *out, const void *data, size_t n) {
        if (n == 0 || n > GW_TTYFRAME_DATA_MAX)
                return 0;
        out[0] = GW_TTYFRAME_DATA;
        put16(out + 1, (unsigned) n);
        memcpy(out + GW_TTYFRAME_HEADER, data, n);
        return n + GW_TTYFRAME_HEADER;
}

size_t gw_ttyframe_winsize(uint8_t out[7], unsigned rows, unsigned cols) {
        out[0] = GW_TTYFRAME_WINSIZE;
        put16(out + 1, 4);
        put16(out + 3, rows);
        put16(out + 5, cols);
        return 7;
}

uint8_t *gw_ttyframe_space(struct gw_ttyframe_reader *r, size_t *ret_room) {
        if (r->used) {
                memmove(r->buf, r->buf + r->used, r->len - r->used);
                r->len -= r->used;
                r->used = 0;
        }
        *ret_room = sizeof r->buf - r->len;
        return r->buf + r->len;
}

void gw_ttyframe_filled(struct gw_ttyframe_reader *r, size_t n) { r->len += n; }

int gw_ttyframe_next(struct gw_ttyframe_reader *r, struct gw_ttyframe *ret) {
        for (;;) {
                const uint8_t *p = r->buf + r->used;
                size_t held = r->len - r->used;
                if (held < GW_TTYFRAME_HEADER)
                        return 0;
                size_t n = get16(p + 1);
                if (p[0] == GW_TTYFRAME_DATA && (n == 0 || n > GW_TTYFRAME_DATA_MAX))
                        return -EBADMSG;
                if (p[0] == GW_TTYFRAME_WINSIZE && n != 4)
                        return -EBADMSG;
                if (held < GW_TTYFRAME_HEADER + n)
                        return 0;
                r->used += GW_TTYFRAME_HEADER + n;
                if (p[0] != GW_TTYFRAME_DATA && p[0] != GW_TTYFRAME_WINSIZE)
                        continue; /* a kind this side does not know: skipped whole */
                *ret = (struct gw_ttyframe){ .type = (enum gw_ttyframe_type) p[0],
                                             .data = p + GW_TTYFRAME_HEADER,
                                             .len = n };
                if (p[0] == GW_TTYFRAME_WINSIZE) {
                        ret->rows = get16(p + 3);
                        ret->cols = get16(p + 5);
                }
                return 1;
        }
}
