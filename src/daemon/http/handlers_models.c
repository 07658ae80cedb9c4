/* GET /api/v1/models...: the published models (publish.h), each a plain call into publish_api.c.
 * The name and version come from the path, whose segments the route table bounded already
 * ({name}: 1-64 name characters). */
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "daemon/http/handlers.h"
#include "daemon/publish/publish.h"

#define PREFIX "/api/v1/models/"

/* The path's segments after /api/v1/models/: up to three, each at most 64 bytes. */
static size_t segments(const char *path, char seg[3][72]) {
        size_t n = 0;
        for (const char *p = path + strlen(PREFIX); *p && n < 3;) {
                size_t len = strcspn(p, "/");
                snprintf(seg[n++], sizeof seg[0], "%.*s", (int) (len < 71 ? len : 71), p);
                p += len + (p[len] == '/');
        }
        return n;
}

static void reply(struct gw_http_reply *rep, int status, json_t *o, const char *field, const char *why) {
        if (status == 200)
                gw_reply_json(rep, 200, o);
        else
                gw_reply_error(rep, status, field, "%s", why);
}

void gw_on_models(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                  struct gw_http_reply *rep, const struct gw_caller *c) {
        (void) req, (void) ctx, (void) c;
        char why[600];
        json_t *o = NULL;
        int status = gw_publish_models_json(gw_the_daemon(ud), &o, why, sizeof why);
        reply(rep, status, o, NULL, why);
}

void gw_on_model(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx, struct gw_http_reply *rep,
                 const struct gw_caller *c) {
        (void) ctx, (void) c;
        char seg[3][72], why[700];
        (void) segments(req->path, seg);
        json_t *o = NULL;
        const char *field = NULL;
        int status = gw_publish_model_json(gw_the_daemon(ud), seg[0], &o, &field, why, sizeof why);
        reply(rep, status, o, field, why);
}

void gw_on_model_version(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                         struct gw_http_reply *rep, const struct gw_caller *c) {
        (void) ctx, (void) c;
        char seg[3][72], why[700];
        (void) segments(req->path, seg);
        json_t *o = NULL;
        const char *field = NULL;
        int status = gw_publish_manifest_json(gw_the_daemon(ud), seg[0], seg[1], &o, &field, why, sizeof why);
        reply(rep, status, o, field, why);
}

void gw_on_model_file(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                      struct gw_http_reply *rep, const struct gw_caller *c) {
        (void) ctx, (void) c;
        char seg[3][72], why[700], disp[160];
        (void) segments(req->path, seg);
        const char *field = NULL;
        int fd;
        uint64_t size;
        int status =
                gw_publish_file_open(gw_the_daemon(ud), seg[0], seg[1], seg[2], &fd, &size, &field, why, sizeof why);
        if (status != 200)
                return gw_reply_error(rep, status, field, "%s", why);
        rep->status = 200;
        rep->content_type = "application/octet-stream";
        rep->has_file = true;
        rep->file_fd = fd;
        rep->file_size = size;
        snprintf(disp, sizeof disp, "attachment; filename=\"%s\"", seg[2]); /* {name} holds no quote */
        gw_http_reply_header(rep, "Content-Disposition", disp);
}
