/* API tokens: made on the Unix socket, listed and revoked by their owner (or an admin), and
 * checked for the TCP door, where a token stands for the account that made it. */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "api/codec.h"
#include "api/codec_share.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "core/token.h"
#include "daemon/http/handlers.h"

/* "expires": a lifetime as gpuward token create --expires takes it ("30d", "never"), or
 * whole seconds; absent or null: never. */
static int token_lifetime(const json_t *v, gw_usec_t *ret, struct gw_http_reply *rep) {
        char msg[GW_TOKEN_MSG_SIZE];
        if (!v || json_is_null(v)) {
                *ret = 0;
                return 0;
        }
        if (json_is_integer(v) && json_integer_value(v) > 0 &&
            json_integer_value(v) <= GW_TOKEN_LIFETIME_MAX / GW_USEC_PER_SEC) {
                *ret = json_integer_value(v) * GW_USEC_PER_SEC;
                return 0;
        }
        if (json_is_string(v) && gw_token_parse_lifetime(json_string_value(v), ret, msg, sizeof msg) == 0)
                return 0;
        if (json_is_string(v))
                gw_reply_error(rep, 400, "expires", "expires: %s", msg);
        else
                gw_reply_error(rep, 400, "expires",
                               "expires: a lifetime such as \"30d\", or seconds from 1 to 10 years");
        return -EINVAL;
}

/* "scope": absent or null for the account's whole rights, "ci" (a CI runner's: submit and
 * read its own jobs, and read the published models), "models" (read the published models
 * only), or "agent" (admins only: the snapshots an agent posts decide what every
 * user sees of the cluster).  0 with *ret (NULL: no scope), or -EINVAL / -EPERM after the
 * reply. */
static int token_scope(const json_t *v, const struct gw_caller *c, const char **ret, struct gw_http_reply *rep) {
        if (!v || json_is_null(v)) {
                *ret = NULL;
                return 0;
        }
        const char *s = json_is_string(v) ? json_string_value(v) : "";
        if (!strcmp(s, GW_TOKEN_SCOPE_CI)) {
                *ret = GW_TOKEN_SCOPE_CI;
                return 0;
        }
        if (!strcmp(s, GW_TOKEN_SCOPE_MODELS)) {
                *ret = GW_TOKEN_SCOPE_MODELS;
                return 0;
        }
        if (strcmp(s, GW_TOKEN_SCOPE_AGENT)) {
                gw_reply_error(rep, 400, "scope",
                               "scope: \"%s\" (a CI runner's token: submit and read its own jobs), "
                               "\"%s\" (a reader of published models), \"%s\" (a node agent's "
                               "token: node snapshots only), or null for your whole rights",
                               GW_TOKEN_SCOPE_CI, GW_TOKEN_SCOPE_MODELS, GW_TOKEN_SCOPE_AGENT);
                return -EINVAL;
        }
        if (!c->admin) {
                gw_reply_error(rep, 403, "scope",
                               "scope: only admins may make a node agent's token; %s has the role %s", c->user,
                               gw_caller_role(c));
                return -EPERM;
        }
        *ret = GW_TOKEN_SCOPE_AGENT;
        return 0;
}

/* "node": the node a node agent's token may post for, required with scope agent (a token of
 * any node would let one node's holder report every other's); refused without it.  0 with
 * *ret (NULL: none), or -EINVAL after the reply. */
static int token_node(const json_t *v, const char *scope, const char **ret, struct gw_http_reply *rep) {
        *ret = NULL;
        if (scope && strcmp(scope, GW_TOKEN_SCOPE_AGENT))
                scope = NULL; /* only an agent's token is bound to a node */
        if (!scope && (!v || json_is_null(v)))
                return 0;
        if (!scope) {
                gw_reply_error(rep, 400, "node", "node: only a node agent's token (scope \"%s\") is bound to a node",
                               GW_TOKEN_SCOPE_AGENT);
                return -EINVAL;
        }
        if (!v || json_is_null(v)) {
                gw_reply_error(rep, 400, "node",
                               "node: required for a node agent's token: the node's Slurm name, "
                               "whose snapshots alone it may post");
                return -EINVAL;
        }
        if (!gw_token_node_name_valid(json_string_value(v))) {
                gw_reply_error(rep, 400, "node", "node: the node's Slurm name, 1-64 letters, digits, '.', '-' or '_'");
                return -EINVAL;
        }
        *ret = json_string_value(v);
        return 0;
}

void gw_on_token_create(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                        struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        if (!req->unix_door)
                return gw_reply_error(rep, 403, NULL, "tokens are made on the Unix socket only (gpuward token create)");
        json_t *o = req->body_len ? gw_parse_body(req, rep) : json_object();
        if (!o)
                return;
        static const char *const fields[] = { "name", "expires", "scope", "node" };
        const char *name, *scope = NULL, *node = NULL;
        if (gw_body_check(o, fields, ELEMENTSOF(fields), "a token", "name", &name, rep) < 0) {
                json_decref(o);
                return;
        }
        if (name && (strlen(name) > 64 || strpbrk(name, "\n\r\t"))) {
                json_decref(o);
                return gw_reply_error(rep, 400, "name", "name: at most 64 characters on one line");
        }
        gw_usec_t now = d->now_wall, life = 0;
        if (token_lifetime(json_object_get(o, "expires"), &life, rep) < 0 ||
            token_scope(json_object_get(o, "scope"), c, &scope, rep) < 0 ||
            token_node(json_object_get(o, "node"), scope, &node, rep) < 0) {
                json_decref(o);
                return;
        }
        gw_usec_t expires = life ? now + life : 0;
        uint8_t rnd[GW_TOKEN_RANDOM_BYTES];
        char token[GW_TOKEN_SIZE], hash[GW_TOKEN_HASH_SIZE];
        if (getrandom(rnd, sizeof rnd, 0) != (ssize_t) sizeof rnd) {
                json_decref(o);
                return gw_reply_error(rep, 503, NULL, "no randomness available");
        }
        gw_token_format(rnd, token);
        (void) gw_token_hash(token, hash);
        int64_t id;
        if (gw_store_token_add(d->store, c->uid, c->user, name ? name : "", hash, expires, scope, node, &id) < 0) {
                json_decref(o);
                return gw_reply_store_error(d, rep, "cannot record the token");
        }
        log_info("token %lld made for %s%s%s%s%s%s", (long long) id, c->user, scope ? " (scope " : "",
                 scope ? scope : "", node ? ", node " : "", node ? node : "", scope ? ")" : "");
        struct gw_codec_token_made made = { .id = id,
                                            .user = c->user,
                                            .name = name,
                                            .token = token,
                                            .expires = expires,
                                            .scope = scope,
                                            .node = node };
        gw_reply_json(rep, 201, gw_codec_token_made(&made));
        json_decref(o);
}

struct token_list {
        json_t *arr;
        gw_usec_t now;
        const char *user; /* NULL: every token (an admin's list) */
};

/* Whether the passwd database says the token's account is gone: no such name, or the name
 * is another uid's now.  Asked afresh, not from the account cache: a list must not show
 * a deleted user's tokens for the cache's lifetime.  A lookup that fails is no answer, and
 * the token stays listed. */
static bool token_departed(const struct gw_store_token *t) {
        struct passwd pw, *pp = NULL;
        char buf[4096];
        int r = getpwnam_r(t->user, &pw, buf, sizeof buf, &pp);
        if (r != 0 && r != ENOENT && r != ESRCH && r != EBADF && r != EPERM)
                return false;
        return !pp || pp->pw_uid != t->uid;
}

static void token_row(const struct gw_store_token *t, void *userdata) {
        struct token_list *tl = userdata;
        if (tl->user && strcmp(t->user, tl->user)) /* an earlier account's of the same uid */
                return;
        if (token_departed(t)) /* unusable (the first use revokes it): not the owner's any more */
                return;
        json_array_append_new(tl->arr, gw_codec_token(t, tl->now));
}

void gw_on_token_list(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                      struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        struct token_list tl = { .arr = json_array(), .now = d->now_wall, .user = c->admin ? NULL : c->user };
        (void) gw_store_tokens(d->store, !c->admin, c->uid, token_row, &tl);
        gw_reply_json(rep, 200, json_pack("{s:o}", "tokens", tl.arr));
}

void gw_on_token_revoke(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                        struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        int r = gw_store_token_revoke(d->store, ctx->id, !c->admin, c->uid);
        if (r == -ENOENT)
                return gw_reply_error(rep, 404, "id", "no token %lld of yours", (long long) ctx->id);
        if (r < 0)
                return gw_reply_store_error(d, rep, "cannot revoke it");
        gw_reply_json(rep, 200, json_pack("{s:I,s:b}", "id", (json_int_t) ctx->id, "revoked", 1));
}

/* A token stands for the account that made it, not for its uid: once the account is deleted
 * the token dies with it, and the next account given the uid does not inherit it.  0 when
 * the account is still the token's; else -ENOENT (deleted) or -ESTALE (the uid is another
 * account's) with what says it, or -EIO (cannot be looked up now). */
static int token_account(struct gw_daemon *d, const struct gw_store_token *t, char *what, size_t n) {
        const struct gw_account *now = NULL;
        int r = gw_userdb_same_account(d->users, t->uid, t->user, d->now, &now);
        if (r == -ESTALE)
                snprintf(what, n, "its account '%s' (uid %u) no longer exists; uid %u is now the account '%s'", t->user,
                         (unsigned) t->uid, (unsigned) t->uid, now->name);
        else if (r == -ENOENT)
                snprintf(what, n, "its account '%s' (uid %u) no longer exists", t->user, (unsigned) t->uid);
        else if (r == -EIO)
                snprintf(what, n, "the account '%s' (uid %u) cannot be looked up now; try again", t->user,
                         (unsigned) t->uid);
        return r;
}

/* 0, or -EPERM with why when the token's account is gone (the token is revoked then) or
 * cannot be looked up. */
static int token_account_check(struct gw_daemon *d, const struct gw_store_token *t, char *why, size_t why_size) {
        char what[160];
        int r = token_account(d, t, what, sizeof what);
        if (r == 0)
                return 0;
        if (r == -EIO) {
                snprintf(why, why_size, "token %lld: %s", (long long) t->id, what);
                return -EPERM;
        }
        bool revoked = gw_store_token_revoke(d->store, t->id, false, 0) == 0;
        snprintf(why, why_size, "token %lld %s: %s", (long long) t->id, revoked ? "is revoked" : "is refused", what);
        log_warn("token %lld of %s (uid %u) %s: %s", (long long) t->id, t->user, (unsigned) t->uid,
                 revoked ? "revoked" : "refused (the revocation could not be recorded)", what);
        return -EPERM;
}

#define TOKEN_USED_STEP (60 * GW_USEC_PER_SEC)

/* The caller behind an "Authorization: Bearer gw_..." header on the TCP door. */
int gw_api_token_check(struct gw_daemon *d, const char *header, struct gw_token_caller *ret, char *why,
                       size_t why_size) {
        const char *tok;
        size_t len;
        char token[GW_TOKEN_SIZE], hash[GW_TOKEN_HASH_SIZE];
        if (gw_token_from_bearer(header, &tok, &len) < 0 || len >= sizeof token) {
                snprintf(why, why_size,
                         "the Authorization header must be 'Bearer gw_' and 64 hex digits, as "
                         "'gpuward token create' makes");
                return -EINVAL;
        }
        memcpy(token, tok, len);
        token[len] = '\0';
        struct gw_store_token t;
        if (gw_token_hash(token, hash) < 0 || gw_store_token_find(d->store, hash, &t) < 0 ||
            !gw_token_matches(token, t.hash)) {
                snprintf(why, why_size, "the bearer token is unknown here ('gpuward token list' shows yours)");
                return -EPERM;
        }
        if (t.revoked) {
                char what[160];
                int r = token_account(d, &t, what, sizeof what);
                snprintf(why, why_size, "token %lld was revoked%s%s", (long long) t.id,
                         r == -ENOENT || r == -ESTALE ? ": " : "", r == -ENOENT || r == -ESTALE ? what : "");
                return -EPERM;
        }
        if (gw_token_expired(t.expires, d->now_wall)) {
                time_t at = (time_t) (t.expires / GW_USEC_PER_SEC);
                struct tm tm;
                char when[64] = "?";
                if (localtime_r(&at, &tm))
                        (void) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %Z", &tm);
                snprintf(why, why_size, "token %lld%s%s%s expired at %s; make a new one with 'gpuward token create'",
                         (long long) t.id, t.name[0] ? " (" : "", t.name, t.name[0] ? ")" : "", when);
                return -EKEYEXPIRED;
        }
        if (token_account_check(d, &t, why, why_size) < 0)
                return -EPERM;
        /* A commit per request would make a busy agent or script a writer of the store at
         * its own rate; "last used" to the minute is what 'gpuward token list' needs. */
        if (d->now_wall - t.last_used >= TOKEN_USED_STEP || d->now_wall < t.last_used)
                (void) gw_store_token_used(d->store, t.id);
        ret->id = t.id;
        ret->uid = t.uid;
        snprintf(ret->user, sizeof ret->user, "%s", t.user);
        ret->agent = !strcmp(t.scope, GW_TOKEN_SCOPE_AGENT);
        ret->ci = !strcmp(t.scope, GW_TOKEN_SCOPE_CI);
        ret->models = !strcmp(t.scope, GW_TOKEN_SCOPE_MODELS);
        snprintf(ret->node, sizeof ret->node, "%s", t.node);
        return 0;
}

void gw_api_token_ci_refusal(int64_t id, char *why, size_t why_size) {
        snprintf(why, why_size, "token %lld is a CI runner's (scope ci): it may only submit jobs and read its own",
                 (long long) id);
}

void gw_api_token_models_refusal(int64_t id, char *why, size_t why_size) {
        snprintf(why, why_size, "token %lld is a models reader's (scope models): it may only read published models",
                 (long long) id);
}

void gw_api_token_agent_refusal(int64_t id, char *why, size_t why_size) {
        snprintf(why, why_size, "token %lld is a node agent's (scope agent): it may only post node snapshots",
                 (long long) id);
}
