/* Signing in to the web page with an API token (gpuward token create).
 *
 * POST /api/v1/session {"token": "gw_..."} checks the token and sets it as a cookie that
 * scripts cannot read (HttpOnly) and that the browser sends only with requests from this
 * site (SameSite=Strict).  The reply carries a CSRF value derived from the token; the page
 * sends it back in X-Gpuward-CSRF with every request that is not a GET.  Another site can
 * neither read that value (no CORS) nor add the header to a cross-origin request without a
 * preflight, which the daemon never grants; a request with the cookie and without the
 * header, or with a foreign Origin, is treated as a guest's (read-only).
 *
 * The cookie holds the token itself, so that revoking the token (gpuward token revoke) ends
 * every sign-in with it at once and a daemon restart ends none.  DELETE /api/v1/session
 * clears the cookie. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api/codec.h"
#include "base/sha256.h"
#include "core/token.h"
#include "daemon/http/web.h"

#define COOKIE_NAME "gw_token"
#define COOKIE_MAX_AGE "2592000" /* 30 days */
#define CSRF_LEN 32

static void csrf_of(const char *token, char out[CSRF_LEN + 1]) {
        struct gw_sha256 h;
        uint8_t digest[GW_SHA256_DIGEST_SIZE];
        static const char domain[] = "gpuward web csrf\n";
        gw_sha256_init(&h);
        gw_sha256_update(&h, domain, sizeof domain - 1);
        gw_sha256_update(&h, token, strlen(token));
        gw_sha256_final(&h, digest);
        gw_hex_encode(digest, CSRF_LEN / 2, out);
}

/* An Origin header, when the browser sends one, must name this very host and port. */
static bool same_origin(const struct gw_http_request *req) {
        const char *origin = gw_http_header(req, "Origin"), *host = gw_http_header(req, "Host");
        if (!origin)
                return true;
        if (!host)
                return false;
        const char *rest = !strncmp(origin, "http://", 7)    ? origin + 7
                           : !strncmp(origin, "https://", 8) ? origin + 8
                                                             : NULL;
        return rest && !strcmp(rest, host);
}

static bool safe_method(const struct gw_http_request *req) {
        return !strcmp(req->method, "GET") || !strcmp(req->method, "HEAD");
}

int gw_web_session_auth(const struct gw_http_request *req, char *auth, size_t n) {
        if (req->unix_door)
                return -ENOENT;
        const char *tok = gw_http_cookie(req, COOKIE_NAME);
        if (!tok || !gw_token_is_wellformed(tok))
                return -ENOENT;
        if (!safe_method(req)) {
                char want[CSRF_LEN + 1];
                csrf_of(tok, want);
                const char *got = gw_http_header(req, "X-Gpuward-CSRF");
                if (!got || strlen(got) != CSRF_LEN || !gw_memeq_ct(got, want, CSRF_LEN) || !same_origin(req))
                        return -EPERM;
        }
        snprintf(auth, n, "Bearer %s", tok);
        return 0;
}

static void set_cookie(struct gw_http_reply *rep, const char *token) {
        char v[256];
        if (token)
                snprintf(v, sizeof v, "%s=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%s", COOKIE_NAME, token,
                         COOKIE_MAX_AGE);
        else
                snprintf(v, sizeof v, "%s=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0", COOKIE_NAME);
        gw_http_reply_header(rep, "Set-Cookie", v);
        gw_http_reply_header(rep, "Cache-Control", "no-store");
}

static json_t *whoami_json(const struct gw_caller *c) {
        return json_pack("{s:o,s:o,s:s}", "user", gw_json_text(c->known ? c->user : ""), "uid",
                         c->known ? json_integer(c->uid) : json_null(), "role",
                         c->admin   ? "admin"
                         : c->known ? "user"
                                    : "guest");
}

static void session_get(const struct gw_http_request *req, struct gw_http_reply *rep, const struct gw_caller *c) {
        const char *tok = req->unix_door ? NULL : gw_http_cookie(req, COOKIE_NAME);
        bool signed_in = tok && gw_token_is_wellformed(tok) && c->known && !gw_http_header(req, "Authorization");
        json_t *o = whoami_json(c);
        json_object_set_new(o, "signed_in", json_boolean(signed_in));
        if (signed_in) {
                char csrf[CSRF_LEN + 1];
                csrf_of(tok, csrf);
                json_object_set_new(o, "csrf", json_string(csrf));
        }
        gw_reply_json(rep, 200, o);
        gw_http_reply_header(rep, "Cache-Control", "no-store");
}

static void session_create(struct gw_daemon *d, const struct gw_http_request *req, struct gw_http_reply *rep) {
        if (req->unix_door)
                return gw_reply_error(rep, 400, NULL, "sessions are for the web page on the TCP door");
        if (!same_origin(req))
                return gw_reply_error(rep, 403, NULL, "sign-in from another site refused");
        json_t *o = gw_parse_body(req, rep);
        if (!o)
                return;
        const char *tok = json_string_value(json_object_get(o, "token"));
        char auth[GW_TOKEN_SIZE + 16], why[192];
        struct gw_token_caller t;
        if (!tok || !gw_token_is_wellformed(tok)) {
                json_decref(o);
                return gw_reply_error(rep, 400, "token",
                                      "token: give a token from 'gpuward token create' (gw_ and 64 "
                                      "hex digits)");
        }
        snprintf(auth, sizeof auth, "Bearer %s", tok);
        if (gw_api_token_check(d, auth, &t, why, sizeof why) < 0) {
                json_decref(o);
                return gw_reply_error(rep, 401, "token", "this token is unknown or revoked");
        }
        if (t.agent) { /* it could read nothing the page shows */
                json_decref(o);
                gw_api_token_agent_refusal(t.id, why, sizeof why);
                return gw_reply_error(rep, 403, "token", "%s", why);
        }
        char csrf[CSRF_LEN + 1];
        csrf_of(tok, csrf);
        gw_reply_json(rep, 200,
                      json_pack("{s:b,s:o,s:I,s:s}", "signed_in", 1, "user", gw_json_text(t.user), "uid",
                                (json_int_t) t.uid, "csrf", csrf));
        set_cookie(rep, tok);
        json_decref(o);
}

void gw_on_session(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                   struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        if (!strcmp(req->method, "POST"))
                return session_create(d, req, rep);
        if (!strcmp(req->method, "DELETE")) {
                gw_reply_json(rep, 200, json_pack("{s:b}", "signed_in", 0));
                set_cookie(rep, NULL);
                return;
        }
        session_get(req, rep, c);
}
