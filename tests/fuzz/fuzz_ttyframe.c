/* libFuzzer target: an interactive session's frames (src/base/ttyframe.h), as the job's
 * supervisor reads them from its client's socket.  The first byte picks the size of the reads
 * the socket hands over (1 to 256 bytes), the rest is the stream.  Whatever the bytes: a frame
 * returned lies inside the reader's buffer, a data frame holds 1 to GW_TTYFRAME_DATA_MAX bytes,
 * a malformed one stops the session and nothing is decoded after it, and a stream of frames
 * the client's encoder made decodes to exactly them. */
#include "../../src/base/ttyframe.h"

#include <errno.h>

#include "fuzz_common.h"

static struct gw_ttyframe_reader r;

/* Feeds data in pieces of chunk bytes, decoding as the supervisor does; the number of frames
 * (-1: a malformed one). */
static long decode_all(const uint8_t *data, size_t size, size_t chunk) {
        memset(&r, 0, sizeof r);
        long frames = 0;
        size_t off = 0;
        for (;;) {
                struct gw_ttyframe f;
                int k;
                while ((k = gw_ttyframe_next(&r, &f)) == 1) {
                        FUZZ_CHECK(f.data >= r.buf && f.data + f.len <= r.buf + r.len);
                        if (f.type == GW_TTYFRAME_DATA)
                                FUZZ_CHECK(f.len >= 1 && f.len <= GW_TTYFRAME_DATA_MAX);
                        else
                                FUZZ_CHECK(f.type == GW_TTYFRAME_WINSIZE && f.len == 4 && f.rows < 65536 &&
                                           f.cols < 65536);
                        frames++;
                }
                if (k < 0)
                        return -1;
                if (off == size)
                        return frames;
                size_t room;
                uint8_t *at = gw_ttyframe_space(&r, &room);
                FUZZ_CHECK(room > 0); /* a partial frame always fits */
                size_t n = size - off < chunk ? size - off : chunk;
                n = n < room ? n : room;
                memcpy(at, data + off, n);
                gw_ttyframe_filled(&r, n);
                off += n;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1)
                return 0;
        size_t chunk = (size_t) data[0] + 1;
        (void) decode_all(data + 1, size - 1, chunk);

        /* The encoder's output round-trips: the input cut into data frames, a window size
         * between each. */
        static uint8_t wire[2 * 65536 + 64];
        size_t n = 0, frames = 0;
        for (size_t off = 1; off < size && n + GW_TTYFRAME_DATA_MAX + 16 < sizeof wire; frames += 2) {
                size_t len = size - off < chunk ? size - off : chunk;
                n += gw_ttyframe_data(wire + n, data + off, len);
                n += gw_ttyframe_winsize(wire + n, data[off], chunk);
                off += len;
        }
        FUZZ_CHECK(decode_all(wire, n, chunk) == (long) frames);
        return 0;
}
