/* The dashboard's files: GET / (index.html) and GET /static/NAME, from the copy of web/
 * embedded at build time, or from --web-dir DIR (development: edit, reload).
 *
 * A name is looked up, never joined blindly: it must be 1-128 characters of [A-Za-z0-9._-/]
 * with no empty, "." or ".." component and no component starting with a dot.  The path the
 * handler sees is already percent-decoded (so "%2e%2e" is ".." here and refused).  Embedded
 * files are found by exact name in a table; files under --web-dir are opened beneath the
 * directory with RESOLVE_BENEATH and no symbolic links. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "api/codec.h"
#include "base/cleanup.h"
#include "daemon/http/web.h"
#include "daemon/http/api.h"

#define NAME_MAX_LEN 128
#define FILE_MAX (4u << 20)

/* No inline scripts or styles, nothing from elsewhere, never in a frame. */
static const char csp[] = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
                          "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

static const struct {
        const char *ext, *type;
} types[] = {
        { ".html", "text/html; charset=utf-8" },
        { ".js", "text/javascript; charset=utf-8" },
        { ".css", "text/css; charset=utf-8" },
        { ".svg", "image/svg+xml" },
        { ".png", "image/png" },
        { ".json", "application/json" },
        { ".txt", "text/plain; charset=utf-8" },
};

static const char *type_of(const char *name) {
        const char *dot = strrchr(name, '.');
        for (size_t i = 0; dot && i < ELEMENTSOF(types); i++)
                if (!strcmp(dot, types[i].ext))
                        return types[i].type;
        return NULL;
}

/* Whether name is a plain relative path of allowed characters without dot components. */
static bool name_ok(const char *name) {
        size_t n = strlen(name);
        if (n == 0 || n > NAME_MAX_LEN)
                return false;
        bool comp_start = true;
        for (const char *p = name; *p; p++) {
                char ch = *p;
                bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                          ch == '.' || ch == '_' || ch == '-' || ch == '/';
                if (!ok || (comp_start && (ch == '/' || ch == '.')))
                        return false;
                comp_start = ch == '/';
        }
        return !comp_start;
}

static void security_headers(struct gw_http_reply *rep) {
        gw_http_reply_header(rep, "Content-Security-Policy", csp);
        gw_http_reply_header(rep, "Referrer-Policy", "no-referrer");
        gw_http_reply_header(rep, "X-Frame-Options", "DENY");
        gw_http_reply_header(rep, "Cross-Origin-Opener-Policy", "same-origin");
}

/* In the API's error form, as every other refusal of the daemon: a script fetching a page's
 * files reads errors one way. */
static void refuse(struct gw_http_reply *rep, int status, const char *msg) {
        size_t len;
        char *body = gw_codec_error_body(NULL, msg, &len);
        gw_http_reply_text(rep, status, "application/json", body, len);
        security_headers(rep);
}

static int open_beneath(const char *dir, const char *name) {
        _cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        struct open_how how = { .flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW,
                                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
        long fd = syscall(SYS_openat2, dfd, name, &how, sizeof how);
        if (fd < 0 && errno == ENOSYS)
                fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW); /* kernels before 5.6 */
        return fd < 0 ? -errno : (int) fd;
}

/* The file from --web-dir; 0, or -ENOENT / -EFBIG. */
static int read_dir_file(const char *dir, const char *name, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = open_beneath(dir, name);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return -ENOENT;
        if ((uint64_t) st.st_size > FILE_MAX)
                return -EFBIG;
        char *buf = gw_xmalloc((size_t) st.st_size + 1);
        ssize_t n = pread(fd, buf, (size_t) st.st_size, 0);
        if (n < 0) {
                free(buf);
                return -ENOENT;
        }
        *ret = buf;
        *ret_len = (size_t) n;
        return 0;
}

static const struct gw_web_asset *asset_of(const char *name) {
        for (size_t i = 0; i < gw_web_assets_n; i++)
                if (!strcmp(gw_web_assets[i].path, name))
                        return &gw_web_assets[i];
        return NULL;
}

/* A weak validator for the embedded copy: FNV-1a of the bytes, computed per request (the
 * files are small; a 304 saves the transfer, not the hash). */
static void etag_of(const unsigned char *p, size_t n, char *out, size_t outlen) {
        uint64_t h = 1469598103934665603ULL;
        for (size_t i = 0; i < n; i++)
                h = (h ^ p[i]) * 1099511628211ULL;
        snprintf(out, outlen, "\"%016llx\"", (unsigned long long) h);
}

/* The page at / carries what its reader sees when it is served (web_page.c): never cached,
 * and its body not the embedded file's, so no validator. */
static void serve_page(void *userdata, const struct gw_http_request *req, struct gw_http_reply *rep, const char *tmpl,
                       size_t len) {
        size_t page_len;
        char *page = gw_web_first_paint(userdata, req, tmpl, len, &page_len);
        gw_http_reply_text(rep, 200, "text/html; charset=utf-8", page, page_len);
        gw_http_reply_header(rep, "Cache-Control", "no-store");
        security_headers(rep);
}

static void serve(void *userdata, const struct gw_http_request *req, struct gw_http_reply *rep) {
        struct gw_daemon *d = gw_the_daemon(userdata);
        if (strcmp(req->method, "GET") && strcmp(req->method, "HEAD")) {
                refuse(rep, 405, "only GET and HEAD here");
                gw_http_reply_header(rep, "Allow", "GET, HEAD");
                return;
        }
        const char *name = !strcmp(req->path, "/") ? "index.html" : req->path + strlen("/static/");
        const char *type = name_ok(name) ? type_of(name) : NULL;
        if (!type)
                return refuse(rep, name_ok(name) ? 404 : 400, "no such file");
        char *body = NULL;
        size_t len = 0;
        char etag[24] = "";
        if (d->cfg->web_dir && d->cfg->web_dir[0]) {
                int r = read_dir_file(d->cfg->web_dir, name, &body, &len);
                if (r < 0)
                        return refuse(rep, r == -EFBIG ? 413 : 404, "no such file");
                if (!strcmp(name, "index.html")) {
                        serve_page(userdata, req, rep, body, len);
                        free(body);
                        return;
                }
        } else {
                const struct gw_web_asset *a = asset_of(name);
                if (!a)
                        return refuse(rep, 404, "no such file");
                if (!strcmp(name, "index.html"))
                        return serve_page(userdata, req, rep, (const char *) a->data, a->len);
                etag_of(a->data, a->len, etag, sizeof etag);
                const char *inm = gw_http_header(req, "If-None-Match");
                if (inm && !strcmp(inm, etag)) {
                        gw_http_reply_text(rep, 304, type, NULL, 0);
                        gw_http_reply_header(rep, "ETag", etag);
                        gw_http_reply_header(rep, "Cache-Control", "no-cache");
                        security_headers(rep);
                        return;
                }
                body = gw_xmalloc(a->len + 1);
                memcpy(body, a->data, a->len);
                len = a->len;
        }
        gw_http_reply_text(rep, 200, type, body, len);
        gw_http_reply_header(rep, "Cache-Control", "no-cache");
        if (etag[0])
                gw_http_reply_header(rep, "ETag", etag);
        security_headers(rep);
}

/* Whether name (a Host header's, or --listen's host, without the port) is this machine's
 * loopback: 127.0.0.0/8, ::1 or localhost. */
static bool loopback_name(const char *name, size_t len) {
        if (len > 2 && name[0] == '[' && name[len - 1] == ']')
                name++, len -= 2;
        return (len == 9 && !strncasecmp(name, "localhost", 9)) || (len == 3 && !memcmp(name, "::1", 3)) ||
               (len > 4 && !memcmp(name, "127.", 4) && strspn(name, "0123456789.") == len);
}

static size_t host_part(const char *hostport) {
        const char *end = hostport[0] == '[' ? strchr(hostport, ']') : NULL;
        if (end)
                return (size_t) (end - hostport) + 1;
        const char *colon = strrchr(hostport, ':');
        return colon ? (size_t) (colon - hostport) : strlen(hostport);
}

/* A web page of another site can point its own name at 127.0.0.1 (DNS rebinding) and read
 * what the loopback-only TCP door lets anyone read; its requests carry that name as Host.
 * A door opened beyond loopback on purpose (--listen 0.0.0.0:PORT) is not checked. */
static bool foreign_host(const struct gw_daemon *d, const struct gw_http_request *req) {
        const char *listen = d->cfg->listen;
        if (req->unix_door || !listen || !loopback_name(listen, host_part(listen)))
                return false;
        const char *host = gw_http_header(req, "Host");
        return host && !loopback_name(host, host_part(host));
}

void gw_web_handle(void *userdata, const struct gw_http_request *req, struct gw_http_reply *rep) {
        if (foreign_host(gw_the_daemon(userdata), req))
                return gw_reply_error(rep, 421, NULL,
                                      "Host '%.100s' is not this server: its TCP door answers to 127.0.0.1, localhost "
                                      "and [::1] only",
                                      gw_http_header(req, "Host"));
        if (!strcmp(req->path, "/") || !strncmp(req->path, "/static/", strlen("/static/")))
                return serve(userdata, req, rep);
        gw_api_handle(userdata, req, rep);
}
