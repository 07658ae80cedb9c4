/* Fair share's state in the daemon and the scheduling pass's part of it (fairshare.h). */
#include "daemon/base/fairshare.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/fairshare.h"
#include "daemon/daemon.h"
#include "store/usage.h"

#define FAIR_NAME_MAX 33
#define FAIR_WEIGHT_MAX 1e6

struct fair_user {
        uint32_t uid;
        char name[FAIR_NAME_MAX];
        struct gw_fs_user fs;
        size_t idx; /* in the pass's arrays; SIZE_MAX: not counted */
        double factor; /* as last computed (NAN: never) */
        char *line; /* its words then (GW_FS_EXPLAIN_SIZE); the queued jobs' fair_line
                                      * borrow it, so it stays in place until gw_fair_close */
        uint64_t gen; /* bumped when factor or line changes: its jobs are rewritten */
};

struct fair_run {
        int64_t job_id;
        gw_usec_t charged_to; /* wall clock */
};

struct gw_fair {
        gw_usec_t half_life;
        const char *weights; /* the config's, borrowed */
        struct fair_user *users;
        size_t n_users, cap_users;
        struct fair_run *runs; /* running attempts charged so far */
        size_t n_runs, cap_runs;
        bool on; /* fairshare = true; else only the words of the order */
        gw_usec_t pass_at; /* monotonic: the last pass, 0 none */
        bool factors_set; /* computed at factors_at (monotonic) for n_pass users */
        gw_usec_t factors_at;
        size_t n_pass;
        uint64_t gen; /* the newest of the users' gen */
        uint64_t n_queued_seen; /* d->jobs.n_queued when users_new last looked */
        uint64_t written_gen, written_queued; /* f->gen and d->jobs.n_queued when the queued
                                      * jobs were last written (jobs_update, pass_off): with
                                      * neither changed since, none is to be rewritten */
        bool written;
        struct gw_fs_user *pass_users; /* the counted users' usage and factors, by idx */
        double *pass_factor;
        size_t cap_pass;
        bool *dirty; /* per queued job, for the reorder (cap_queue of each) */
        void **tmp;
        size_t cap_queue;
};

int gw_fair_weights_parse(const char *list, const char *user, double *ret_share, char *why, size_t n) {
        for (const char *p = list; *p;) {
                p += strspn(p, ", ");
                size_t len = strcspn(p, ",");
                if (!len)
                        break;
                const char *eq = memchr(p, '=', len);
                size_t name_len = eq ? (size_t) (eq - p) : len;
                while (name_len && p[name_len - 1] == ' ')
                        name_len--;
                char num[32];
                size_t num_len = eq ? len - (size_t) (eq - p) - 1 : 0;
                while (num_len && eq[num_len] == ' ') /* "alice=2 , bob=1" */
                        num_len--;
                if (!eq || !name_len || name_len >= FAIR_NAME_MAX || num_len == 0 || num_len >= sizeof num) {
                        snprintf(why, n, "'%.*s' is not USER=WEIGHT (e.g. alice=2,bob=1)", (int) (len < 40 ? len : 40),
                                 p);
                        return -EINVAL;
                }
                memcpy(num, eq + 1, num_len);
                num[num_len] = '\0';
                char *end;
                double w = strtod(num, &end);
                if (end == num || *end || !isfinite(w) || w <= 0 || w > FAIR_WEIGHT_MAX) {
                        snprintf(why, n, "%.*s: weight '%s' is not a number above 0 and at most 1000000",
                                 (int) name_len, p, num);
                        return -EINVAL;
                }
                if (user && ret_share && strlen(user) == name_len && !strncmp(user, p, name_len))
                        *ret_share = w;
                p += len;
        }
        return 0;
}

static struct fair_user *user_get(struct gw_fair *f, uint32_t uid, const char *name) {
        for (size_t i = 0; i < f->n_users; i++)
                if (f->users[i].uid == uid)
                        return &f->users[i];
        if (f->n_users == f->cap_users) {
                f->cap_users = f->cap_users ? f->cap_users * 2 : 16;
                f->users = gw_xrealloc(f->users, f->cap_users * sizeof *f->users);
        }
        struct fair_user *u = &f->users[f->n_users++];
        *u = (struct fair_user){ .uid = uid,
                                 .fs.share = 1,
                                 .idx = SIZE_MAX,
                                 .factor = NAN,
                                 .line = gw_xcalloc(1, GW_FS_EXPLAIN_SIZE) };
        snprintf(u->name, sizeof u->name, "%s", name ? name : "?");
        (void) gw_fair_weights_parse(f->weights, u->name, &u->fs.share, (char[8]){ 0 }, 8);
        return u;
}

static void charge(struct gw_fair *f, uint32_t uid, const char *name, int gpus, gw_usec_t from, gw_usec_t to) {
        if (gpus <= 0 || to <= from)
                return;
        struct fair_user *u = user_get(f, uid, name);
        if (gw_fs_charge(&u->fs, gpus, from, to, f->half_life) < 0)
                log_debug("fairshare: usage of %s over [%lld, %lld] refused", u->name, (long long) from,
                          (long long) to);
}

static void attempt_read(const struct gw_store_attempt_use *r, void *userdata) {
        charge(userdata, r->uid, r->user, __builtin_popcountll(r->gpu_mask), r->start, r->end);
}

int gw_fair_open(struct gw_daemon *d) {
        d->jobs.fair = NULL;
        if (gw_backend_placement(d) != GW_EXEC_PLACE_HERE) /* the queue goes out as it comes */
                return 0;
        struct gw_fair *f = gw_xcalloc(1, sizeof *f);
        f->on = d->cfg->fairshare;
        f->half_life = d->cfg->fairshare_half_life;
        f->weights = d->cfg->fairshare_weights;
        d->jobs.fair = f;
        if (!f->on)
                return 0;
        gw_usec_t back = f->half_life * GW_FAIR_READ_HALF_LIVES;
        gw_usec_t since = f->half_life && d->now_wall > back ? d->now_wall - back : 0;
        int r = gw_store_attempt_uses(d->store, since, attempt_read, f);
        if (r < 0)
                gw_fair_close(d);
        return r;
}

void gw_fair_close(struct gw_daemon *d) {
        struct gw_fair *f = d->jobs.fair;
        if (!f)
                return;
        for (size_t i = 0; i < f->n_users; i++)
                free(f->users[i].line);
        free(f->users);
        free(f->runs);
        free(f->pass_users);
        free(f->pass_factor);
        free(f->dirty);
        free(f->tmp);
        free(f);
        d->jobs.fair = NULL;
}

static struct fair_run *run_get(struct gw_fair *f, const struct gw_job *j) {
        for (size_t i = 0; i < f->n_runs; i++)
                if (f->runs[i].job_id == j->id)
                        return &f->runs[i];
        if (f->n_runs == f->cap_runs) {
                f->cap_runs = f->cap_runs ? f->cap_runs * 2 : 16;
                f->runs = gw_xrealloc(f->runs, f->cap_runs * sizeof *f->runs);
        }
        f->runs[f->n_runs] = (struct fair_run){ .job_id = j->id, .charged_to = j->start_time };
        return &f->runs[f->n_runs++];
}

/* Charges the running job j from where it was charged to up to now (wall clock). */
static void charge_running(struct gw_fair *f, const struct gw_job *j, gw_usec_t now) {
        if (j->start_time <= 0) /* not recorded yet: nothing to charge from */
                return;
        struct fair_run *run = run_get(f, j);
        if (run->charged_to < j->start_time) /* a new attempt of the same job */
                run->charged_to = j->start_time;
        int gpus = j->gpu_mask ? __builtin_popcountll(j->gpu_mask) : j->ngpus;
        charge(f, j->uid, j->user, gpus, run->charged_to, now);
        if (now > run->charged_to)
                run->charged_to = now;
}

void gw_fair_attempt_ended(struct gw_daemon *d, struct gw_djob *dj) {
        struct gw_fair *f = d->jobs.fair;
        if (!f || !f->on)
                return;
        charge_running(f, dj->job, d->now_wall);
        for (size_t i = 0; i < f->n_runs; i++)
                if (f->runs[i].job_id == dj->job->id) {
                        f->runs[i] = f->runs[--f->n_runs];
                        break;
                }
}

/* Forgets the attempts that no longer run without the hook having said so (a start undone). */
static void runs_prune(struct gw_fair *f, const struct gw_daemon *d) {
        if (f->n_runs <= d->jobs.n_running)
                return;
        size_t k = 0;
        for (size_t i = 0; i < f->n_runs; i++)
                for (size_t r = 0; r < d->jobs.n_running; r++)
                        if (d->jobs.running[r]->job->id == f->runs[i].job_id) {
                                f->runs[k++] = f->runs[i];
                                break;
                        }
        f->n_runs = k;
}

/* What fair share keeps of a queued job, by job id in d->state.fair from its first pass: its
 * user's slot in the users' table + 1 (0: not looked up), and the factors its fairshare and
 * fair_line were written from (0: none, new or queued again; GEN_OFF: fair share off). */
struct fair_job {
        uint32_t user;
        uint64_t gen;
};

static struct fair_job *fair_job(struct gw_daemon *d, const struct gw_djob *dj) {
        struct fair_job *fj = gw_keytab_get(&d->state.fair, (uint64_t) dj->job->id);
        if (!fj) {
                fj = gw_xcalloc(1, sizeof *fj);
                gw_keytab_put(&d->state.fair, (uint64_t) dj->job->id, fj);
        }
        return fj;
}

void gw_fair_queued(struct gw_daemon *d, struct gw_djob *dj) {
        struct fair_job *fj = gw_keytab_get(&d->state.fair, (uint64_t) dj->job->id);
        if (fj)
                fj->gen = 0; /* placed by the queue's order: the next pass sorts it in */
}

void gw_fair_forget(struct gw_daemon *d, struct gw_djob *dj) {
        free(gw_keytab_take(&d->state.fair, (uint64_t) dj->job->id));
}

/* The user of a queued job, looked up once per job (a table walk per job and pass would cost
 * the users times the queue at every pass). */
static struct fair_user *user_of(struct gw_fair *f, const struct gw_djob *dj, struct fair_job *fj) {
        if (!fj->user)
                fj->user = (uint32_t) (user_get(f, dj->job->uid, dj->job->user) - f->users) + 1;
        return &f->users[fj->user - 1];
}

static struct fair_user *job_user(struct gw_fair *f, struct gw_daemon *d, const struct gw_djob *dj) {
        return user_of(f, dj, fair_job(d, dj));
}

/* Whether a queued job's user was not counted when the factors were last computed: only a job
 * queued since can say yes. */
static bool users_new(struct gw_fair *f, struct gw_daemon *d) {
        if (f->n_queued_seen == d->jobs.n_queued)
                return false;
        f->n_queued_seen = d->jobs.n_queued;
        bool any = false;
        for (size_t i = 0; i < d->jobs.n_queue; i++)
                any |= job_user(f, d, d->jobs.queue[i])->idx == SIZE_MAX;
        return any;
}

/* The users the factors count: those with a queued job or usage left, indexed in pass order. */
static size_t pass_users(struct gw_fair *f, struct gw_daemon *d) {
        for (size_t i = 0; i < f->n_users; i++)
                f->users[i].idx = SIZE_MAX;
        for (size_t i = 0; i < d->jobs.n_queue; i++)
                job_user(f, d, d->jobs.queue[i])->idx = 0;
        if (f->cap_pass < f->n_users) {
                f->cap_pass = f->n_users;
                f->pass_users = gw_xrealloc(f->pass_users, f->cap_pass * sizeof *f->pass_users);
                f->pass_factor = gw_xrealloc(f->pass_factor, f->cap_pass * sizeof *f->pass_factor);
        }
        size_t m = 0;
        for (size_t i = 0; i < f->n_users; i++) {
                struct fair_user *u = &f->users[i];
                if (u->idx == SIZE_MAX && gw_fs_usage_at(&u->fs, d->now_wall, f->half_life) <= 0)
                        continue;
                u->idx = m;
                f->pass_users[m++] = u->fs;
        }
        return m;
}

/* Charges the running jobs up to now and computes every counted user's factor and words; a
 * user whose factor or words changed gets a new gen, which rewrites its jobs.  -EINVAL when
 * the factors are refused (the previous ones are then not used either). */
static int factors(struct gw_fair *f, struct gw_daemon *d) {
        f->factors_set = false;
        for (size_t i = 0; i < d->jobs.n_running; i++)
                charge_running(f, d->jobs.running[i]->job, d->now_wall);
        runs_prune(f, d);
        size_t m = pass_users(f, d);
        if (gw_fs_factors(f->pass_users, m, d->now_wall, f->half_life, f->pass_factor) < 0)
                return -EINVAL;
        for (size_t i = 0; i < f->n_users; i++) { /* once per user, not per job */
                struct fair_user *u = &f->users[i];
                if (u->idx == SIZE_MAX)
                        continue;
                char line[GW_FS_EXPLAIN_SIZE];
                double factor = f->pass_factor[u->idx];
                if (gw_fs_explain(f->pass_users, m, u->idx, u->name, d->now_wall, f->half_life, line, sizeof line) < 0)
                        snprintf(line, sizeof line, "fairshare %.2f", factor);
                if (factor != u->factor || strcmp(line, u->line)) {
                        u->factor = factor;
                        memcpy(u->line, line, GW_FS_EXPLAIN_SIZE);
                        u->gen = ++f->gen;
                }
        }
        f->factors_set = true;
        f->factors_at = d->now;
        f->n_pass = m;
        return 0;
}

static int fair_cmp(const void *pa, const void *pb) {
        const struct gw_job *a = (*(struct gw_djob *const *) pa)->job, *b = (*(struct gw_djob *const *) pb)->job;
        if (a->priority != b->priority)
                return a->priority > b->priority ? -1 : 1;
        /* A preempted job waits first of its priority; the flag changes only as a job enters
         * the queue (dirty then: new or queued again) or leaves it, so the merge stays exact. */
        if (a->queue_first != b->queue_first)
                return a->queue_first ? -1 : 1;
        if (a->fairshare != b->fairshare)
                return a->fairshare > b->fairshare ? -1 : 1;
        return a->id < b->id ? -1 : a->id > b->id;
}

/* Writes the factor and words of the queued jobs whose user's changed since they were written
 * (and of new ones), then puts those jobs back in order among the others, which kept theirs:
 * priority, then the factor, then submission, the order gw_sched_plan_fair plans in.  The queue
 * is kept in it so that the list and the predicted starts (training_predict.c, which replays
 * the queue in its order) follow the order jobs start in. */
/* Whether every queued job was written from the factors as they are: no user's changed (each
 * change bumps f->gen) and no job entered the queue (new or queued again, its gen reset) since
 * the last writing.  Then a pass need not look at each queued job. */
static bool jobs_current(struct gw_fair *f, const struct gw_daemon *d) {
        if (f->written && f->written_gen == f->gen && f->written_queued == d->jobs.n_queued)
                return true;
        f->written = true;
        f->written_gen = f->gen;
        f->written_queued = d->jobs.n_queued;
        return false;
}

static void jobs_update(struct gw_fair *f, struct gw_daemon *d) {
        if (jobs_current(f, d))
                return;
        size_t n = d->jobs.n_queue;
        if (f->cap_queue < n) {
                f->cap_queue = n;
                f->dirty = gw_xrealloc(f->dirty, n * sizeof *f->dirty);
                f->tmp = gw_xrealloc(f->tmp, n * sizeof *f->tmp);
        }
        bool any = false;
        for (size_t i = 0; i < n; i++) {
                struct gw_djob *dj = d->jobs.queue[i];
                struct fair_job *fj = fair_job(d, dj);
                const struct fair_user *u = user_of(f, dj, fj);
                f->dirty[i] = fj->gen != u->gen;
                if (!f->dirty[i])
                        continue;
                any = true;
                fj->gen = u->gen;
                dj->job->fairshare = u->factor;
                dj->job->fair_line = u->line;
        }
        if (any)
                gw_fs_reorder((void **) d->jobs.queue, n, f->dirty, fair_cmp, f->tmp);
}

/* Fair share off: the order in words, the same for every pass: written once per job. */
#define GEN_OFF UINT64_MAX
static void pass_off(struct gw_fair *f, struct gw_daemon *d) {
        if (jobs_current(f, d))
                return;
        for (size_t i = 0; i < d->jobs.n_queue; i++) {
                struct gw_djob *dj = d->jobs.queue[i];
                struct fair_job *fj = fair_job(d, dj);
                if (fj->gen == GEN_OFF)
                        continue;
                fj->gen = GEN_OFF;
                dj->job->fairshare = 0;
                dj->job->fair_line = "";
        }
}

void gw_fair_pass(struct gw_daemon *d, bool box_full, struct gw_sched_fair *ret) {
        struct gw_fair *f = d->jobs.fair;
        *ret = (struct gw_sched_fair){ NULL, 0 };
        if (!f || (box_full && f->pass_at && d->now - f->pass_at < GW_FAIR_FULL_EVERY))
                return;
        f->pass_at = d->now;
        if (!f->on) {
                pass_off(f, d);
                return;
        }
        /* Usage decays with a half-life of days and a second of a few GPUs adds little to it:
         * factors at most GW_FAIR_FACTORS_EVERY old order the queue as fresh ones would, but
         * for ties that close.  A job's end is charged at once (gw_fair_attempt_ended) and
         * counts from the next computation; a user not counted yet (a new job's) needs one now. */
        bool stale = !f->factors_set || d->now - f->factors_at >= GW_FAIR_FACTORS_EVERY;
        if ((stale || users_new(f, d)) && factors(f, d) < 0) {
                log_debug("fairshare: factors refused; the queue goes by priority and submission");
                return;
        }
        jobs_update(f, d);
        *ret = (struct gw_sched_fair){ f->pass_factor, f->n_pass };
}

void gw_fair_users(struct gw_daemon *d, struct gw_sched_job *pending, size_t n) {
        struct gw_fair *f = d->jobs.fair;
        if (!f || !f->on)
                return;
        for (size_t i = 0; i < n; i++)
                pending[i].fs_user = (uint32_t) job_user(f, d, d->jobs.queue[i])->idx;
}
