/* The framing of an interactive session's socket, from the client (gpuward run) to the job's
 * supervisor.  The other way, the supervisor sends the terminal's output as it is: it needs no
 * frames, and a client that reads it raw cannot fall out of step.
 *
 * A frame is a type byte, a big-endian 16-bit payload length and the payload:
 *   'd' LEN BYTES   input for the terminal (LEN 1..GW_TTYFRAME_DATA_MAX)
 *   'w' 4 ROWS COLS the terminal's window size, each a big-endian 16-bit number
 * A frame of another type is skipped whole (room for later kinds); a 'd' of length 0 or a
 * 'w' whose length is not 4 is malformed and ends the session.  Pure: no I/O. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define GW_TTYFRAME_HEADER 3
#define GW_TTYFRAME_DATA_MAX 4096
/* The longest frame a reader must hold (a skipped one may be as long as 3 + 65535). */
#define GW_TTYFRAME_MAX (GW_TTYFRAME_HEADER + 65535)

enum gw_ttyframe_type {
        GW_TTYFRAME_DATA = 'd',
        GW_TTYFRAME_WINSIZE = 'w',
};

/* One decoded frame.  data points into the reader's buffer, valid until the next call. */
struct gw_ttyframe {
        enum gw_ttyframe_type type;
        const uint8_t *data;
        size_t len;
        unsigned rows, cols; /* of a 'w' frame */
};

/* What the client sent so far and the supervisor has not decoded yet. */
struct gw_ttyframe_reader {
        uint8_t buf[GW_TTYFRAME_MAX];
        size_t len; /* bytes held */
        size_t used; /* of those, taken by frames already returned */
};

/* A 'd' frame of n bytes of data (1..GW_TTYFRAME_DATA_MAX) into out (room for n + 3):
 * its length, or 0 when n is out of range. */
size_t gw_ttyframe_data(uint8_t *out, const void *data, size_t n);
/* A 'w' frame into out (7 bytes); sizes above 65535 are sent as 65535. */
size_t gw_ttyframe_winsize(uint8_t out[7], unsigned rows, unsigned cols);

/* Where to read more into, and how much fits (0 when a whole frame is waiting: decode it
 * first).  Moves what is left of the buffer to its front. */
uint8_t *gw_ttyframe_space(struct gw_ttyframe_reader *r, size_t *ret_room);
/* n bytes were read into the space given. */
void gw_ttyframe_filled(struct gw_ttyframe_reader *r, size_t n);
/* The next frame held: 1 (in *ret), 0 none whole yet, -EBADMSG a malformed one (the
 * session should end).  Frames of unknown types are skipped here. */
int gw_ttyframe_next(struct gw_ttyframe_reader *r, struct gw_ttyframe *ret);
