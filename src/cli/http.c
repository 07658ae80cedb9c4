/* HTTP/1.1 response parsing for the CLI (see http.h).  Pure: no I/O, no globals. */
#include "cli/http.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A chunk-size line longer than this is garbage, not a size. */
#define CHUNK_LINE_MAX 1024u

/* Finds the next line starting at *pos.  Returns 1 with [*line, *line + *n) (no CR LF)
 * and *pos past it, 0 when no newline has arrived yet.  Bare LF is accepted, as most
 * clients do. */
static int next_line(const char *buf, size_t len, size_t *pos, const char **line, size_t *n) {
        if (*pos >= len)
                return 0;
        const char *nl = memchr(buf + *pos, '\n', len - *pos);
        if (!nl)
                return 0;
        size_t end = (size_t) (nl - buf);
        *line = buf + *pos;
        *n = end - *pos;
        if (*n > 0 && (*line)[*n - 1] == '\r')
                (*n)--;
        *pos = end + 1;
        return 1;
}

static char *dup_range(const char *s, size_t n) {
        char *p = malloc(n + 1);
        if (!p)
                return NULL;
        memcpy(p, s, n);
        p[n] = '\0';
        return p;
}

static int parse_status_line(const char *l, size_t n, struct cli_http_response *r) {
        /* "HTTP/1.1 200 OK"; the reason phrase may be empty or missing. */
        if (n < 12 || memcmp(l, "HTTP/1.", 7) != 0 || !isdigit((unsigned char) l[7]) || l[8] != ' ')
                return -EBADMSG;
        int status = 0;
        for (size_t i = 9; i < 12; i++) {
                if (!isdigit((unsigned char) l[i]))
                        return -EBADMSG;
                status = status * 10 + (l[i] - '0');
        }
        if (status < 100 || (n > 12 && l[12] != ' '))
                return -EBADMSG;
        size_t off = n > 12 ? 13 : 12;
        r->status = status;
        r->reason = dup_range(l + off, n - off);
        return r->reason ? 0 : -ENOMEM;
}

static bool is_token_char(unsigned char c) { return c > 32 && c < 127 && !strchr("()<>@,;:\\\"/[]?={}", c); }

static int parse_header_line(const char *l, size_t n, struct cli_http_response *r) {
        const char *colon = memchr(l, ':', n);
        if (!colon || colon == l)
                return -EBADMSG; /* also rejects obsolete line folding */
        size_t nlen = (size_t) (colon - l);
        for (size_t i = 0; i < nlen; i++)
                if (!is_token_char((unsigned char) l[i]))
                        return -EBADMSG;
        const char *v = colon + 1, *end = l + n;
        while (v < end && (*v == ' ' || *v == '\t'))
                v++;
        while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
        if (r->n_headers >= CLI_HTTP_MAX_HEADERS)
                return -EFBIG;
        struct cli_http_header *h = realloc(r->headers, (r->n_headers + 1) * sizeof(*h));
        if (!h)
                return -ENOMEM;
        r->headers = h;
        h[r->n_headers].name = dup_range(l, nlen);
        h[r->n_headers].value = dup_range(v, (size_t) (end - v));
        r->n_headers++;
        if (!h[r->n_headers - 1].name || !h[r->n_headers - 1].value)
                return -ENOMEM;
        return 0;
}

/* Status line and headers from start.  1 with *ret_body at the first body byte, 0 for
 * more bytes, <0 on error (r is then released by the caller). */
static int parse_head(const char *buf, size_t len, size_t start, struct cli_http_response *r, size_t *ret_body) {
        size_t pos = start;
        const char *line;
        size_t n;
        bool first = true;
        for (;;) {
                if (!next_line(buf, len, &pos, &line, &n))
                        return len - start > CLI_HTTP_MAX_HEADER_BYTES ? -EFBIG : 0;
                if (pos - start > CLI_HTTP_MAX_HEADER_BYTES)
                        return -EFBIG;
                if (first) {
                        int k = parse_status_line(line, n, r);
                        if (k < 0)
                                return k;
                        first = false;
                        continue;
                }
                if (n == 0)
                        break;
                int k = parse_header_line(line, n, r);
                if (k < 0)
                        return k;
        }
        *ret_body = pos;
        return 1;
}

static bool is_chunked(const struct cli_http_response *r) {
        const char *te = cli_http_header(r, "Transfer-Encoding");
        if (!te)
                return false;
        /* chunked must be the last coding when present at all. */
        size_t n = strlen(te);
        while (n > 0 && (te[n - 1] == ' ' || te[n - 1] == '\t'))
                n--;
        return n >= 7 && strncasecmp(te + n - 7, "chunked", 7) == 0;
}

static int parse_size_dec(const char *s, size_t *ret) {
        if (!*s)
                return -EBADMSG;
        size_t v = 0;
        for (; *s; s++) {
                if (!isdigit((unsigned char) *s))
                        return -EBADMSG;
                if (v > CLI_HTTP_MAX_BODY_BYTES)
                        return -EFBIG;
                v = v * 10 + (size_t) (*s - '0');
        }
        if (v > CLI_HTTP_MAX_BODY_BYTES)
                return -EFBIG;
        *ret = v;
        return 0;
}

/* Content-Length, checking that repeated headers agree (smuggling defence). 1 found, 0 none. */
static int content_length(const struct cli_http_response *r, size_t *ret) {
        bool found = false;
        size_t v = 0;
        for (size_t i = 0; i < r->n_headers; i++) {
                if (strcasecmp(r->headers[i].name, "Content-Length") != 0)
                        continue;
                size_t k;
                int e = parse_size_dec(r->headers[i].value, &k);
                if (e < 0)
                        return e;
                if (found && k != v)
                        return -EBADMSG;
                found = true;
                v = k;
        }
        if (found)
                *ret = v;
        return found;
}

static int parse_chunk_size(const char *l, size_t n, size_t *ret) {
        size_t v = 0, i = 0;
        for (; i < n && isxdigit((unsigned char) l[i]); i++) {
                if (v > CLI_HTTP_MAX_BODY_BYTES)
                        return -EFBIG;
                int c = tolower((unsigned char) l[i]);
                v = v * 16 + (size_t) (isdigit(c) ? c - '0' : c - 'a' + 10);
        }
        if (i == 0 || (i < n && l[i] != ';' && l[i] != ' ' && l[i] != '\t'))
                return -EBADMSG;
        if (v > CLI_HTTP_MAX_BODY_BYTES)
                return -EFBIG;
        *ret = v;
        return 0;
}

/* Walks a chunked body from pos.  With out == NULL it only measures (cheap: it jumps over
 * data, so calling it after every read stays linear in the number of chunks); with out it
 * copies the data.  1 complete (*ret_total = data bytes), 0 more bytes needed, <0 error. */
static int chunked_walk(const char *buf, size_t len, size_t pos, char *out, size_t *ret_total) {
        size_t total = 0;
        const char *line;
        size_t n;
        for (;;) {
                size_t at = pos;
                if (!next_line(buf, len, &pos, &line, &n))
                        return len - at > CHUNK_LINE_MAX ? -EBADMSG : 0;
                size_t size;
                int k = parse_chunk_size(line, n, &size);
                if (k < 0)
                        return k;
                if (size == 0)
                        break;
                if (size > CLI_HTTP_MAX_BODY_BYTES - total)
                        return -EFBIG;
                if (len - pos < size + 1)
                        return 0;
                if (out)
                        memcpy(out + total, buf + pos, size);
                total += size;
                pos += size;
                /* The data is followed by CRLF (or a bare LF). */
                if (buf[pos] == '\r')
                        pos++;
                if (pos >= len)
                        return 0;
                if (buf[pos] != '\n')
                        return -EBADMSG;
                pos++;
        }
        /* Trailer fields up to an empty line; we do not use them. */
        for (;;) {
                if (!next_line(buf, len, &pos, &line, &n))
                        return 0;
                if (n == 0)
                        break;
        }
        *ret_total = total;
        return 1;
}

/* The body, n bytes at buf + pos: a copy, or (own: buf, which has a byte to spare after the
 * body) where it lies. */
static int set_body(struct cli_http_response *r, const char *buf, size_t pos, size_t n, char *own) {
        if (own) {
                r->body = own + pos;
                r->body_mem = own;
        } else {
                r->body = r->body_mem = malloc(n + 1);
                if (!r->body)
                        return -ENOMEM;
                if (n)
                        memcpy(r->body, buf + pos, n);
        }
        r->body[n] = '\0';
        r->body_len = n;
        return 1;
}

static int parse_body(const char *buf, size_t len, size_t pos, bool eof, char *own, struct cli_http_response *r) {
        if (r->status == 204 || r->status == 304)
                return set_body(r, "", 0, 0, NULL);
        if (is_chunked(r)) {
                size_t total;
                int k = chunked_walk(buf, len, pos, NULL, &total);
                if (k <= 0)
                        return k == 0 && eof ? -EBADMSG : k;
                r->body = r->body_mem = malloc(total + 1);
                if (!r->body)
                        return -ENOMEM;
                (void) chunked_walk(buf, len, pos, r->body, &total);
                r->body[total] = '\0';
                r->body_len = total;
                return 1;
        }
        size_t cl;
        int k = content_length(r, &cl);
        if (k < 0)
                return k;
        if (k > 0) {
                if (len - pos >= cl)
                        return set_body(r, buf, pos, cl, own);
                return eof ? -EBADMSG : 0;
        }
        if (!eof)
                return 0;
        if (len - pos > CLI_HTTP_MAX_BODY_BYTES)
                return -EFBIG;
        return set_body(r, buf, pos, len - pos, own);
}

/* cli_http_parse; own: buf, which the response may keep (its body then lies in it). */
static int parse_response(const char *buf, size_t len, bool eof, char *own, struct cli_http_response *ret) {
        size_t start = 0;
        for (;;) {
                struct cli_http_response r = { 0 };
                size_t body;
                int k = parse_head(buf, len, start, &r, &body);
                if (k == 1 && r.status < 200 && r.status != 101) {
                        /* 100 Continue and friends precede the real answer. */
                        cli_http_response_done(&r);
                        start = body;
                        continue;
                }
                if (k == 1)
                        k = parse_body(buf, len, body, eof, own, &r);
                else if (k == 0 && eof)
                        k = -EBADMSG;
                if (k <= 0) {
                        cli_http_response_done(&r);
                        return k;
                }
                *ret = r;
                return 1;
        }
}

int cli_http_parse(const char *buf, size_t len, bool eof, struct cli_http_response *ret) {
        return parse_response(buf, len, eof, NULL, ret);
}

int cli_http_parse_take(char *buf, size_t len, bool eof, struct cli_http_response *ret) {
        int k = parse_response(buf, len, eof, buf, ret);
        if (k > 0 && ret->body_mem != buf)
                free(buf); /* the body was copied out (chunked) or there is none */
        return k;
}

int cli_http_reply_size(const char *buf, size_t len, size_t *ret_size) {
        struct cli_http_response r = { 0 };
        size_t body, cl = 0;
        int k = parse_head(buf, len, 0, &r, &body);
        if (k == 1 && r.status >= 200 && r.status != 204 && r.status != 304 && !is_chunked(&r)) {
                k = content_length(&r, &cl);
                cl = k > 0 ? body + cl : 0;
                k = k < 0 ? k : 1;
        }
        cli_http_response_done(&r);
        if (k == 1)
                *ret_size = cl;
        return k;
}

const char *cli_http_header(const struct cli_http_response *r, const char *name) {
        for (size_t i = 0; i < r->n_headers; i++)
                if (strcasecmp(r->headers[i].name, name) == 0)
                        return r->headers[i].value;
        return NULL;
}

void cli_http_response_done(struct cli_http_response *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->n_headers; i++) {
                free(r->headers[i].name);
                free(r->headers[i].value);
        }
        free(r->headers);
        free(r->reason);
        free(r->body_mem);
        *r = (struct cli_http_response){ 0 };
}
