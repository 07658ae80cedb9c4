/* What the daemon says of itself and of the caller: GET /healthz and GET /api/v1/whoami. */
#include <jansson.h>
#include <stdint.h>

#include "daemon/daemon.h"
#include "daemon/http/handlers.h"
#include "daemon/joblog/joblog.h"

void gw_on_health(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                  struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        uint64_t free_ = 0;
        /* Still ok: the daemon serves; the state disk's room is for admins to act on. */
        bool low = gw_state_disk_low(d, &free_);
        gw_reply_json(rep, 200,
                      json_pack("{s:s,s:I,s:b}", "status", "ok", "state_disk_free", (json_int_t) free_,
                                "state_disk_low", low));
}

/* How the caller was told apart: the Unix socket's peer credentials, a bearer token, the
 * web page's session cookie, or not at all. */
static const char *caller_auth(const struct gw_http_request *req, const struct gw_caller *c) {
        if (req->unix_door)
                return "unix-socket";
        if (!c->known)
                return "none";
        return gw_http_header(req, "Authorization") ? "token" : "session";
}

void gw_on_whoami(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                  struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        /* The limits a submission gets, so that a client can tell its user before submitting. */
        gw_reply_json(rep, 200,
                      json_pack("{s:s,s:o,s:s,s:s,s:I,s:I}", "user", c->known ? c->user : "", "uid",
                                c->known ? json_integer(c->uid) : json_null(), "role", gw_caller_role(c), "auth",
                                caller_auth(req, c), "default_time_limit",
                                (json_int_t) (d->cfg->default_time_limit / GW_USEC_PER_SEC), "max_time_limit",
                                (json_int_t) (d->cfg->max_time_limit / GW_USEC_PER_SEC)));
}
