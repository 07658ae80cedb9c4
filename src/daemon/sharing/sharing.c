/* Bookings, quotas and rate limits in the daemon: state, persistence, the scheduler's view. */
#include "daemon/sharing/sharing.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/parse.h"
#include "daemon/life/jobarray.h"
#include "daemon/base/jobclock.h"
#include "daemon/life/jobs.h"
#include "daemon/life/queue.h"
#include "daemon/observe/gpus.h"

#define RATE_USERS 1024

static void booking_keep(const struct gw_store_booking *b, void *userdata) {
        struct gw_sharing *s = userdata;
        if (s->n_bookings == s->cap_bookings) {
                s->cap_bookings = s->cap_bookings ? s->cap_bookings * 2 : 16;
                s->bookings = gw_xrealloc(s->bookings, s->cap_bookings * sizeof *s->bookings);
        }
        s->bookings[s->n_bookings++] = *b;
}

static void resv_drop_keep(const struct gw_store_booking *b, void *userdata) {
        struct gw_daemon *d = userdata;
        gw_backend_book(d)->drop_later(d, b);
}

bool gw_sharing_book_held(struct gw_daemon *d, int64_t booking) {
        return gw_backend_book(d) && gw_backend_book(d)->held(d, booking);
}

void gw_sharing_book_drop(struct gw_daemon *d, const struct gw_store_booking *b) {
        if (gw_backend_book(d))
                gw_backend_book(d)->drop(d, b);
}

static struct gw_quota_subject *subject(struct gw_sharing *s, const char *name, bool create) {
        for (size_t i = 0; i < s->n_subjects; i++)
                if (!strcmp(s->subjects[i].name, name))
                        return &s->subjects[i];
        if (!create || s->n_subjects == GW_SHARING_MAX_SUBJECTS)
                return NULL;
        struct gw_quota_subject *q = &s->subjects[s->n_subjects++];
        snprintf(q->name, sizeof q->name, "%s", name);
        gw_quota_init(&q->q);
        return q;
}

static void quota_keep(const char *subj, const char *key, int64_t value, void *userdata) {
        struct gw_quota_subject *q = subject(userdata, subj, true);
        enum gw_quota_key k = gw_quota_key_from_name(key);
        if (q && k >= 0)
                q->q.v[k] = value;
}

bool gw_sharing_has_quota(struct gw_daemon *d, const char *subj) { return subject(d->sharing, subj, false) != NULL; }

int gw_sharing_quota_set(struct gw_daemon *d, const char *subj, const char *const *settings, size_t n, char *msg,
                         size_t msg_n) {
        struct gw_quota_subject *q = subject(d->sharing, subj, false);
        if (!q && d->sharing->n_subjects == GW_SHARING_MAX_SUBJECTS) {
                snprintf(msg, msg_n, "too many quota subjects (%d)", GW_SHARING_MAX_SUBJECTS);
                return -E2BIG;
        }
        struct gw_quota old, new;
        if (q)
                old = q->q;
        else
                gw_quota_init(&old);
        new = old;
        for (size_t i = 0; i < n; i++) {
                int r = gw_quota_parse_setting(&new, settings[i], msg, msg_n);
                if (r < 0)
                        return r;
        }
        /* All or nothing on disk too: one transaction, and memory changed only once it is in. */
        bool ok = gw_store_begin(d->store) == 0;
        for (int k = 0; ok && k < _GW_QUOTA_KEY_MAX; k++)
                ok = new.v[k] == old.v[k] || gw_store_quota_set(d->store, subj, gw_quota_key_name(k), new.v[k]) == 0;
        if (!ok || gw_store_commit(d->store) < 0) {
                snprintf(msg, msg_n, "cannot store the quota: %s", gw_store_errmsg(d->store));
                (void) gw_store_rollback(d->store);
                return -EIO;
        }
        subject(d->sharing, subj, true)->q = new;
        d->jobs.sched_dirty = true;
        return 0;
}

int gw_sharing_open(struct gw_daemon *d) {
        struct gw_sharing *s = gw_xcalloc(1, sizeof *s);
        d->sharing = s;
        s->no_show = d->cfg->no_show;
        s->warn_before_end = d->cfg->booking_warn;
        s->limits = gw_xcalloc(1, sizeof *s->limits);
        struct gw_ratelimit_entry *storage = gw_xcalloc(RATE_USERS, sizeof *storage);
        (void) gw_ratelimit_init(s->limits, storage, RATE_USERS, d->cfg->rate_per_min, d->cfg->rate_burst);
        int r = gw_store_bookings(d->store, GW_STORE_BOOKINGS_OPEN, booking_keep, s);
        const struct gw_exec_book_ops *book = gw_backend_book(d);
        for (size_t i = 0; book && r >= 0 && i < s->n_bookings; i++)
                if (s->bookings[i].state != GW_BOOKING_PENDING_APPROVAL)
                        book->known(d, &s->bookings[i]);
        /* Bookings over before the restart that the backend had not let go yet. */
        if (r >= 0 && book)
                r = gw_store_bookings(d->store, GW_STORE_BOOKINGS_RESV_DROP, resv_drop_keep, d);
        if (r >= 0)
                r = gw_store_quotas(d->store, quota_keep, s);
        return r;
}

void gw_sharing_close(struct gw_daemon *d) {
        struct gw_sharing *s = d->sharing;
        if (!s)
                return;
        free(s->bookings);
        free(s->limits->entries);
        free(s->limits);
        free(s);
        d->sharing = NULL;
}

struct gw_store_booking *gw_sharing_booking(struct gw_daemon *d, int64_t id) {
        for (size_t i = 0; i < d->sharing->n_bookings; i++)
                if (d->sharing->bookings[i].id == id)
                        return &d->sharing->bookings[i];
        return NULL;
}

/* The users' max_gpus for the predicted starts (core/predict.h), 0 = none: a job waiting on
 * Quota is not predicted to start while the user's other jobs hold its share.  Looked up once
 * per user and view: a view may hold thousands of one user's jobs. */
struct max_gpus_memo {
        uint32_t uid[32];
        int64_t max[32];
        size_t n;
};

static int64_t view_max_gpus(struct gw_daemon *d, struct max_gpus_memo *m, const struct gw_job *j) {
        struct gw_quota lim;
        if (!d->sharing->n_subjects)
                return 0;
        for (size_t i = 0; i < m->n; i++)
                if (m->uid[i] == j->uid)
                        return m->max[i];
        gw_sharing_limits(d, j->uid, j->user, &lim, NULL);
        int64_t max = lim.v[GW_QUOTA_MAX_GPUS] == GW_QUOTA_UNLIMITED ? 0 : lim.v[GW_QUOTA_MAX_GPUS];
        if (m->n < ELEMENTSOF(m->uid)) {
                m->uid[m->n] = j->uid;
                m->max[m->n++] = max;
        }
        return max;
}

/* What sharing keeps of a running job, by job id in d->state.sharing, from its first warning:
 * the attempt told its booking ends soon (a retry is a new attempt, not warned yet). */
struct sharing_job {
        int warned_attempt;
};

static bool booking_warned(const struct gw_daemon *d, const struct gw_djob *dj) {
        const struct sharing_job *s = gw_keytab_get(&d->state.sharing, (uint64_t) dj->job->id);
        return s && s->warned_attempt == dj->job->attempt;
}

static void booking_warned_set(struct gw_daemon *d, const struct gw_djob *dj) {
        struct sharing_job *s = gw_keytab_get(&d->state.sharing, (uint64_t) dj->job->id);
        if (!s) {
                s = gw_xcalloc(1, sizeof *s);
                gw_keytab_put(&d->state.sharing, (uint64_t) dj->job->id, s);
        }
        s->warned_attempt = dj->job->attempt;
}

void gw_sharing_forget(struct gw_daemon *d, struct gw_djob *dj) {
        free(gw_keytab_take(&d->state.sharing, (uint64_t) dj->job->id));
}

void gw_calendar_view(struct gw_daemon *d, struct calendar_view *v) {
        memset(v, 0, sizeof *v);
        struct gw_sharing *s = d->sharing;
        for (unsigned i = 0; i < d->host.n_gpus; i++)
                v->gpus[i] = (struct gw_sched_gpu){
                        .index = (int) i,
                        .usable = gw_gpu_whole_usable(&d->host.gpus[i]),
                        .job_id = d->host.gpus[i].job_id,
                };
        v->bookings = gw_xcalloc(s->n_bookings + 1, sizeof *v->bookings);
        for (size_t i = 0; i < s->n_bookings; i++) {
                const struct gw_store_booking *b = &s->bookings[i];
                v->bookings[i] = (struct gw_booking){ .id = b->id,
                                                      .uid = b->uid,
                                                      .ngpus = b->ngpus,
                                                      .start = b->start,
                                                      .end = b->end,
                                                      .gpu_mask = b->gpu_mask,
                                                      .state = (enum gw_booking_state) b->state,
                                                      .last_used = b->last_used,
                                                      .label = b->name,
                                                      .created = b->created };
        }
        gw_usec_t wall = d->now_wall;
        v->running = gw_xcalloc(d->jobs.n_running + 1, sizeof *v->running);
        for (size_t i = 0; i < d->jobs.n_running; i++) {
                const struct gw_djob *dj = d->jobs.running[i];
                /* Named fields: the calendar's structs grow (ETAs, predictions) and unset ones are 0. */
                v->running[i] = (struct gw_cal_job){ .id = dj->job->id,
                                                     .booking_id = dj->job->booking_id,
                                                     .gpu_mask = dj->job->gpu_mask,
                                                     .start = dj->job->start_time,
                                                     .end = wall + (dj->limit_at - d->now),
                                                     .warned = booking_warned(d, dj),
                                                     .label = dj->job->name,
                                                     .uid = dj->job->uid };
        }
        v->pending = gw_xcalloc(d->jobs.n_queue + 1, sizeof *v->pending);
        struct max_gpus_memo memo = { .n = 0 };
        for (size_t i = 0; i < d->jobs.n_queue; i++) {
                const struct gw_job *j = d->jobs.queue[i]->job;
                v->pending[i] = (struct gw_cal_pending){ .id = j->id,
                                                         .ngpus = j->ngpus,
                                                         .time_limit = j->time_limit,
                                                         .booking_id = j->booking_id,
                                                         .held = j->state == GW_JOB_HELD,
                                                         .not_before = j->not_before,
                                                         .label = j->name,
                                                         .uid = j->uid,
                                                         .max_gpus = view_max_gpus(d, &memo, j) };
        }
        v->in = (struct gw_calendar_input){ v->gpus,    d->host.n_gpus,    v->bookings, s->n_bookings,
                                            v->running, d->jobs.n_running, v->pending,  d->jobs.n_queue };
}

void gw_calendar_view_free(struct calendar_view *v) {
        free(v->bookings);
        free(v->running);
        free(v->pending);
}

static void booking_state(struct gw_daemon *d, struct gw_store_booking *b, enum gw_booking_state st, const char *note) {
        b->state = st;
        /* Over: what the backend holds of it, if anything, is to go, recorded with the state. */
        b->resv_drop = gw_booking_state_is_final(st) && gw_sharing_book_held(d, b->id);
        if (note)
                snprintf(b->note, sizeof b->note, "%s", note);
        if (gw_store_booking_save(d->store, b) < 0)
                log_err("booking %lld: cannot record %s: %s", (long long) b->id, gw_booking_state_name(st),
                        gw_store_errmsg(d->store));
        if (gw_booking_state_is_final(st))
                gw_sharing_book_drop(d, b);
        log_info("booking %lld (%s, %d GPUs): %s%s%s", (long long) b->id, b->user, b->ngpus, gw_booking_state_name(st),
                 note ? ": " : "", note ? note : "");
}

/* Drops bookings that are over from the in-memory list (they stay in the store). */
static void bookings_compact(struct gw_sharing *s) {
        size_t k = 0;
        for (size_t i = 0; i < s->n_bookings; i++)
                if (!gw_booking_state_is_final((enum gw_booking_state) s->bookings[i].state))
                        s->bookings[k++] = s->bookings[i];
        s->n_bookings = k;
}

/* The "warn" event of a job's booking end (apply_action) is what gw_sharing_warned_restore
 * reads back after a restart: they share these words. */
#define BOOKING_WARN_START "booking %lld ends at "
#define BOOKING_WARN_END "%s: the job will get SIGTERM then"

void gw_sharing_warned_restore(struct gw_daemon *d, struct gw_djob *dj, const struct gw_job_event *ev, size_t n) {
        char start[64];
        int len = snprintf(start, sizeof start, BOOKING_WARN_START, (long long) dj->job->booking_id);
        for (size_t i = 0; i < n && dj->job->booking_id > 0; i++)
                if (!strcmp(ev[i].kind, "warn") && !strncmp(ev[i].message, start, (size_t) len))
                        booking_warned_set(d, dj);
}

static void apply_action(struct gw_daemon *d, const struct gw_cal_action *a) {
        struct gw_store_booking *b = gw_sharing_booking(d, a->booking_id);
        struct gw_djob *dj = a->job_id ? gw_jobmap_get(&d->jobs.map, a->job_id) : NULL;
        char msg[256];
        switch (a->kind) {
        case GW_CAL_ACTIVATE:
        case GW_CAL_END:
        case GW_CAL_EXPIRE:
                if (b)
                        booking_state(d, b, a->new_state,
                                      a->kind == GW_CAL_EXPIRE ? "its end came before an admin approved it" : NULL);
                break;
        case GW_CAL_EXPIRE_UNANSWERED:
                if (b) {
                        char span[32];
                        snprintf(msg, sizeof msg, "no admin answered it within %s (booking_pending_ttl)",
                                 gw_format_duration(d->cfg->booking_pending_ttl, span, sizeof span));
                        booking_state(d, b, a->new_state, msg);
                }
                break;
        case GW_CAL_NO_SHOW:
                if (b) {
                        char span[32];
                        snprintf(msg, sizeof msg, "released: no job ran in it for %s",
                                 gw_format_duration(d->sharing->no_show, span, sizeof span));
                        booking_state(d, b, GW_BOOKING_RELEASED, msg);
                }
                break;
        case GW_CAL_REASSIGN:
                if (b) {
                        b->gpu_mask = a->gpu_mask;
                        booking_state(d, b, (enum gw_booking_state) b->state, "GPUs re-chosen: one was drained");
                }
                break;
        case GW_CAL_CONFLICT:
                if (b)
                        log_warn("booking %lld: a GPU it needs is unusable and none can replace it", (long long) b->id);
                break;
        case GW_CAL_WARN_JOB:
                if (dj && !booking_warned(d, dj) && dj->job->state == GW_JOB_RUNNING && b) {
                        /* No signal: most programs die of an unexpected SIGUSR1.  The job's own
                         * log and its events say it; SIGTERM comes at the end, as for a time limit. */
                        char when[32];
                        gw_format_local_time(b->end, d->now_wall, when, sizeof when, NULL);
                        snprintf(msg, sizeof msg, BOOKING_WARN_START BOOKING_WARN_END, (long long) b->id, when);
                        booking_warned_set(d, dj);
                        (void) gw_store_job_event(d->store, dj->job->id, dj->job->state, "warn", msg);
                        gw_job_log_note(d, dj, msg);
                }
                break;
        case GW_CAL_STOP_JOB:
                /* Released (or denied) before its end: the job ends as at the booking's end, and
                 * its reason says who ended the booking. */
                if (b && (b->state == GW_BOOKING_RELEASED || b->state == GW_BOOKING_DENIED) && b->note[0])
                        snprintf(msg, sizeof msg, "its booking ended early: %s", b->note);
                else
                        snprintf(msg, sizeof msg, "its booking ended");
                if (dj && dj->job->state == GW_JOB_RUNNING)
                        gw_job_terminate(d, dj, GW_JOB_TIMEOUT, msg);
                break;
        }
}

/* The calendar's decisions due now, carried out; then the bookings that are over leave the
 * open list (they stay in the store). */
static void calendar_run(struct gw_daemon *d) {
        struct gw_sharing *s = d->sharing;
        struct calendar_view v;
        gw_calendar_view(d, &v);
        size_t cap = gw_calendar_tick_max(&v.in), n = 0, open = s->n_bookings;
        struct gw_cal_action *acts = gw_xcalloc(cap + 1, sizeof *acts);
        struct gw_calendar_params p = { .no_show = s->no_show,
                                        .warn_before_end = s->warn_before_end,
                                        .pending_ttl = d->cfg->booking_pending_ttl };
        if (gw_calendar_tick(&v.in, d->now_wall, &p, acts, cap, &n) == 0)
                for (size_t i = 0; i < n; i++)
                        apply_action(d, &acts[i]);
        free(acts);
        gw_calendar_view_free(&v);
        bookings_compact(s);
        if (n || s->n_bookings != open)
                d->jobs.sched_dirty = true;
}

gw_usec_t gw_sharing_tick(struct gw_daemon *d) {
        struct gw_sharing *s = d->sharing;
        if (!s || (!s->n_bookings && d->jobs.n_queue == 0))
                return GW_USEC_INFINITY;
        if (d->now < s->next_tick)
                return s->next_tick;
        /* Once a second is enough: booking times are minutes apart, and tests use seconds. */
        s->next_tick = d->now + GW_USEC_PER_SEC;
        if (s->n_bookings)
                calendar_run(d);
        return s->next_tick;
}

void gw_sharing_booking_closed(struct gw_daemon *d) { calendar_run(d); }

/* --- quotas ------------------------------------------------------------------------- */

void gw_sharing_limits(struct gw_daemon *d, uint32_t uid, const char *user, struct gw_quota *ret,
                       enum gw_quota_source src[_GW_QUOTA_KEY_MAX]) {
        struct gw_sharing *s = d->sharing;
        char name[96];
        snprintf(name, sizeof name, "user:%s", user);
        const struct gw_quota_subject *u = subject(s, name, false), *def = subject(s, "default", false);
        const struct gw_quota *groups[64];
        size_t ng = 0;
        const struct gw_account *a = gw_userdb_uid(d->users, uid, d->now);
        for (int i = 0; a && i < a->n_groups && ng < ELEMENTSOF(groups); i++) {
                const struct gw_group *gr = gw_userdb_gid(d->users, a->groups[i], d->now);
                if (!gr)
                        continue;
                snprintf(name, sizeof name, "group:%s", gr->name);
                const struct gw_quota_subject *g = subject(s, name, false);
                if (g)
                        groups[ng++] = &g->q;
        }
        gw_quota_resolve(u ? &u->q : NULL, groups, ng, def ? &def->q : NULL, ret, src);
}

/* What uid uses now; the 7 days' GPU-time (a query of the store) only when with_gpu_time. */
static void usage(struct gw_daemon *d, uint32_t uid, bool with_gpu_time, struct gw_quota_usage *u) {
        memset(u, 0, sizeof *u);
        for (size_t i = 0; i < d->jobs.n_running; i++)
                if (d->jobs.running[i]->job->uid == uid)
                        u->gpus_running += d->jobs.running[i]->job->ngpus;
        for (size_t i = 0; i < d->jobs.n_queue; i++)
                if (d->jobs.queue[i]->job->uid == uid) /* an array: each task not started yet */
                        u->pending_jobs += gw_array_jobs_waiting(d, d->jobs.queue[i]->job);
        if (!with_gpu_time)
                return;
        gw_usec_t now = d->now_wall, mono = d->now;
        (void) gw_store_gpu_time_since(d->store, uid, now - GW_QUOTA_WINDOW_7D, now, &u->gpu_time_7d);
        /* Running jobs: the time they have run (monotonic), within the window. */
        for (size_t i = 0; i < d->jobs.n_running; i++)
                if (d->jobs.running[i]->job->uid == uid) {
                        gw_usec_t ran = gw_job_ran(d->jobs.running[i], mono);
                        u->gpu_time_7d +=
                                d->jobs.running[i]->job->ngpus * (ran < GW_QUOTA_WINDOW_7D ? ran : GW_QUOTA_WINDOW_7D);
                }
}

void gw_sharing_usage(struct gw_daemon *d, uint32_t uid, struct gw_quota_usage *u) { usage(d, uid, true, u); }

void gw_sharing_user_limits(struct gw_daemon *d, uint32_t uid, const char *user, bool admin, struct gw_quota *ret,
                            enum gw_quota_source src[_GW_QUOTA_KEY_MAX]) {
        struct gw_quota role;
        gw_sharing_limits(d, uid, user, ret, src);
        gw_quota_init(&role);
        role.v[GW_QUOTA_MAX_PRIORITY] = d->cfg->user_max_priority;
        role.v[GW_QUOTA_MAX_PENDING_JOBS] = d->cfg->max_pending_jobs;
        if (admin) {
                /* An admin's grant is any priority, whatever a quota says (gw_quota_max_priority). */
                role.v[GW_QUOTA_MAX_PENDING_JOBS] = GW_QUOTA_UNSET;
                ret->v[GW_QUOTA_MAX_PRIORITY] = GW_QUOTA_UNLIMITED;
                src[GW_QUOTA_MAX_PRIORITY] = GW_QUOTA_FROM_ROLE;
        }
        gw_quota_role_fill(ret, src, &role);
}

/* No limit on jobs (the booking keys are checked when a booking is made): nothing to count
 * at a submission or in a scheduling pass. */
static bool quota_unlimited(const struct gw_quota *q) {
        static const enum gw_quota_key jobs[] = { GW_QUOTA_MAX_GPUS, GW_QUOTA_MAX_PENDING_JOBS, GW_QUOTA_MAX_TIME_LIMIT,
                                                  GW_QUOTA_MAX_GPU_HOURS_7D };
        for (size_t i = 0; i < ELEMENTSOF(jobs); i++)
                if (q->v[jobs[i]] != GW_QUOTA_UNLIMITED)
                        return false;
        return true;
}

/* A priority is granted, not asserted: the largest of the submitter's role's, their quota's
 * and the job's profile's maximum.  Checked here, once: a queued job's priority is the one
 * granted at its submission (docs/API.md says so). */
static int check_priority(struct gw_daemon *d, const struct gw_job *j, const struct gw_quota *lim,
                          const enum gw_quota_source src[_GW_QUOTA_KEY_MAX], struct gw_submit_error *err) {
        const struct gw_policy_conf *pc = gw_config_job_policy(d->cfg, j);
        const struct gw_prio_grant g = {
                .admin = j->by_admin,
                .quota = lim->v[GW_QUOTA_MAX_PRIORITY],
                .quota_from = src[GW_QUOTA_MAX_PRIORITY],
                .profile = pc ? pc->max_priority : -1,
                .profile_name = pc ? pc->p.name : NULL,
                .user = j->user,
        };
        char msg[GW_QUOTA_MSG_SIZE];
        if (gw_quota_check_priority(&g, j->priority, msg, sizeof msg) == GW_QUOTA_OK)
                return 0;
        err->status = 403;
        snprintf(err->field, sizeof err->field, "priority");
        snprintf(err->message, sizeof err->message, "%s", msg);
        return -EPERM;
}

int gw_sharing_check_submit(struct gw_daemon *d, struct gw_job *j, size_t ahead, struct gw_submit_error *err) {
        if (j->booking_id > 0) {
                struct gw_store_booking *b = gw_sharing_booking(d, j->booking_id);
                if (!b) {
                        err->status = 400;
                        snprintf(err->field, sizeof err->field, "reservation");
                        snprintf(err->message, sizeof err->message,
                                 "reservation: booking %lld does not exist or has ended", (long long) j->booking_id);
                        return -EINVAL;
                }
                if (b->uid != j->uid || strcmp(b->user, j->user ? j->user : "")) {
                        err->status = 403;
                        snprintf(err->field, sizeof err->field, "reservation");
                        snprintf(err->message, sizeof err->message, "reservation: booking %lld belongs to %s",
                                 (long long) b->id, b->user);
                        return -EPERM;
                }
                if (j->ngpus > b->ngpus) {
                        err->status = 400;
                        snprintf(err->field, sizeof err->field, "ngpus");
                        snprintf(err->message, sizeof err->message, "ngpus: booking %lld has %d GPUs",
                                 (long long) b->id, b->ngpus);
                        return -EINVAL;
                }
        }
        struct gw_quota lim;
        enum gw_quota_source src[_GW_QUOTA_KEY_MAX];
        gw_sharing_user_limits(d, j->uid, j->user, j->by_admin, &lim, src);
        if (check_priority(d, j, &lim, src, err) < 0)
                return -EPERM;
        if (quota_unlimited(&lim))
                return 0;
        struct gw_quota_usage u;
        usage(d, j->uid, lim.v[GW_QUOTA_MAX_GPU_HOURS_7D] != GW_QUOTA_UNLIMITED, &u);
        u.pending_jobs += (int64_t) ahead;
        u.adds_jobs = gw_array_jobs_waiting(d, j); /* an array: its tasks, all or none */
        char msg[GW_QUOTA_MSG_SIZE];
        if (gw_quota_check_submit(&lim, &u, j->ngpus, j->time_limit, msg, sizeof msg) == GW_QUOTA_REFUSE) {
                err->status = 403;
                snprintf(err->field, sizeof err->field, "quota");
                snprintf(err->message, sizeof err->message, "%s", msg);
                return -EPERM;
        }
        return 0;
}

/* --- the scheduler's view --------------------------------------------------------------- */

/* Limits and usage of the users met in one scheduling pass: looked up once per user. */
struct user_quota {
        uint32_t uid;
        bool limited;
        struct gw_quota lim;
        struct gw_quota_usage use;
        int64_t holders[GW_QUOTA_HOLDERS_SHOWN + 1]; /* its jobs holding GPUs, for the reason */
        size_t n_holders;
};

static void holder_add(struct user_quota *q, int64_t id) {
        if (q->n_holders < ELEMENTSOF(q->holders))
                q->holders[q->n_holders++] = id;
}

static const struct user_quota *user_quota(struct gw_daemon *d, struct user_quota *cache, size_t *n, uint32_t uid,
                                           const char *user) {
        for (size_t i = 0; i < *n; i++)
                if (cache[i].uid == uid)
                        return cache[i].limited ? &cache[i] : NULL;
        struct user_quota tmp = { .uid = uid }, *q = *n < 64 ? &cache[(*n)++] : &tmp;
        *q = tmp;
        gw_sharing_limits(d, uid, user, &q->lim, NULL);
        q->limited = !quota_unlimited(&q->lim);
        if (q->limited)
                gw_sharing_usage(d, uid, &q->use);
        for (size_t i = 0; q->limited && i < d->jobs.n_running; i++)
                if (d->jobs.running[i]->job->uid == uid)
                        holder_add(q, d->jobs.running[i]->job->id);
        return q->limited && q != &tmp ? q : NULL;
}

void gw_sharing_sched(struct gw_daemon *d, struct gw_sched_job *pending, size_t n) {
        struct gw_sharing *s = d->sharing;
        bool any_booking = s->n_bookings > 0, any_quota = s->n_subjects > 0, any_booked_job = false;
        for (size_t i = 0; i < n && !any_booked_job; i++)
                any_booked_job = d->jobs.queue[i]->job->booking_id > 0;
        if (!any_booking && !any_quota && !any_booked_job)
                return;
        struct calendar_view v;
        struct gw_calendar_gpus g;
        gw_usec_t wall = d->now_wall;
        if (any_booking) {
                gw_calendar_view(d, &v);
                (void) gw_calendar_gpus_at(&v.in, wall, &g);
        }
        uint64_t all = gw_sched_mask_first(d->host.n_gpus);
        struct user_quota cache[64];
        size_t n_cache = 0;
        for (size_t i = 0; i < n; i++) {
                const struct gw_job *j = d->jobs.queue[i]->job;
                if (j->booking_id > 0 && !any_booking) {
                        d->jobs.queue[i]->booking_closed = true;
                        pending[i].blocked = GW_REASON_RESERVATION;
                } else if (any_booking && j->booking_id > 0) {
                        struct gw_calendar_gate gate;
                        int r = gw_calendar_gate(&v.in, j->booking_id, wall, &gate);
                        if (r < 0 || gate.gate == GW_GATE_CLOSED)
                                d->jobs.queue[i]->booking_closed = true; /* ended after the pass (gw_schedule) */
                        /* Open with none of its GPUs usable: it waits for them, never on others' GPUs. */
                        if (r < 0 || gate.gate != GW_GATE_OPEN || !gate.gpu_mask)
                                pending[i].blocked = GW_REASON_RESERVATION;
                        else
                                pending[i].allowed = gate.gpu_mask;
                } else if (any_booking && d->cfg->preemption && gw_config_job_preemptible(d->cfg, j) &&
                           gw_config_job_preempt_resumes(d->cfg, j)) {
                        /* A preemptible job may use GPUs booked later: it gives way when the
                         * booking starts (preempt.c).  Only bookings open now keep it off. */
                        struct gw_sched_job now_only = pending[i];
                        now_only.time_limit = 1;
                        gw_calendar_limit_job(&g, all, wall, &now_only);
                        pending[i].allowed = now_only.allowed;
                        pending[i].none_allowed = now_only.none_allowed;
                        pending[i].booked_out = now_only.booked_out;
                } else if (any_booking)
                        gw_calendar_limit_job(&g, all, wall, &pending[i]);
                char detail[128] = "";
                /* A job that cannot start in this pass (held, in its backoff, after a job not
                 * done) takes none of its user's quota from the jobs after it: counting it kept
                 * the user's next job waiting on "max_gpus=1, 1 in use by job N" with nothing
                 * running. */
                bool may_start = !pending[i].held && !pending[i].backoff && pending[i].dep != GW_DEP_WAITING &&
                                 pending[i].dep != GW_DEP_NEVER;
                if (any_quota && !pending[i].blocked) {
                        struct user_quota *uq = (struct user_quota *) user_quota(d, cache, &n_cache, j->uid, j->user);
                        /* Usage is counted before the pass; the GPUs of this user's jobs offered
                         * earlier in the pass count as taken, so that the scheduler may start
                         * all of them at once without passing max_gpus.  The reason names the
                         * limit and the jobs holding it, not only "Quota". */
                        if (uq && gw_quota_wait_reason(&uq->lim, &uq->use, j->ngpus, uq->holders, uq->n_holders, detail,
                                                       sizeof detail) == GW_QUOTA_WAIT)
                                pending[i].blocked = GW_REASON_QUOTA;
                        else if (uq && may_start) {
                                uq->use.gpus_running += j->ngpus;
                                holder_add(uq, j->id);
                        }
                }
                gw_job_text_set(&d->jobs.queue[i]->job->wait_detail, detail);
        }
        if (any_booking)
                gw_calendar_view_free(&v);
}

/* A job in a booking that is not open any more (ended, released while its stop could not be
 * recorded, or while no daemon ran) is over now: never the time limit alone. */
static gw_usec_t booking_limit(struct gw_daemon *d, const struct gw_job *j, gw_usec_t limit_at) {
        if (!j->booking_id)
                return limit_at;
        struct gw_store_booking *b = gw_sharing_booking(d, j->booking_id);
        gw_usec_t end = b && !gw_booking_state_is_final((enum gw_booking_state) b->state)
                                ? d->now + (b->end - d->now_wall)
                                : d->now;
        return end < limit_at ? end : limit_at;
}

void gw_sharing_job_limit(struct gw_daemon *d, struct gw_djob *dj) {
        const struct gw_job *j = dj->job;
        gw_usec_t by_time = d->now + j->time_limit - gw_job_ran(dj, d->now);
        dj->limit_at = booking_limit(d, j, by_time);
        dj->limit_by_booking = dj->limit_at < by_time;
}

void gw_sharing_job_ended(struct gw_daemon *d, const struct gw_job *j) {
        struct gw_store_booking *b = j->booking_id ? gw_sharing_booking(d, j->booking_id) : NULL;
        if (b) {
                b->last_used = d->now_wall;
                (void) gw_store_booking_save(d->store, b);
        }
}

int64_t gw_sharing_rate(struct gw_daemon *d, uint32_t uid, int64_t n) {
        /* Monotonic: a wall clock stepped back must not lock everyone out for the step. */
        return gw_ratelimit_take_n(d->sharing->limits, uid, n, d->now);
}

void gw_sharing_rate_undo(struct gw_daemon *d, uint32_t uid, int64_t n) {
        gw_ratelimit_give_back(d->sharing->limits, uid, n);
}
