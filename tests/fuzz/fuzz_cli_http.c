/* libFuzzer target: the CLI's HTTP response parser (src/cli/http.c, included so that its
 * static helpers are instrumented with it).  The input is what a daemon, or anything
 * squatting on its socket, could send.  It is parsed whole at EOF, whole while more may
 * come, and at a few prefixes, and the answers must agree. */
#include "../../src/cli/http.c"

#include "fuzz_common.h"

static void check_response(const struct cli_http_response *r, size_t len) {
        FUZZ_CHECK(r->status >= 200 || r->status == 101);
        FUZZ_CHECK(r->status <= 999);
        FUZZ_CHECK(r->reason);
        FUZZ_CHECK(r->body && r->body[r->body_len] == '\0');
        FUZZ_CHECK(r->body_len <= len && r->body_len <= CLI_HTTP_MAX_BODY_BYTES);
        FUZZ_CHECK(r->n_headers <= CLI_HTTP_MAX_HEADERS);
        for (size_t i = 0; i < r->n_headers; i++)
                FUZZ_CHECK(r->headers[i].name && r->headers[i].name[0] && r->headers[i].value);
        (void) cli_http_header(r, "Content-Length");
}

static bool same(const struct cli_http_response *a, const struct cli_http_response *b) {
        return a->status == b->status && a->body_len == b->body_len && memcmp(a->body, b->body, a->body_len) == 0 &&
               a->n_headers == b->n_headers;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 1024 * 1024)
                return 0;
        char *buf = fuzz_memdup(data, size);

        struct cli_http_response at_eof = { 0 }, more = { 0 };
        int ke = cli_http_parse(buf, size, true, &at_eof);
        FUZZ_CHECK(ke == 1 || ke == -EBADMSG || ke == -EFBIG);
        if (ke == 1)
                check_response(&at_eof, size);

        int km = cli_http_parse(buf, size, false, &more);
        FUZZ_CHECK(km == 1 || km == 0 || km == -EBADMSG || km == -EFBIG);
        if (km == 1) {
                /* A framed response is whole without EOF, and EOF changes nothing. */
                check_response(&more, size);
                FUZZ_CHECK(ke == 1 && same(&at_eof, &more));
        }

        /* Prefixes, as the client sees them read by read: never a different answer. */
        for (size_t cut = 1; cut < size && cut <= 4096; cut = cut * 3 + 1) {
                struct cli_http_response p = { 0 };
                int kp = cli_http_parse(buf, cut, false, &p);
                FUZZ_CHECK(kp == 1 || kp == 0 || kp == -EBADMSG || kp == -EFBIG);
                if (kp == 1) {
                        /* Whole at a prefix means whole, and the same, with the rest. */
                        check_response(&p, cut);
                        FUZZ_CHECK(km == 1 && same(&p, &more));
                }
                cli_http_response_done(&p);
        }

        cli_http_response_done(&at_eof);
        cli_http_response_done(&at_eof); /* safe twice */
        cli_http_response_done(&more);
        free(buf);
        return 0;
}
