/* API handlers for bookings, the schedule and quotas (tokens: handlers_token.c); what they
 * reply is encoded by api/codec_share.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/when.h"
#include "api/codec.h"
#include "api/codec_share.h"
#include "daemon/http/handlers.h"
#include "daemon/sharing/sharing.h"
#include "daemon/training/training.h"

/* A time given as Unix seconds or as text ("tomorrow 09:00", ISO 8601). */
static int get_when(const json_t *o, const char *key, gw_usec_t now, gw_usec_t *ret, struct gw_http_reply *rep) {
        const json_t *v = json_object_get(o, key);
        if (json_is_number(v)) {
                *ret = (gw_usec_t) (json_number_value(v) * 1e6);
                return 0;
        }
        if (json_is_string(v) && gw_parse_when(json_string_value(v), now, ret) == 0)
                return 0;
        gw_reply_error(rep, 400, key,
                       "%s: give Unix seconds or a time like \"tomorrow 09:00\", \"now+2h\", "
                       "\"2026-11-22T09:00:00Z\"",
                       key);
        return -EINVAL;
}

static int get_span(const json_t *o, const char *key, gw_usec_t *ret, struct gw_http_reply *rep) {
        const json_t *v = json_object_get(o, key);
        if (json_is_integer(v) && json_integer_value(v) > 0) {
                *ret = json_integer_value(v) * GW_USEC_PER_SEC;
                return 0;
        }
        if (json_is_string(v) && gw_parse_duration(json_string_value(v), ret) == 0)
                return 0;
        gw_reply_error(rep, 400, key, "%s: give seconds or a duration like 4h, 90m", key);
        return -EINVAL;
}

static bool rate_limited(struct gw_daemon *d, const struct gw_caller *c, int64_t n, struct gw_http_reply *rep) {
        if (c->admin)
                return false;
        int64_t wait = gw_sharing_rate(d, c->uid, n);
        if (wait == -E2BIG) {
                gw_reply_error(rep, 429, "jobs", "a batch of %lld submissions is more than %s may send at once (%d)",
                               (long long) n, c->user, d->cfg->rate_burst);
                return true;
        }
        if (wait == -ENOSPC) /* every tracked user is still within a burst: as the header says */
                wait = 1;
        if (wait <= 0)
                return false;
        char after[32];
        snprintf(after, sizeof after, "%lld", (long long) wait);
        gw_reply_error(rep, 429, NULL, "too many submissions and bookings from %s (at most %d a minute, %d at once)",
                       c->user, d->cfg->rate_per_min, d->cfg->rate_burst);
        gw_http_reply_header(rep, "Retry-After", after);
        return true;
}

bool gw_api_rate_limited(struct gw_daemon *d, const struct gw_caller *c, struct gw_http_reply *rep) {
        return rate_limited(d, c, 1, rep);
}

bool gw_api_rate_limited_n(struct gw_daemon *d, const struct gw_caller *c, int64_t n, struct gw_http_reply *rep) {
        return rate_limited(d, c, n, rep);
}

void gw_api_rate_undo(struct gw_daemon *d, const struct gw_caller *c, int64_t n) {
        if (!c->admin)
                gw_sharing_rate_undo(d, c->uid, n);
}

/* Books for the caller (daemon/sharing/sharing.h) and replies what came of it. */
static void book(struct gw_daemon *d, const struct gw_book_request *req, struct gw_http_reply *rep) {
        struct gw_book_result r;
        gw_sharing_book(d, req, &r);
        if (r.status == 503)
                return gw_reply_store_error(d, rep, "cannot record the booking");
        if (r.status == 409) /* with the nearest time it would fit, if any */
                return gw_reply_json(rep, 409, gw_codec_booking_refusal(r.message, r.nearest_start, r.nearest_end));
        if (r.status != 201)
                return gw_reply_error(rep, r.status, r.field[0] ? r.field : NULL, "%s", r.message);
        gw_reply_json(rep, 201, gw_codec_booking(&r.booking));
}

/* What a booking asks for, checked as far as it can be without the calendar; 0, or -EINVAL
 * after a 400.  *ret_name points into o. */
static int decode_booking(const json_t *o, gw_usec_t now, int *ret_ngpus, gw_usec_t *ret_start, gw_usec_t *ret_len,
                          const char **ret_name, struct gw_http_reply *rep) {
        static const char *const fields[] = { "ngpus", "start", "duration", "name" };
        struct gw_codec_error err;
        long long ngpus = 0;
        if (gw_codec_check_fields(o, fields, ELEMENTSOF(fields), "a booking", &err) < 0 ||
            gw_codec_get_int(o, "ngpus", LLONG_MIN, LLONG_MAX, &ngpus, &err) < 0 ||
            gw_codec_get_string(o, "name", ret_name, &err) < 0) {
                gw_reply_error(rep, 400, err.field, "%s", err.message);
                return -EINVAL;
        }
        if (ngpus < 1 || ngpus > 64) {
                gw_reply_error(rep, 400, "ngpus", "ngpus: a booking needs 1 to 64 GPUs");
                return -EINVAL;
        }
        if (get_when(o, "start", now, ret_start, rep) < 0 || get_span(o, "duration", ret_len, rep) < 0)
                return -EINVAL;
        *ret_ngpus = (int) ngpus;
        return 0;
}

void gw_on_booking_create(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                          struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        json_t *o = gw_parse_body(req, rep);
        if (!o)
                return;
        struct gw_book_request br = { .uid = c->uid, .user = c->user, .admin = c->admin };
        /* The rate limit is charged only for a well-formed request: a typo must not use up
         * the sender's budget. */
        if (decode_booking(o, d->now_wall, &br.ngpus, &br.start, &br.len, &br.name, rep) == 0 &&
            !rate_limited(d, c, 1, rep)) {
                book(d, &br, rep);
                if (rep->status != 201) /* refused after all: as a refused batch, it costs nothing */
                        gw_api_rate_undo(d, c, 1);
        }
        json_decref(o);
}

void gw_on_booking_list(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                        struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        json_t *arr = json_array();
        for (size_t i = 0; i < d->sharing->n_bookings; i++)
                json_array_append_new(arr, gw_codec_booking(&d->sharing->bookings[i]));
        gw_reply_json(rep, 200, json_pack("{s:o}", "bookings", arr));
}

/* A deny's optional body, {"reason": "..."}: the reason, for the booking's owner, into why
 * ("" when absent).  0, or -EINVAL after a 400 naming the field. */
static int decode_deny(const struct gw_http_request *req, char *why, size_t n, struct gw_http_reply *rep) {
        static const char *const fields[] = { "reason" };
        const char *r;
        why[0] = '\0';
        if (req->body_len == 0)
                return 0;
        json_t *o = gw_parse_body(req, rep);
        if (!o)
                return -EINVAL;
        int k = gw_body_check(o, fields, ELEMENTSOF(fields), "a deny", "reason", &r, rep);
        size_t len = 0; /* characters, not bytes: UTF-8 continuation bytes do not count */
        for (const char *p = r; k == 0 && p && *p; p++)
                len += ((unsigned char) *p & 0xC0) != 0x80;
        if (k == 0 && r && (len == 0 || len > 200 || strpbrk(r, "\n\r"))) {
                gw_reply_error(rep, 400, "reason", "reason: 1-200 characters on one line");
                k = -EINVAL;
        }
        if (k == 0 && r)
                snprintf(why, n, "%s", r);
        json_decref(o);
        return k;
}

/* The note said as "denied by ann: REASON", cut on a character boundary to fit. */
static void booking_note(char *note, size_t n, const char *done, const char *user, const char *why) {
        int k = snprintf(note, n, "%s by %s%s%s", done, user, *why ? ": " : "", why);
        if (k < 0 || (size_t) k < n)
                return;
        /* The last character's lead byte, and whether all its bytes made it. */
        size_t end = n - 1, lead = end;
        while (lead > 0 && ((unsigned char) note[lead - 1] & 0xC0) == 0x80)
                lead--;
        if (lead == 0)
                return;
        unsigned char c = (unsigned char) note[--lead];
        size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        if (end - lead < need)
                note[lead] = '\0';
}

void gw_on_booking_change(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                          struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        struct gw_store_booking *b = gw_sharing_booking(d, ctx->id);
        if (!b)
                return gw_reply_error(rep, 404, "id", "no open booking %lld", (long long) ctx->id);
        bool approve = strstr(req->path, "/approve") != NULL, deny = strstr(req->path, "/deny") != NULL;
        if ((approve || deny) && !c->admin)
                return gw_reply_error(rep, 403, NULL, "only admins may approve or deny bookings");
        if (!approve && !deny && !c->admin && (b->uid != c->uid || strcmp(b->user, c->user)))
                return gw_reply_error(rep, 403, "id",
                                      "booking %lld belongs to %s; only they or an admin may release it",
                                      (long long) b->id, b->user);
        if (approve && b->state != GW_BOOKING_PENDING_APPROVAL)
                return gw_reply_error(rep, 409, "id", "booking %lld is %s, not awaiting approval", (long long) b->id,
                                      gw_booking_state_name((enum gw_booking_state) b->state));
        char why[4 * 200 + 1]; /* 200 characters of up to 4 bytes */
        if (deny && decode_deny(req, why, sizeof why, rep) < 0)
                return;
        enum gw_booking_state to = approve ? GW_BOOKING_APPROVED : deny ? GW_BOOKING_DENIED : GW_BOOKING_RELEASED;
        char note[sizeof b->note];
        booking_note(note, sizeof note, approve ? "approved" : deny ? "denied" : "released", c->user, deny ? why : "");
        struct gw_book_result r;
        int k = gw_sharing_booking_set(d, b, to, note, &r);
        if (k == -EBUSY) /* an approval of a booking others booked over while it waited */
                return gw_reply_error(rep, 409, "id", "%s", r.message);
        if (k < 0)
                return gw_reply_store_error(d, rep, "cannot record it");
        gw_reply_json(rep, 200, gw_codec_booking(&r.booking));
}

void gw_on_schedule(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                    struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        long long hours = 72;
        const char *qh = gw_http_query(req, "hours");
        if (qh && gw_parse_int(qh, 1, 24 * 14, &hours) < 0)
                return gw_reply_error(rep, 400, "hours", "hours: 1 to 336");
        struct calendar_view v;
        gw_calendar_view(d, &v);
        gw_training_fill_view(d, &v); /* ETAs: a running job's bar ends at its estimated end */
        gw_usec_t now = d->now_wall, horizon = hours * 3600 * GW_USEC_PER_SEC;
        size_t cap = gw_schedule_layout_max(&v.in), n = 0;
        struct gw_schedule_segment *segs = gw_xcalloc(cap + 1, sizeof *segs);
        int r = gw_schedule_layout(&v.in, now, horizon, segs, cap, &n);
        gw_calendar_view_free(&v);
        if (r < 0) {
                free(segs);
                return gw_reply_error(rep, 500, NULL, "cannot lay out the schedule");
        }
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
                json_array_append_new(arr, gw_codec_segment(&segs[i]));
        /* The text chart: one column per hour (per 10 minutes for short views), from the hour. */
        gw_usec_t hour = 3600 * GW_USEC_PER_SEC, col = hours <= 12 ? hour / 6 : hour;
        gw_usec_t from = now - now % col;
        size_t size = 256 * 1024;
        char *text = gw_xmalloc(size);
        uint64_t rows = gw_sched_mask_first(d->host.n_gpus);
        if (gw_schedule_render_text(segs, n, rows, from, now + horizon, col, gw_format_local_time, NULL, text, size) <
                    0 &&
            !text[0])
                snprintf(text, size, "(no chart)");
        free(segs);
        json_t *o = json_pack("{s:f,s:f,s:o,s:s}", "from", (double) now / 1e6, "to", (double) (now + horizon) / 1e6,
                              "segments", arr, "text", text);
        free(text);
        gw_reply_json(rep, 200, o);
}

void gw_on_quota(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx, struct gw_http_reply *rep,
                 const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        const char *user = gw_http_query(req, "user");
        uint32_t uid = c->uid;
        bool admin = c->admin;
        char name[64];
        snprintf(name, sizeof name, "%s", c->user);
        if (user && strcmp(user, c->user)) {
                const struct gw_account *a = gw_userdb_user(d->users, user, d->now);
                if (!a)
                        return gw_reply_error(rep, 400, "user", "user: no such user '%.64s'", user);
                uid = a->uid;
                snprintf(name, sizeof name, "%s", user);
                admin = gw_account_is_admin(d, a->uid, a->gid, name);
        } else if (!c->known)
                return gw_reply_error(rep, 401, NULL, "who are you? Use the Unix socket or a token, or give ?user=");
        struct gw_quota lim;
        enum gw_quota_source src[_GW_QUOTA_KEY_MAX];
        gw_sharing_user_limits(d, uid, name, admin, &lim, src);
        struct gw_quota_usage u;
        gw_sharing_usage(d, uid, &u);
        struct gw_codec_quota q = { .user = name, .limits = &lim, .from = src, .usage = &u };
        gw_reply_json(rep, 200, gw_codec_quota(&q));
}

/* A quota for an account this host does not have would be stored and never apply: an
 * admin's typo.  A subject already stored may still be changed (to unset it), its account
 * gone.  0, or -ENOENT after a 400. */
static int check_quota_subject(struct gw_daemon *d, const char *subject, const char *subj, struct gw_http_reply *rep) {
        if (!strcmp(subj, "default") || gw_sharing_has_quota(d, subj))
                return 0;
        bool group = subject[0] == '@';
        if (group ? gw_userdb_group(d->users, subject + 1, d->now) != NULL
                  : gw_userdb_user(d->users, subject, d->now) != NULL)
                return 0;
        gw_reply_error(rep, 400, "subject", "subject: no %s '%s' on this host", group ? "group" : "user",
                       subject + group);
        return -ENOENT;
}

/* {"subject", "settings"}, checked; subj gets the stored form ("user:alice", "group:lab",
 * "default").  0, or -EINVAL after a 400. */
static int decode_quota_set(struct gw_daemon *d, const json_t *o, char *subj, size_t n, const json_t **ret_settings,
                            struct gw_http_reply *rep) {
        static const char *const fields[] = { "subject", "settings" };
        const char *subject;
        if (gw_body_check(o, fields, ELEMENTSOF(fields), "a quota setting", "subject", &subject, rep) < 0)
                return -EINVAL;
        const json_t *settings = json_object_get(o, "settings");
        if (!subject || !*subject || strlen(subject) > 64) {
                gw_reply_error(rep, 400, "subject", "subject: USER, @GROUP or default");
                return -EINVAL;
        }
        if (!json_is_array(settings) || json_array_size(settings) == 0) {
                gw_reply_error(rep, 400, "settings", "settings: must be a list of KEY=VALUE strings");
                return -EINVAL;
        }
        if (!strcmp(subject, "default"))
                snprintf(subj, n, "default");
        else
                snprintf(subj, n, "%s:%s", subject[0] == '@' ? "group" : "user", subject + (subject[0] == '@'));
        if (check_quota_subject(d, subject, subj, rep) < 0)
                return -EINVAL;
        *ret_settings = settings;
        return 0;
}

void gw_on_quota_set(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx,
                     struct gw_http_reply *rep, const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        json_t *o = gw_parse_body(req, rep);
        if (!o)
                return;
        char subj[96], msg[GW_QUOTA_MSG_SIZE];
        const json_t *settings;
        if (decode_quota_set(d, o, subj, sizeof subj, &settings, rep) < 0) {
                json_decref(o);
                return;
        }
        size_t i, n = json_array_size(settings);
        json_t *s;
        const char **list = gw_xcalloc(n, sizeof *list);
        json_array_foreach (settings, i, s)
                list[i] = json_string_value(s);
        int r = -EINVAL;
        for (i = 0; i < n && list[i]; i++)
                ;
        if (i < n)
                gw_reply_error(rep, 400, "settings", "settings: must be strings");
        else if ((r = gw_sharing_quota_set(d, subj, list, n, msg, sizeof msg)) == -EIO)
                gw_reply_store_error(d, rep, "cannot store the quota");
        else if (r < 0)
                gw_reply_error(rep, 400, r == -E2BIG ? "subject" : "settings", "%s", msg);
        if (r == 0) {
                log_info("quota of %s set by %s", subj, c->user);
                gw_reply_json(rep, 200, json_pack("{s:s}", "subject", subj));
        }
        free(list);
        json_decref(o);
}
