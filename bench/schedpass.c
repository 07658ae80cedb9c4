/* Benchmark of the daemon's scheduling pass (gw_schedule, daemon/life/queue.c) with a long queue
 * under fair share: the daemon's own code, in process, on a real store in a temp dir, without
 * its doors, GPUs or threads (set up as tests/unit/test_lifecycle_exec.c does).
 *
 * Four GPUs, three of them held by running jobs of three users; --pending queued 2-GPU jobs of
 * --users users (with finished GPU-hours of their own in the store), so that every pass plans
 * the whole queue and starts nothing.  Each pass is one loop iteration later (--step-ms of
 * the clock); with --end-every K, before every K-th pass one running attempt ends and the
 * next starts on the same GPU (what a drain does).  Prints the median and the slowest pass.
 *
 *   gw-bench-schedpass [--pending N] [--users N] [--runs N] [--step-ms N] [--end-every K]
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "daemon/base/config.h"
#include "daemon/daemon.h"
#include "daemon/base/fairshare.h"
#include "daemon/sharing/sharing.h"
#include "daemon/life/queue.h"

#define SEC GW_USEC_PER_SEC
#define HOUR (3600 * SEC)
#define WALL_BASE ((gw_usec_t) 1763769600 * SEC)

struct params {
        long pending, users, runs, step_ms, end_every;
};

static double now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int dbl_cmp(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

static void rm_rf(const char *dir) {
        DIR *dh = opendir(dir);
        for (struct dirent *de; dh && (de = readdir(dh));) {
                char p[600];
                snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
                struct stat st;
                if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
                        continue;
                if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
                        rm_rf(p);
                else
                        (void) unlink(p);
        }
        if (dh)
                closedir(dh);
        (void) rmdir(dir);
}

static const char *const ARGV[] = { "true", NULL };

static struct gw_job *new_job(int64_t id, long user, enum gw_job_state st, int ngpus) {
        struct gw_job *j = gw_xcalloc(1, sizeof *j);
        char name[32];
        snprintf(name, sizeof name, "user%ld", user);
        *j = (struct gw_job){ .id = id,
                              .uid = (uint32_t) (20000 + user),
                              .gid = 20000,
                              .state = st,
                              .ngpus = ngpus,
                              .user = gw_xstrdup(name),
                              .name = gw_xstrdup("bench"),
                              .cwd = gw_xstrdup("/"),
                              .argv = gw_strv_copy((char **) ARGV) };
        return j;
}

/* A finished attempt of user's in the store: the usage fair share reads at start. */
static void finished(struct gw_store *s, long user, double hours) {
        struct gw_job *j = new_job(0, user, GW_JOB_COMPLETED, 1);
        j->attempt = 1;
        j->gpu_mask = 1;
        j->end_time = WALL_BASE - HOUR;
        j->start_time = j->end_time - (gw_usec_t) (hours * HOUR);
        if (gw_store_job_insert(s, j, "bench") < 0)
                exit(1);
        struct gw_job_attempt a = { .attempt = 1,
                                    .gpu_mask = 1,
                                    .start_time = j->start_time,
                                    .end_time = j->end_time,
                                    .class_name = (char *) "ok",
                                    .evidence = (char *) "",
                                    .epoch = -1 };
        if (gw_store_attempt_add(s, j->id, &a) < 0)
                exit(1);
        gw_job_free(j);
}

static struct gw_djob *add(struct gw_daemon *d, struct gw_job *j) {
        struct gw_djob *dj = gw_xcalloc(1, sizeof *dj);
        dj->job = j;
        gw_jobmap_put(&d->jobs.map, dj);
        return dj;
}

static int parse(int argc, char **argv, struct params *p) {
        for (int i = 1; i + 1 < argc; i += 2) {
                long v = strtol(argv[i + 1], NULL, 10);
                if (!strcmp(argv[i], "--pending"))
                        p->pending = v;
                else if (!strcmp(argv[i], "--users"))
                        p->users = v;
                else if (!strcmp(argv[i], "--runs"))
                        p->runs = v;
                else if (!strcmp(argv[i], "--step-ms"))
                        p->step_ms = v;
                else if (!strcmp(argv[i], "--end-every"))
                        p->end_every = v;
                else
                        return -1;
        }
        return (argc % 2 == 1 && p->pending > 0 && p->users > 0 && p->runs > 0 && p->step_ms >= 0 && p->end_every >= 0)
                       ? 0
                       : -1;
}

int main(int argc, char **argv) {
        struct params p = { .pending = 10000, .users = 20, .runs = 200, .step_ms = 5, .end_every = 0 };
        if (parse(argc, argv, &p) < 0) {
                fprintf(stderr, "usage: %s [--pending N] [--users N] [--runs N] [--step-ms N] [--end-every K]\n",
                        argv[0]);
                return 2;
        }
        char dir[64] = "/tmp/gw-bench-schedpass-XXXXXX", err[256] = "";
        if (!mkdtemp(dir))
                return 1;
        char *cargv[] = { "gpuwardd", "--state-dir", dir, "--fairshare", "true", NULL };
        struct gw_config cfg;
        if (gw_config_load(&cfg, 5, cargv) < 0)
                return 1;
        struct gw_daemon d = { .cfg = &cfg, .loop = { .epfd = -1, .sigfd = -1, .lock_fd = -1, .euid = geteuid() } };
        if (gw_store_open(dir, &d.store, err, sizeof err) < 0) {
                fprintf(stderr, "store: %s\n", err);
                return 1;
        }
        d.now = 1000 * SEC;
        d.now_wall = WALL_BASE;
        srand(1);
        for (long u = 0; u < p.users; u++)
                finished(d.store, u, 1 + rand() % 200);
        d.host.n_gpus = 4;
        for (unsigned i = 0; i < d.host.n_gpus; i++)
                d.host.gpus[i].info.mem_total = UINT64_C(80) << 30;
        d.host.max_gpu_mem = UINT64_C(80) << 30;
        gw_lifecycle_subscribe_features(&d.hooks);
        if (gw_sharing_open(&d) < 0 || gw_fair_open(&d) < 0)
                return 1;
        int64_t id = 1000;
        struct gw_djob *running[3];
        for (unsigned i = 0; i < 3; i++) {
                struct gw_job *j = new_job(id++, i % p.users, GW_JOB_RUNNING, 1);
                j->gpu_mask = UINT64_C(1) << i;
                j->start_time = d.now_wall;
                running[i] = add(&d, j);
                running[i]->limit_at = d.now + 24 * HOUR;
                d.host.gpus[i].job_id = j->id;
                gw_running_add(&d, running[i]);
        }
        for (long k = 0; k < p.pending; k++) {
                struct gw_djob *dj = add(&d, new_job(id++, rand() % p.users, GW_JOB_PENDING, 2));
                dj->job->time_limit = HOUR;
                gw_queue_insert(&d, dj);
        }
        gw_schedule(&d); /* the first pass sorts the whole queue in */
        double *t = gw_xmalloc(p.runs * sizeof *t);
        for (long r = 0; r < p.runs; r++) {
                d.now += p.step_ms * 1000;
                d.now_wall += p.step_ms * 1000;
                if (p.end_every && r % p.end_every == 0) { /* an attempt ends, the next starts */
                        struct gw_djob *dj = running[r / p.end_every % 3];
                        gw_fair_attempt_ended(&d, dj);
                        dj->job->start_time = d.now_wall;
                }
                double t0 = now_ms();
                gw_schedule(&d);
                t[r] = now_ms() - t0;
        }
        qsort(t, p.runs, sizeof *t, dbl_cmp);
        printf("{\"pending\": %ld, \"users\": %ld, \"runs\": %ld, \"step_ms\": %ld, \"end_every\": %ld, "
               "\"pass_ms_p50\": %.3f, \"pass_ms_max\": %.3f}\n",
               p.pending, p.users, p.runs, p.step_ms, p.end_every, t[p.runs / 2], t[p.runs - 1]);
        free(t);
        for (size_t i = 0; i < d.jobs.map.cap; i++) {
                struct gw_djob *dj = d.jobs.map.slots[i];
                if (dj && (uintptr_t) dj != 1) {
                        gw_job_free(dj->job);
                        free(dj);
                }
        }
        gw_jobmap_free(&d.jobs.map);
        free(d.jobs.queue);
        free(d.jobs.running);
        gw_fair_close(&d);
        gw_sharing_close(&d);
        d.store = gw_store_close(d.store);
        gw_config_done(&cfg);
        rm_rf(dir);
        return 0;
}
