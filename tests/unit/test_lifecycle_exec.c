/* A job's whole life in the daemon (src/daemon as a library) against the fake executor
 * (tests/fakes/fake_exec.h): a real SQLite store in a temporary directory, a fake clock (the
 * daemon's now and now_wall, set by the test), no sockets, no GPUs, no sampler, no process. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "daemon/daemon.h"
#include "daemon/backup/backup.h"
#include "daemon/life/jobs.h"
#include "daemon/life/queue.h"
#include "daemon/sharing/sharing.h"
#include "daemon/training/training.h"
#include "fake_exec.h"
#include "store/store.h"

#define SEC GW_USEC_PER_SEC
#define WALL_BASE ((gw_usec_t) 1763769600 * SEC)
#define GRACE_SECONDS 30

struct fixture {
        char dir[64];
        struct gw_config cfg;
        struct gw_daemon d;
        struct fake_exec *fx;
        bool open;
};

static void rm_rf(const char *dir) {
        DIR *dh = opendir(dir);
        if (dh) {
                struct dirent *de;
                while ((de = readdir(dh))) {
                        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                                continue;
                        char p[600];
                        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
                        struct stat st;
                        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
                                rm_rf(p);
                        else
                                (void) unlink(p);
                }
                closedir(dh);
        }
        (void) rmdir(dir);
}

/* The daemon's clocks where its code reads them afresh (a stop's grace counts from its
 * SIGTERM, not from the loop's instant): the fixture's, as d->now and d->now_wall are. */
static const struct gw_daemon *clock_of;
static gw_usec_t fake_mono(void) { return clock_of->now; }
static gw_usec_t fake_wall(void) { return clock_of->now_wall; }

/* The daemon's state as main.c sets it up, without its doors, its GPUs (two of 80 GB, never
 * sampled), its threads or its lock: the store, the accounts, bookings and quotas, and the
 * jobs the store has (recovered through the executor).  now: the fake clock. */
static void daemon_open(struct fixture *f, gw_usec_t now, struct fake_exec *fx) {
        char grace[16];
        snprintf(grace, sizeof grace, "%d", GRACE_SECONDS);
        char *argv[] = { "gpuwardd", "--state-dir", f->dir, "--allow-root-jobs", "--grace-seconds", grace, NULL };
        assert_int_equal(gw_config_load(&f->cfg, 6, argv), 0);
        struct gw_daemon *d = &f->d;
        *d = (struct gw_daemon){ .cfg = &f->cfg,
                                 .loop = { .epfd = -1, .sigfd = -1, .lock_fd = -1, .euid = geteuid() } };
        d->users = gw_userdb_new(NULL);
        assert_non_null(d->users);
        snprintf(d->loop.log_dir, sizeof d->loop.log_dir, "%s/logs", f->dir);
        snprintf(d->loop.run_dir, sizeof d->loop.run_dir, "%s/run", f->dir);
        (void) mkdir(d->loop.log_dir, 0755);
        (void) mkdir(d->loop.run_dir, 0755);
        char err[256] = "";
        if (gw_store_open(f->dir, &d->store, err, sizeof err) < 0)
                fail_msg("gw_store_open(%s): %s", f->dir, err);
        d->host.n_gpus = 2;
        for (unsigned i = 0; i < d->host.n_gpus; i++) {
                d->host.gpus[i].info.mem_total = UINT64_C(80) << 30;
                snprintf(d->host.gpus[i].info.name, sizeof d->host.gpus[i].info.name, "Fake GPU");
        }
        d->host.max_gpu_mem = UINT64_C(80) << 30;
        d->now = now;
        d->now_wall = WALL_BASE + now;
        d->loop.started_at = d->now_wall;
        clock_of = d;
        gw_now_mono = fake_mono;
        gw_now_wall = fake_wall;
        snprintf(d->loop.boot_id, sizeof d->loop.boot_id, "fake-boot");
        f->fx = fx;
        d->exec = &fx->ops;
        d->exec->ended = gw_exec_attempt_end;
        gw_lifecycle_subscribe_features(&d->hooks); /* as gpuwardd: recovery, the limits... */
        assert_int_equal(gw_sharing_open(d), 0);
        assert_int_equal(gw_jobs_recover(d), 0);
        f->open = true;
}

/* What shutdown_daemon (main.c) frees: the running jobs are left to the executor. */
static void daemon_close(struct fixture *f) {
        struct gw_daemon *d = &f->d;
        if (!f->open)
                return;
        gw_jobs_bury(d);
        gw_jobs_unwritten_close(d);
        for (size_t i = 0; i < d->jobs.map.cap; i++) {
                struct gw_djob *dj = d->jobs.map.slots[i];
                if (dj && (uintptr_t) dj != 1)
                        gw_djob_free(d, dj);
        }
        gw_jobmap_free(&d->jobs.map);
        free(d->jobs.queue);
        free(d->jobs.running);
        free(d->jobs.to_launch);
        d->exec->close(d);
        gw_backup_close(d);
        gw_sharing_close(d);
        gw_userdb_free(d->users);
        d->store = gw_store_close(d->store);
        gw_config_done(&f->cfg);
        free(f->fx);
        f->fx = NULL;
        f->open = false;
}

static int setup(void **state) {
        struct fixture *f = calloc(1, sizeof *f);
        assert_non_null(f);
        snprintf(f->dir, sizeof f->dir, "/tmp/gw-test-lifecycle-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        gw_log_set_level(GW_LOG_WARN);
        daemon_open(f, 1000 * SEC, fake_exec_new());
        *state = f;
        return 0;
}

static int teardown(void **state) {
        struct fixture *f = *state;
        daemon_close(f);
        gw_now_mono = gw_clock_mono;
        gw_now_wall = gw_clock_wall;
        rm_rf(f->dir);
        free(f);
        return 0;
}

/* One loop iteration (main.c's run_loop) dt after the last: deadlines, a scheduling pass,
 * then the ended jobs freed. */
static void step(struct fixture *f, gw_usec_t dt) {
        struct gw_daemon *d = &f->d;
        d->now += dt;
        d->now_wall += dt;
        /* main.c's tick: the features' own deadlines, then the jobs'. */
        (void) gw_sharing_tick(d);
        (void) gw_train_restore_tick(d);
        (void) gw_backup_tick(d);
        (void) gw_jobs_tick(d);
        (void) gw_schedule_tick(d);
        if (d->jobs.sched_dirty)
                gw_schedule(d);
        gw_jobs_bury(d);
}

/* An iteration with events: the executor's word inside the loop's transaction, as main.c
 * runs them. */
static void exit_in_loop(struct fixture *f, int64_t id, int status, bool lost) {
        struct gw_daemon *d = &f->d;
        gw_jobs_batch_begin(d);
        if (lost)
                fake_exec_lose(d, f->fx, id);
        else
                fake_exec_exit(d, f->fx, id, status);
        if (d->jobs.sched_dirty)
                gw_schedule(d);
        gw_jobs_batch_end(d);
        gw_jobs_bury(d);
}

/* A job of ngpus GPUs for limit (0: the default), after job `after` completes (0: none). */
static int64_t submit_as(struct fixture *f, int retries, int ngpus, gw_usec_t limit, int64_t after) {
        struct gw_job *j = gw_xcalloc(1, sizeof *j);
        j->user = gw_xstrdup("root");
        j->uid = geteuid();
        j->gid = getegid();
        char *argv[] = { "/bin/true", NULL };
        j->argv = gw_strv_copy(argv);
        j->cwd = gw_xstrdup("/");
        j->ngpus = ngpus;
        j->retries = retries;
        j->time_limit = limit ? limit : f->cfg.default_time_limit; /* as the API fills it in */
        j->after_job = after;
        j->after_kind = GW_DEP_KIND_OK;
        struct gw_submit_error err = { 0 };
        int64_t id = 0;
        if (gw_job_submit(&f->d, j, false, &err, &id) < 0)
                fail_msg("submit refused: %d %s: %s", err.status, err.field, err.message);
        assert_true(id > 0);
        return id;
}

static int64_t submit(struct fixture *f, int retries) { return submit_as(f, retries, 1, 0, 0); }

/* The job as the store has it. */
static struct gw_job *stored(struct fixture *f, int64_t id) {
        struct gw_job *j = NULL;
        assert_int_equal(gw_store_job_get(f->d.store, id, &j), 0);
        return j;
}

static void assert_stored_state(struct fixture *f, int64_t id, enum gw_job_state want) {
        _cleanup_(gw_job_freep) struct gw_job *j = stored(f, id);
        if (j->state != want)
                fail_msg("job %lld is %s, not %s", (long long) id, gw_job_state_name(j->state),
                         gw_job_state_name(want));
}

static void test_runs_to_completed(void **state) {
        struct fixture *f = *state;
        int64_t id = submit(f, 0);
        assert_stored_state(f, id, GW_JOB_PENDING);
        step(f, SEC);
        struct fake_attempt *a = fake_exec_attempt(f->fx, id);
        assert_non_null(a);
        assert_int_equal(a->attempt, 1);
        assert_false(a->adopted);
        assert_int_equal(f->d.jobs.n_running, 1);
        {
                _cleanup_(gw_job_freep) struct gw_job *j = stored(f, id);
                assert_int_equal(j->state, GW_JOB_RUNNING);
                assert_true(j->gpu_mask == 1 || j->gpu_mask == 2);
                assert_true(f->d.host.gpus[j->gpu_mask == 1 ? 0 : 1].job_id == id);
        }
        step(f, 5 * SEC);
        exit_in_loop(f, id, 0, false);
        assert_int_equal(f->d.jobs.n_running, 0);
        assert_null(gw_jobmap_get(&f->d.jobs.map, id));
        assert_int_equal(f->d.host.gpus[0].job_id, 0);
        assert_int_equal(f->d.host.gpus[1].job_id, 0);
        _cleanup_(gw_job_freep) struct gw_job *j = stored(f, id);
        assert_int_equal(j->state, GW_JOB_COMPLETED);
        assert_true(j->has_exit);
        assert_int_equal(j->exit_code, 0);
        /* Runtime on the job's own clock: its start to its end, the 5 s it ran. */
        assert_int_equal(j->end_time - j->start_time, 5 * SEC);
        assert_int_equal(f->fx->ends_told, 1);
        assert_int_equal(fake_exec_attempt(f->fx, id)->n_signals, 0);
}

/* Lost (the executor cannot say how it ended) is retried by default: a second attempt
 * starts once its backoff is over, and the first is on record. */
static void test_lost_is_retried(void **state) {
        struct fixture *f = *state;
        int64_t id = submit(f, 2);
        step(f, SEC);
        assert_int_equal(fake_exec_attempt(f->fx, id)->attempt, 1);
        exit_in_loop(f, id, 0, true);
        {
                _cleanup_(gw_job_freep) struct gw_job *j = stored(f, id);
                assert_int_equal(j->state, GW_JOB_PENDING);
                assert_int_equal(j->attempt, 2);
                assert_int_equal(j->wait_reason, GW_REASON_BACKOFF);
        }
        assert_int_equal(f->d.jobs.n_running, 0);
        struct gw_job_attempt *att = NULL;
        size_t n = 0;
        assert_int_equal(gw_store_attempts(f->d.store, id, &att, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(att[0].attempt, 1);
        gw_job_attempts_free(att, n);
        /* Not before its backoff (at least the base, 10 s, at most the cap, 600 s). */
        step(f, SEC);
        assert_int_equal(fake_exec_attempt(f->fx, id)->attempt, 1);
        step(f, 601 * SEC);
        step(f, 0);
        struct fake_attempt *a = fake_exec_attempt(f->fx, id);
        assert_int_equal(a->attempt, 2);
        assert_false(a->ended);
        assert_stored_state(f, id, GW_JOB_RUNNING);
        exit_in_loop(f, id, 0, false);
        _cleanup_(gw_job_freep) struct gw_job *j = stored(f, id);
        assert_int_equal(j->state, GW_JOB_COMPLETED);
        assert_int_equal(j->attempt, 2);
        assert_int_equal(f->fx->ends_told, 2);
}

/* A cancel: the stop on record, SIGTERM at once, SIGKILL only once the clock passes the
 * grace period, CANCELLED when the executor tells the end; a signal after it is a no-op. */
static void test_cancel_running(void **state) {
        struct fixture *f = *state;
        int64_t id = submit(f, 0);
        step(f, SEC);
        struct gw_djob *dj = gw_jobmap_get(&f->d.jobs.map, id);
        assert_non_null(dj);
        assert_int_equal(gw_job_cancel(&f->d, dj, "cancelled by root"), 0);
        struct fake_attempt *a = fake_exec_attempt(f->fx, id);
        assert_int_equal(a->n_signals, 1);
        assert_int_equal(a->signals[0], SIGTERM);
        {
                _cleanup_(gw_job_freep) struct gw_job *j = stored(f, id);
                assert_int_equal(j->state, GW_JOB_RUNNING);
                assert_int_equal(j->stop_state, GW_JOB_CANCELLED);
        }
        step(f, (GRACE_SECONDS - 1) * SEC);
        assert_int_equal(a->n_signals, 1);
        step(f, 2 * SEC);
        assert_int_equal(a->n_signals, 2);
        assert_int_equal(a->signals[1], SIGKILL);
        step(f, 10 * SEC); /* no second SIGKILL */
        assert_int_equal(a->n_signals, 2);
        exit_in_loop(f, id, SIGKILL, false); /* the wait status of a process killed by SIGKILL */
        _cleanup_(gw_job_freep) struct gw_job *j = stored(f, id);
        assert_int_equal(j->state, GW_JOB_CANCELLED);
        assert_int_equal(j->signal, SIGKILL);
        assert_int_equal(f->d.jobs.n_running, 0);
        assert_int_equal(a->late_signals, 0);
}

/* A daemon restart: the running job is offered to the executor's adopt, which finds it
 * running; its end, told later, completes it.  A job whose processes are gone is told lost
 * by adopt and retried. */
static void test_restart_adopts(void **state) {
        struct fixture *f = *state;
        int64_t kept = submit(f, 0), gone = submit(f, 2);
        step(f, SEC);
        assert_int_equal(f->d.jobs.n_running, 2);
        gw_usec_t now = f->d.now;
        daemon_close(f);

        struct fake_exec *fx = fake_exec_new();
        fx->running[fx->n_running++] = kept;
        daemon_open(f, now + 3 * SEC, fx);
        assert_int_equal(fx->adopt_begun, 1);
        assert_int_equal(fx->adopt_ended, 1);
        struct fake_attempt *a = fake_exec_attempt(fx, kept);
        assert_non_null(a);
        assert_true(a->adopted);
        assert_false(a->ended);
        assert_int_equal(f->d.jobs.n_running, 1);
        assert_non_null(gw_jobmap_get(&f->d.jobs.map, kept));
        assert_stored_state(f, kept, GW_JOB_RUNNING);
        assert_true(fake_exec_attempt(fx, gone)->ended);
        {
                _cleanup_(gw_job_freep) struct gw_job *j = stored(f, gone);
                assert_int_equal(j->state, GW_JOB_PENDING);
                assert_int_equal(j->attempt, 2);
        }
        /* Signals reach the adopted attempt through the executor. */
        struct gw_djob *dj = gw_jobmap_get(&f->d.jobs.map, kept);
        gw_job_signal(&f->d, dj, SIGUSR1);
        assert_int_equal(a->n_signals, 1);
        assert_int_equal(a->signals[0], SIGUSR1);
        step(f, SEC);
        exit_in_loop(f, kept, 0, false);
        assert_stored_state(f, kept, GW_JOB_COMPLETED);
}

/* A start the executor refuses ends the job FAILED, with the executor's reason; nothing is
 * told afterwards. */
static void test_start_refused(void **state) {
        struct fixture *f = *state;
        f->fx->start_error = -EAGAIN;
        int64_t id = submit(f, 0);
        step(f, SEC);
        assert_null(fake_exec_attempt(f->fx, id));
        _cleanup_(gw_job_freep) struct gw_job *j = stored(f, id);
        assert_int_equal(j->state, GW_JOB_FAILED);
        assert_non_null(strstr(j->end_reason, "start refused"));
        assert_int_equal(f->d.jobs.n_running, 0);
        assert_int_equal(f->d.host.gpus[0].job_id, 0);
}

static enum gw_job_reason reason_of(struct fixture *f, int64_t id) {
        struct gw_djob *dj = gw_jobmap_get(&f->d.jobs.map, id);
        assert_non_null(dj);
        return dj->job->wait_reason;
}

static bool is_running(struct fixture *f, int64_t id) {
        struct gw_djob *dj = gw_jobmap_get(&f->d.jobs.map, id);
        return dj && dj->job->state == GW_JOB_RUNNING;
}

/* A long queue draining: between whole passes a pass plans only the queue's head, which takes
 * the GPU an end freed; the job far back keeps the reason of the last whole pass until the
 * next, due GW_SCHED_WHOLE_EVERY after it. */
static void test_long_queue_head_pass(void **state) {
        struct fixture *f = *state;
        int64_t first = submit(f, 0), second = submit(f, 0), third = submit(f, 0);
        for (int i = 0; i < GW_SCHED_WINDOW + 10; i++)
                (void) submit(f, 0);
        int64_t tail = submit_as(f, 0, 1, 0, first); /* after the first completes */
        step(f, SEC);
        assert_true(is_running(f, first) && is_running(f, second));
        assert_int_equal(reason_of(f, tail), GW_REASON_DEPENDENCY);
        gw_usec_t whole = f->d.jobs.whole_pass_at;
        assert_int_equal(gw_schedule_tick(&f->d), GW_USEC_INFINITY); /* nothing deferred yet */

        step(f, SEC / 10);
        exit_in_loop(f, first, 0, false);
        assert_true(is_running(f, third)); /* the GPU freed went to the queue's head */
        assert_int_equal(f->d.jobs.whole_pass_at, whole);
        assert_int_equal(reason_of(f, tail), GW_REASON_DEPENDENCY); /* not looked at again yet */
        assert_int_equal(gw_schedule_tick(&f->d), whole + GW_SCHED_WHOLE_EVERY);

        step(f, GW_SCHED_WHOLE_EVERY); /* the whole pass that was due */
        assert_true(f->d.jobs.whole_pass_at > whole);
        assert_int_equal(reason_of(f, tail), GW_REASON_RESOURCES);
        assert_int_equal(gw_schedule_tick(&f->d), GW_USEC_INFINITY);
}

/* A GPU the queue's head cannot use is left over after it: the pass goes on to the whole
 * queue at once, where a short job far back backfills it. */
static void test_long_queue_backfill_far_back(void **state) {
        struct fixture *f = *state;
        int64_t a = submit(f, 0), b = submit(f, 0);
        for (int i = 0; i < GW_SCHED_WINDOW + 10; i++)
                (void) submit_as(f, 0, 2, 0, 0);
        int64_t shorty = submit_as(f, 0, 1, 60 * SEC, 0);
        step(f, SEC);
        assert_true(is_running(f, a) && is_running(f, b));
        assert_false(is_running(f, shorty));
        gw_usec_t whole = f->d.jobs.whole_pass_at;

        step(f, SEC / 10);
        exit_in_loop(f, b, 0, false);
        assert_true(is_running(f, shorty)); /* ends before a's limit, when the head would start */
        assert_true(f->d.jobs.whole_pass_at > whole);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_runs_to_completed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_lost_is_retried, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cancel_running, setup, teardown),
                cmocka_unit_test_setup_teardown(test_restart_adopts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_start_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_long_queue_head_pass, setup, teardown),
                cmocka_unit_test_setup_teardown(test_long_queue_backfill_far_back, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
