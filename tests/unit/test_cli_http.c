/* src/cli/http.c: the CLI's HTTP/1.1 response parser.  The CLI is not a library, so the
 * parser's source (which needs nothing else from src/cli) is compiled into this test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../src/cli/http.c"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* A byte string that may hold NULs. */
struct bytes {
        const char *p;
        size_t n;
};
#define S(lit) \
        { lit, sizeof(lit) - 1 }

/* Parses the first len bytes from an exactly-sized heap copy, so that ASan sees any read
 * past the end. */
static int parse(const char *buf, size_t len, bool eof, struct cli_http_response *r) {
        char *copy = malloc(len ? len : 1);
        assert_non_null(copy);
        if (len)
                memcpy(copy, buf, len);
        int k = cli_http_parse(copy, len, eof, r);
        free(copy);
        return k;
}

static const struct cli_http_response sentinel = { .status = -42, .body_len = 4242 };

static void assert_untouched(const struct cli_http_response *r) {
        assert_int_equal(r->status, -42);
        assert_int_equal(r->body_len, 4242);
        assert_null(r->reason);
        assert_null(r->headers);
        assert_null(r->body);
}

/* Every proper prefix of a framed response is "more, please" while the connection is
 * open, and a truncation error once it is closed. */
static void check_prefixes(const char *raw, size_t len, const char *what) {
        for (size_t k = 0; k < len; k++) {
                struct cli_http_response r = sentinel;
                int e = parse(raw, k, false, &r);
                if (e != 0)
                        fail_msg("%s: prefix of %zu/%zu bytes: %d, want 0", what, k, len, e);
                assert_untouched(&r);
                e = parse(raw, k, true, &r);
                if (e != -EBADMSG)
                        fail_msg("%s: prefix of %zu/%zu bytes at eof: %d, want -EBADMSG", what, k, len, e);
                assert_untouched(&r);
        }
}

static void assert_body(const struct cli_http_response *r, const char *body, size_t n, const char *what) {
        if (r->body_len != n || memcmp(r->body, body, n) != 0)
                fail_msg("%s: body of %zu bytes '%.*s', want %zu '%.*s'", what, r->body_len, (int) r->body_len, r->body,
                         n, (int) n, body);
        assert_int_equal(r->body[n], '\0');
}

/* Responses whose end the framing tells (Content-Length, chunked, or no body by status). */
static void framed(void **state) {
        static const struct {
                struct bytes raw, body;
                int status;
                const char *reason;
                size_t n_headers;
        } cases[] = {
                { S("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"), S("hello"), 200, "OK", 1 },
                { S("HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{\"id\":17}"),
                  S("{\"id\":17}"), 201, "Created", 2 },
                { S("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"), S(""), 200, "OK", 1 },
                { S("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\na\0b\r\n"), S("a\0b\r\n"), 200, "OK", 1 },
                { S("HTTP/1.1 404 Not Found\r\ncontent-length:   2  \r\n\r\nno"), S("no"), 404, "Not Found", 1 },
                { S("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok"), S("ok"), 200, "OK", 2 },
                { S("HTTP/1.1 200 OK\r\nContent-Length: 002\r\n\r\nok"), S("ok"), 200, "OK", 1 },
                { S("HTTP/1.1 200 OK\nContent-Length: 2\n\nhi"), S("hi"), 200, "OK", 1 },
                { S("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi"), S("hi"), 200, "OK", 1 },
                { S("HTTP/1.1 503\r\nContent-Length: 2\r\n\r\n{}"), S("{}"), 503, "", 1 },
                { S("HTTP/1.1 503 \r\nContent-Length: 2\r\n\r\n{}"), S("{}"), 503, "", 1 },
                { S("HTTP/1.1 204 No Content\r\n\r\n"), S(""), 204, "No Content", 0 },
                { S("HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n"), S(""), 304, "Not Modified", 1 },
                /* Interim responses are skipped, headers and all. */
                { S("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"), S("ok"), 200, "OK",
                  1 },
                { S("HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n"
                    "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 3\r\n\r\nbig"),
                  S("big"), 413, "Payload Too Large", 1 },
                /* Chunked. */
                { S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"),
                  S("hello world"), 200, "OK", 1 },
                { S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"), S(""), 200, "OK", 1 },
                { S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nA\r\n0123456789\r\na\r\nabcdefghij\r\n"
                    "0\r\n\r\n"),
                  S("0123456789abcdefghij"), 200, "OK", 1 },
                { S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0005\r\nhello\r\n0\r\n\r\n"), S("hello"), 200,
                  "OK", 1 },
                { S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;name=value\r\nhello\r\n"
                    "3 ; x=\"y;z\"\r\nabc\r\n2\t;tab\r\nde\r\n0;last\r\n\r\n"),
                  S("helloabcde"), 200, "OK", 1 },
                { S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Checksum: abc\r\n"
                    "X-Other: 1\r\n\r\n"),
                  S("abc"), 200, "OK", 1 },
                { S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n\r\n\0x\r\n\r\n0\r\n\r\n"),
                  S("\r\n\0x\r\n"), 200, "OK", 1 },
                { S("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n5\nhello\n0\n\n"), S("hello"), 200, "OK", 1 },
                { S("HTTP/1.1 200 OK\r\ntransfer-encoding: CHUNKED\r\n\r\n2\r\nok\r\n0\r\n\r\n"), S("ok"), 200, "OK",
                  1 },
                { S("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"), S("ok"), 200,
                  "OK", 1 },
                /* Both: chunked wins (RFC 9112 6.3), whatever Content-Length says. */
                { S("HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"),
                  S("ok"), 200, "OK", 2 },
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                char what[32];
                snprintf(what, sizeof what, "framed case %zu", i);
                for (int eof = 0; eof <= 1; eof++) {
                        struct cli_http_response r = sentinel;
                        int k = parse(cases[i].raw.p, cases[i].raw.n, eof, &r);
                        if (k != 1)
                                fail_msg("%s (eof %d): %d, want 1", what, eof, k);
                        assert_int_equal(r.status, cases[i].status);
                        assert_string_equal(r.reason, cases[i].reason);
                        assert_int_equal(r.n_headers, cases[i].n_headers);
                        assert_body(&r, cases[i].body.p, cases[i].body.n, what);
                        cli_http_response_done(&r);
                }
                check_prefixes(cases[i].raw.p, cases[i].raw.n, what);
        }
}

/* Bytes after a framed body (a second response, junk) are not the body. */
static void framed_extra_bytes(void **state) {
        static const struct bytes cases[] = {
                S("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA"),
                S("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nno"),
                S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\nEXTRA"),
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                struct cli_http_response r = sentinel;
                assert_int_equal(parse(cases[i].p, cases[i].n, false, &r), 1);
                assert_body(&r, "ok", 2, "extra bytes");
                cli_http_response_done(&r);
        }
}

static void headers(void **state) {
        static const char raw[] = "HTTP/1.1 200 OK\r\nX-Log-Offset: 1234\r\nx-job-state:RUNNING\r\n"
                                  "X-Empty:\r\nX-Dup: first\r\nX-Dup: second\r\nX-Spaces: \t a b \t\r\n"
                                  "Content-Length: 0\r\n\r\n";
        struct cli_http_response r = sentinel;
        assert_int_equal(parse(raw, sizeof raw - 1, false, &r), 1);
        assert_int_equal(r.n_headers, 7);
        assert_string_equal(cli_http_header(&r, "X-Log-Offset"), "1234");
        assert_string_equal(cli_http_header(&r, "x-log-offset"), "1234");
        assert_string_equal(cli_http_header(&r, "X-Job-State"), "RUNNING");
        assert_string_equal(cli_http_header(&r, "X-Empty"), "");
        assert_string_equal(cli_http_header(&r, "X-Dup"), "first");
        assert_string_equal(cli_http_header(&r, "X-Spaces"), "a b");
        assert_null(cli_http_header(&r, "X-Missing"));
        assert_null(cli_http_header(&r, "X-Log"));
        assert_string_equal(r.headers[0].name, "X-Log-Offset");
        cli_http_response_done(&r);
        assert_int_equal(r.n_headers, 0);
        assert_null(r.body);
        cli_http_response_done(&r); /* twice is fine */
        cli_http_response_done(NULL);

        /* Exactly the cap of headers is fine; one more is refused. */
        for (unsigned n = CLI_HTTP_MAX_HEADERS; n <= CLI_HTTP_MAX_HEADERS + 1; n++) {
                char buf[8192];
                size_t len = (size_t) snprintf(buf, sizeof buf, "HTTP/1.1 200 OK\r\n");
                for (unsigned i = 0; i + 1 < n; i++)
                        len += (size_t) snprintf(buf + len, sizeof buf - len, "X-H%u: %u\r\n", i, i);
                len += (size_t) snprintf(buf + len, sizeof buf - len, "Content-Length: 0\r\n\r\n");
                assert_true(len < sizeof buf);
                r = sentinel;
                int k = parse(buf, len, false, &r);
                if (n <= CLI_HTTP_MAX_HEADERS) {
                        assert_int_equal(k, 1);
                        assert_int_equal(r.n_headers, n);
                        cli_http_response_done(&r);
                } else {
                        assert_int_equal(k, -EFBIG);
                        assert_untouched(&r);
                }
        }
}

/* No Content-Length, not chunked: the body runs until the connection closes. */
static void until_close(void **state) {
        static const struct {
                struct bytes raw, body;
                int status;
        } cases[] = {
                { S("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nsome log bytes\n"), S("some log bytes\n"),
                  200 },
                { S("HTTP/1.1 200 OK\r\n\r\n"), S(""), 200 },
                { S("HTTP/1.0 200 OK\r\n\r\na\0b"), S("a\0b"), 200 },
                { S("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 500 Internal Server Error\r\n\r\noops"), S("oops"), 500 },
                { S("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\nraw"), S("raw"), 101 },
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                struct cli_http_response r = sentinel;
                assert_int_equal(parse(cases[i].raw.p, cases[i].raw.n, false, &r), 0);
                assert_untouched(&r);
                assert_int_equal(parse(cases[i].raw.p, cases[i].raw.n, true, &r), 1);
                assert_int_equal(r.status, cases[i].status);
                assert_body(&r, cases[i].body.p, cases[i].body.n, "until close");
                cli_http_response_done(&r);
        }
}

/* Malformed: refused whether or not more bytes could come. */
static void malformed(void **state) {
        static const struct bytes cases[] = {
                /* Status lines. */
                S("FOO\r\n\r\n"),
                S("\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
                S("HTTP/2 200 OK\r\nContent-Length: 0\r\n\r\n"),
                S("HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n"),
                S("HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n"),
                S("HTTP/1.1 200OK\r\nContent-Length: 0\r\n\r\n"),
                S("HTTP/1.1  200 OK\r\nContent-Length: 0\r\n\r\n"),
                S("HTTP/1.1 099 Low\r\nContent-Length: 0\r\n\r\n"),
                S("HTTP/1.1 000 Zero\r\nContent-Length: 0\r\n\r\n"),
                S("HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n"),
                S("HTTP/1.x 200 OK\r\nContent-Length: 0\r\n\r\n"),
                S("http/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
                S("ICY 200 OK\r\nContent-Length: 0\r\n\r\n"),
                S("SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n"),
                S("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\n"),
                S("HTTP/1.1\r\n\r\n"),
                S("HTTP/1.1 \r\n\r\n"),
                /* Header lines. */
                S("HTTP/1.1 200 OK\r\nNoColon\r\n\r\n"),
                S("HTTP/1.1 200 OK\r\n: no name\r\n\r\n"),
                S("HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n"),
                S("HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n"),
                S("HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 0\r\n\r\n"),
                S("HTTP/1.1 200 OK\r\nX(y): 1\r\n\r\n"),
                /* Content-Length. */
                S("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"),
                S("HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length: 3\r\n\r\nabc"),
                S("HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello"),
                S("HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n"),
                S("HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n"),
                S("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"),
                S("HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello"),
                S("HTTP/1.1 200 OK\r\nContent-Length: 0x5\r\n\r\nhello"),
                S("HTTP/1.1 200 OK\r\nContent-Length: 5 5\r\n\r\nhello"),
                /* Chunked framing. */
                S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
                S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5x\r\nhello\r\n0\r\n\r\n"),
                S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n"),
                S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n"),
                S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n;ext\r\n"),
                S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n"),
                S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n"),
                S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\rX0\r\n\r\n"),
                S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n"),
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++)
                for (int eof = 0; eof <= 1; eof++) {
                        struct cli_http_response r = sentinel;
                        int k = parse(cases[i].p, cases[i].n, eof, &r);
                        if (k != -EBADMSG)
                                fail_msg("malformed case %zu (eof %d): %d, want -EBADMSG", i, eof, k);
                        assert_untouched(&r);
                }
}

/* Cut short by the peer: more bytes could fix it (0) until the connection closes (-EBADMSG). */
static void truncated(void **state) {
        static const struct bytes cases[] = {
                S(""),
                S("HTTP/1.1 200 OK"),
                S("HTTP/1.1 200 OK\r\n"),
                S("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"),
                S("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhell"),
                S("HTTP/1.1 100 Continue\r\n\r\n"),
                S("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"),
                S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
                S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel"),
                S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello"),
                S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"),
                S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n"),
                S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n"),
                /* Right at the cap: allowed, but the bytes never came. */
                S("HTTP/1.1 200 OK\r\nContent-Length: 67108864\r\n\r\nabc"),
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                struct cli_http_response r = sentinel;
                int k = parse(cases[i].p, cases[i].n, false, &r);
                if (k != 0)
                        fail_msg("truncated case %zu: %d, want 0", i, k);
                assert_untouched(&r);
                k = parse(cases[i].p, cases[i].n, true, &r);
                if (k != -EBADMSG)
                        fail_msg("truncated case %zu at eof: %d, want -EBADMSG", i, k);
                assert_untouched(&r);
        }
}

static char *repeat(const char *head, char fill, size_t n, const char *tail, size_t *ret_len) {
        size_t hl = strlen(head), tl = strlen(tail);
        char *b = malloc(hl + n + tl);
        assert_non_null(b);
        memcpy(b, head, hl);
        memset(b + hl, fill, n);
        memcpy(b + hl + n, tail, tl);
        *ret_len = hl + n + tl;
        return b;
}

static void expect(const char *raw, size_t len, bool eof, int want, const char *what) {
        struct cli_http_response r = sentinel;
        int k = cli_http_parse(raw, len, eof, &r);
        if (k != want)
                fail_msg("%s (eof %d): %d, want %d", what, eof, k, want);
        if (k == 1)
                cli_http_response_done(&r);
        else
                assert_untouched(&r);
}

/* Past the caps: -EFBIG, before the bytes arrive where the framing says so up front. */
static void oversize(void **state) {
        static const struct bytes up_front[] = {
                S("HTTP/1.1 200 OK\r\nContent-Length: 67108865\r\n\r\n"),
                S("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999999\r\n\r\n"),
                S("HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551617\r\n\r\n"),
                S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4000001\r\n"),
                S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\n"),
                S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000001\r\n"),
        };
        for (size_t i = 0; i < N_ELEMS(up_front); i++)
                for (int eof = 0; eof <= 1; eof++)
                        expect(up_front[i].p, up_front[i].n, eof, -EFBIG, "oversize up front");

        size_t len;
        char *b;
        /* A header block past the cap, with or without its end in sight. */
        b = repeat("HTTP/1.1 200 OK\r\nX-Big: ", 'a', CLI_HTTP_MAX_HEADER_BYTES, "\r\n\r\n", &len);
        expect(b, len, false, -EFBIG, "big header");
        expect(b, len - 4, false, -EFBIG, "big header, unfinished");
        free(b);
        b = repeat("HTTP/1.1 200 OK\r\nX-Big: ", 'a', CLI_HTTP_MAX_HEADER_BYTES - 100, "\r\nContent-Length: 0\r\n\r\n",
                   &len);
        expect(b, len, false, 1, "header just under the cap");
        free(b);
        /* A status line that never ends. */
        b = repeat("HTTP/1.1 200 ", 'x', CLI_HTTP_MAX_HEADER_BYTES + 1, "", &len);
        expect(b, len, false, -EFBIG, "endless status line");
        free(b);

        /* Read-until-close: exactly the cap is fine, one byte more is not. */
        b = repeat("HTTP/1.1 200 OK\r\n\r\n", 'z', CLI_HTTP_MAX_BODY_BYTES + 1, "", &len);
        expect(b, len, true, -EFBIG, "until close, over the cap");
        struct cli_http_response r = sentinel;
        assert_int_equal(cli_http_parse(b, len - 1, true, &r), 1);
        assert_int_equal(r.body_len, CLI_HTTP_MAX_BODY_BYTES);
        cli_http_response_done(&r);
        free(b);

        /* Chunks that are each fine but together pass the cap. */
        const size_t first = 48u << 20;
        b = repeat("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3000000\r\n", 'c', first, "\r\n1000001\r\n",
                   &len);
        expect(b, len, false, -EFBIG, "chunks over the cap");
        free(b);
        b = repeat("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3000000\r\n", 'c', first, "\r\n1000000\r\n",
                   &len);
        expect(b, len, false, 0, "chunks at the cap, data to come");
        free(b);
}

/* A chunk-size line that never ends is garbage, not a size still arriving. */
static void endless_chunk_line(void **state) {
        size_t len;
        char *b = repeat("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", '0', 2000, "", &len);
        expect(b, len, false, -EBADMSG, "endless chunk-size line");
        free(b);
        b = repeat("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;", 'e', 500, "", &len);
        expect(b, len, false, 0, "long extension, still arriving");
        free(b);
}

/* Fed one byte at a time, as a slow socket would. */
static void byte_by_byte(void **state) {
        static const char raw[] = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                                  "X-Job-State: RUNNING\r\n\r\n4;x=1\r\nabcd\r\n1\r\ne\r\n0\r\nT: 1\r\n\r\n";
        size_t n = sizeof raw - 1;
        for (size_t k = 0; k <= n; k++) {
                struct cli_http_response r = sentinel;
                int e = parse(raw, k, false, &r);
                if (k < n) {
                        if (e != 0)
                                fail_msg("at %zu bytes: %d", k, e);
                        continue;
                }
                assert_int_equal(e, 1);
                assert_int_equal(r.status, 200);
                assert_string_equal(cli_http_header(&r, "x-job-state"), "RUNNING");
                assert_body(&r, "abcde", 5, "byte by byte");
                cli_http_response_done(&r);
        }
}

/* cli_http_parse_take reads what cli_http_parse reads; a body with a length stays where it
 * was read, and the bytes are the response's only once it is whole. */
static void take(void **state) {
        static const struct {
                struct bytes raw, body;
                bool eof, in_place;
        } cases[] = {
                { S("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"), S("hello"), false, true },
                { S("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"), S("ok"), false,
                  true },
                { S("HTTP/1.1 200 OK\r\n\r\nuntil close"), S("until close"), true, true },
                { S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"), S("ok"), false,
                  false },
                { S("HTTP/1.1 204 No Content\r\n\r\n"), S(""), false, false },
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                char what[32];
                snprintf(what, sizeof what, "take case %zu", i);
                char *buf = malloc(cases[i].raw.n + 1);
                assert_non_null(buf);
                memcpy(buf, cases[i].raw.p, cases[i].raw.n);
                struct cli_http_response r = sentinel;
                assert_int_equal(cli_http_parse_take(buf, cases[i].raw.n - 1, false, &r), 0);
                assert_untouched(&r);
                assert_int_equal(cli_http_parse_take(buf, cases[i].raw.n, cases[i].eof, &r), 1);
                assert_body(&r, cases[i].body.p, cases[i].body.n, what);
                assert_true((r.body_mem == buf) == cases[i].in_place);
                cli_http_response_done(&r); /* frees buf either way: ASan says if not */
        }
}

/* The size a reply's head tells, once the head is in. */
static void reply_size(void **state) {
        static const struct {
                struct bytes raw;
                int want;
                size_t size;
        } cases[] = {
                { S("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhe"), 1, 43 },
                { S("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"), 1, 43 },
                { S("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"), 0, 0 },
                { S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n"), 1, 0 },
                { S("HTTP/1.1 200 OK\r\n\r\nuntil close"), 1, 0 },
                { S("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"), 1, 0 },
                { S("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"), -EBADMSG, 0 },
                { S("HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n"), -EFBIG, 0 },
                { S("HTTP/9 200 OK\r\n\r\n"), -EBADMSG, 0 },
        };
        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                size_t size = 4242;
                int k = cli_http_reply_size(cases[i].raw.p, cases[i].raw.n, &size);
                if (k != cases[i].want || (k == 1 && size != cases[i].size) || (k != 1 && size != 4242))
                        fail_msg("reply size case %zu: %d, %zu; want %d, %zu", i, k, size, cases[i].want,
                                 cases[i].size);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(framed),      cmocka_unit_test(framed_extra_bytes), cmocka_unit_test(headers),
                cmocka_unit_test(until_close), cmocka_unit_test(malformed),          cmocka_unit_test(truncated),
                cmocka_unit_test(oversize),    cmocka_unit_test(endless_chunk_line), cmocka_unit_test(byte_by_byte),
                cmocka_unit_test(take),        cmocka_unit_test(reply_size),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
