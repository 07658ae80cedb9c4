/* GET /api/v1/jobs: the running jobs, the queue and the held from memory, the ended from the
 * store, each encoded by the job's field table (api/codec.h), ?fields= and ?layout=rows. */
#include <errno.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

#include "api/codec.h"
#include "api/jsonout.h"
#include "base/cleanup.h"
#include "base/memfile.h"
#include "base/parse.h"
#include "core/waitwhy.h"
#include "daemon/http/handlers.h"
#include "daemon/life/jobarray.h"
#include "daemon/life/queue.h"
#include "daemon/training/training.h"

/* state=A,B into a bit mask; -EINVAL names the bad word in rep. */
static int parse_states(const char *s, unsigned *ret, struct gw_http_reply *rep) {
        unsigned mask = 0;
        char word[32];
        while (s && *s) {
                size_t l = strcspn(s, ",");
                snprintf(word, sizeof word, "%.*s", (int) (l < sizeof word ? l : sizeof word - 1), s);
                enum gw_job_state st = gw_job_state_from_name(word);
                if (st < 0) {
                        gw_reply_error(rep, 400, "state", "state: unknown job state '%s'", word);
                        return -EINVAL;
                }
                mask |= 1u << st;
                s += l + (s[l] == ',');
        }
        *ret = mask;
        return 0;
}

/* Long lists are written job by job into one buffer: building the whole JSON tree first
 * would take several times the memory of the reply. */
struct list_ctx {
        struct gw_daemon *d;
        const struct gw_caller *caller;
        FILE *out;
        uint64_t fields;
        bool rows; /* layout=rows: arrays under "rows", names once under "fields" */
        size_t n;
};

static void list_put(struct list_ctx *lc, const struct gw_job *j) {
        unsigned view = gw_job_view(lc->d, lc->caller, j);
        /* An array: its tasks counted and its waiting ones folded, in a copy for the reply. */
        struct gw_array_summary sum;
        struct gw_job with_tasks;
        bool summed = j->array_spec && gw_array_summarize(lc->d, j, &sum) == 0;
        const char *node = j->state == GW_JOB_RUNNING ? gw_backend_node_of(lc->d, j->id) : NULL;
        char words_buf[GW_WAIT_WORDS_SIZE], drained_buf[GW_WHY_TEXT];
        const char *words;
        bool shown = gw_training_start_shown(lc->d, j, words_buf, sizeof words_buf, &words);
        const char *drained = gw_job_drained_view(lc->d, j, drained_buf, sizeof drained_buf);
        if (summed || node || !shown || words || drained) {
                with_tasks = *j;
                with_tasks.array_view = summed ? &sum.view : NULL;
                with_tasks.node_view = node;
                with_tasks.drain_view = drained;
                gw_training_start_view(&with_tasks, shown, words);
                j = &with_tasks;
        }
        if (lc->n++)
                fputc(',', lc->out);
        if (lc->rows)
                /* Written field by field: building and freeing a JSON value for each of 20
                 * fields of 10,000 rows took as long as the rest of the reply. */
                gw_codec_job_row_write(j, lc->fields, view, lc->out);
        else {
                json_t *o = gw_codec_job_masked(j, lc->fields, view);
                size_t len = 0;
                _cleanup_free_ char *text = gw_json_compact(o, 0, &len);
                if (text)
                        fwrite(text, 1, len, lc->out);
                json_decref(o);
        }
        if (summed)
                gw_array_summary_done(&sum);
}

static int list_cb(struct gw_job *j, void *userdata) {
        list_put(userdata, j);
        gw_job_free(j);
        return 0;
}

/* `user` (a name, or a number when no account has that name) or `uid` (a number only, never a
 * name: what `--me` sends, so that an account named "1000" is not taken for uid 1000). */
static int list_owner_filter(struct gw_daemon *d, const struct gw_http_request *req, struct gw_store_filter *f,
                             struct gw_http_reply *rep) {
        const char *user = gw_http_query(req, "user"), *quid = gw_http_query(req, "uid");
        if (user && quid) {
                gw_reply_error(rep, 400, "uid", "user and uid exclude each other");
                return -EINVAL;
        }
        if (!user && !quid)
                return 0;
        const struct gw_account *a = user ? gw_userdb_user(d->users, user, d->now) : NULL;
        long long uid;
        if (a)
                uid = a->uid;
        else if (gw_parse_int(user ? user : quid, 0, UINT32_MAX, &uid) < 0) {
                if (user)
                        gw_reply_error(rep, 400, "user", "user: no such user '%.64s'", user);
                else
                        gw_reply_error(rep, 400, "uid", "uid must be a number (0-4294967295)");
                return -EINVAL;
        }
        f->uid = (uint32_t) uid;
        f->by_uid = true;
        return 0;
}

void gw_on_list(void *ud, const struct gw_http_request *req, const struct gw_route_ctx *ctx, struct gw_http_reply *rep,
                const struct gw_caller *c) {
        struct gw_daemon *d = gw_the_daemon(ud);
        const unsigned active = (1u << GW_JOB_PENDING) | (1u << GW_JOB_HELD) | (1u << GW_JOB_RUNNING);
        unsigned mask = active;
        const char *q = gw_http_query(req, "state");
        if (q && parse_states(q, &mask, rep) < 0)
                return;
        struct gw_store_filter f = { .state_mask = mask & ~active };
        if (list_owner_filter(d, req, &f, rep) < 0)
                return;
        if (c->ci) { /* a CI runner's token lists its own jobs only */
                f.uid = c->uid;
                f.by_uid = true;
        }
        long long limit = 100, before = 0;
        const char *ql = gw_http_query(req, "limit"), *qb = gw_http_query(req, "before");
        if ((ql && gw_parse_int(ql, 1, 10000, &limit) < 0) || (qb && gw_parse_int(qb, 1, INT64_MAX, &before) < 0)) {
                gw_reply_error(rep, 400, ql && gw_parse_int(ql, 1, 10000, &limit) < 0 ? "limit" : "before",
                               "limit must be 1-10000 and before a job id");
                return;
        }
        struct gw_codec_error ferr;
        struct list_ctx lc = { .d = d, .caller = c };
        if (gw_codec_job_fields(gw_http_query(req, "fields"), &lc.fields, &ferr) < 0) {
                gw_reply_error(rep, 400, ferr.field, "%s", ferr.message);
                return;
        }
        const char *layout = gw_http_query(req, "layout");
        if (layout && strcmp(layout, "rows") && strcmp(layout, "objects")) {
                gw_reply_error(rep, 400, "layout", "layout must be 'objects' (the default) or 'rows'");
                return;
        }
        lc.rows = layout && !strcmp(layout, "rows");
        char *body = NULL;
        size_t body_len = 0;
        lc.out = gw_memfile_open(&body, &body_len);
        if (!lc.out)
                return gw_reply_error(rep, 500, NULL, "out of memory");
        /* Only this thread writes it: a lock per character was a tenth of a long reply. */
        __fsetlocking(lc.out, FSETLOCKING_BYCALLER);
        if (lc.rows) {
                json_t *names = gw_codec_job_field_names(lc.fields);
                fputs("{\"fields\":", lc.out);
                (void) json_dumpf(names, lc.out, JSON_COMPACT);
                fputs(",\"rows\":[", lc.out);
                json_decref(names);
        } else
                fputs("{\"jobs\":[", lc.out);
        bool any_held = false;
        for (int pass = 0; pass < 3 && (mask & active) && (pass < 2 || any_held); pass++) {
                /* Running first, then the queue in the order it starts, then the held, which
                 * start only once released (the third walk only when the second saw one). */
                struct gw_djob **v = pass ? d->jobs.queue : d->jobs.running;
                size_t n = pass ? d->jobs.n_queue : d->jobs.n_running;
                for (size_t i = 0; i < n; i++) {
                        const struct gw_job *j = v[i]->job;
                        any_held |= j->state == GW_JOB_HELD;
                        if (pass && (pass == 2) != (j->state == GW_JOB_HELD))
                                continue;
                        if ((mask & (1u << j->state)) && (!f.by_uid || j->uid == f.uid))
                                list_put(&lc, j);
                }
        }
        if (f.state_mask) {
                f.limit = (unsigned) limit;
                f.before_id = before;
                if (gw_store_jobs_list(d->store, &f, list_cb, &lc) < 0) {
                        fclose(lc.out);
                        free(body);
                        gw_reply_error(rep, 503, NULL, "cannot read the job history: %s", gw_store_errmsg(d->store));
                        return;
                }
        }
        fputs("]}", lc.out);
        if (fclose(lc.out) != 0) {
                free(body);
                return gw_reply_error(rep, 500, NULL, "out of memory");
        }
        d->loop.big_reply |= body_len > (1u << 20);
        gw_http_reply_text(rep, 200, "application/json", body, body_len);
}
