/* HTTP/1.1 responses as the CLI needs them: one request per connection, whole reply.
 * Parsing is pure (bytes in, struct out) so that it can be tested and fuzzed apart from
 * the socket code in client.c. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* Caps on what a daemon (or anything squatting on its socket) can make us hold. */
#define CLI_HTTP_MAX_HEADER_BYTES (64u * 1024u)
#define CLI_HTTP_MAX_HEADERS 100u
#define CLI_HTTP_MAX_BODY_BYTES (64u * 1024u * 1024u)

struct cli_http_header {
        char *name;
        char *value;
};

struct cli_http_response {
        int status;
        char *reason;
        struct cli_http_header *headers;
        size_t n_headers;
        char *body; /* always NUL-terminated (not counted in body_len), may hold NULs */
        size_t body_len;
        char *body_mem; /* what body lies in: its own allocation, or the bytes read
                         * (cli_http_parse_take) */
};

/* Parses the response in buf[0..len).  eof says no more bytes will come.
 * Returns 1 and fills *ret (which the caller then owns; release with
 * cli_http_response_done) when the response is whole, 0 when more bytes are needed (ret
 * untouched), -EBADMSG for a malformed or truncated response, -EFBIG past the caps.
 * Interim 1xx responses are skipped.  Handles Content-Length, chunked transfer coding and
 * read-until-close bodies. */
int cli_http_parse(const char *buf, size_t len, bool eof, struct cli_http_response *ret);

/* cli_http_parse, for bytes the caller gives away when the response is whole: on 1, buf
 * (malloc'ed, with room for len + 1 bytes) is the response's, and a body that is not chunked
 * is not copied out of it (a long list is megabytes); on any other return it is still the
 * caller's. */
int cli_http_parse_take(char *buf, size_t len, bool eof, struct cli_http_response *ret);

/* How many bytes the response whose first len bytes are in buf takes in all, head and body,
 * so that a reader can make room for it at once: 1 with *ret_size once the head is in, 0 in
 * *ret_size when the head does not tell (chunked, read until the connection closes, an interim
 * 1xx response first); 0 while the head is incomplete; <0 as cli_http_parse. */
int cli_http_reply_size(const char *buf, size_t len, size_t *ret_size);

/* Value of the first header called name (case-insensitive), or NULL.  Borrowed. */
const char *cli_http_header(const struct cli_http_response *r, const char *name);

/* Frees what the response holds and zeroes it; safe to call twice. */
void cli_http_response_done(struct cli_http_response *r);
