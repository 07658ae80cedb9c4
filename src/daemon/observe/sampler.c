#include "daemon/observe/sampler.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/thread.h"

#define MAX_PROCS_PER_GPU 4096
#define MAX_PENDING_EVENTS 256
/* NVML's wait cannot be interrupted: a stop joins the event thread only after its wait
 * returns, so this bounds how long a daemon takes to stop (and a restart's gap). */
#define EVENT_WAIT_MS 100

struct gw_sampler {
        struct gw_gpu_lib *lib;
        unsigned n_gpus;
        gw_usec_t interval;
        int efd;
        pthread_t sample_thread, event_thread;
        bool event_thread_started;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        bool stop;
        struct gw_snapshot *ready; /* newest snapshot not yet taken */
        /* A fresh reading asked for by the loop (gw_sampler_probe), served between snapshots. */
        pthread_cond_t probed;
        uint64_t probe_mask; /* GPUs still to read; 0: no request waits */
        uint64_t probe_asked, probe_done; /* request numbers: the newest asked, the newest answered */
        struct gw_gpu_sample probe[GW_SAMPLER_MAX_GPUS];
        struct gw_nvml_event events[MAX_PENDING_EVENTS];
        size_t n_events;
        unsigned long dropped_events;
};

struct gw_snapshot *gw_snapshot_free(struct gw_snapshot *s) {
        if (!s)
                return NULL;
        for (unsigned i = 0; i < s->n_gpus; i++) {
                free(s->gpu[i].procs);
                free(s->gpu[i].mig);
        }
        free(s);
        return NULL;
}

/* GPU i's MIG layout, read at every snapshot because a GPU may be re-partitioned while we
 * run; NULL for a whole GPU. */
static struct gw_gpu_mig_layout *take_mig(struct gw_gpu_lib *lib, unsigned i) {
        struct gw_gpu_mig_layout *m = gw_xmalloc(sizeof *m);
        if (gw_gpu_mig(lib, i, m) < 0 || !m->enabled) {
                free(m);
                return NULL;
        }
        return m;
}

struct gw_snapshot *gw_snapshot_take(struct gw_gpu_lib *lib, unsigned n_gpus) {
        struct gw_snapshot *s = gw_xcalloc(1, sizeof *s + n_gpus * sizeof s->gpu[0]);
        s->n_gpus = n_gpus;
        /* Its own read: the sampler thread takes it while the loop goes on. */
        s->taken = gw_clock_wall();
        gw_usec_t t0 = gw_clock_mono();
        struct gw_gpu_proc *buf = gw_xmalloc(MAX_PROCS_PER_GPU * sizeof *buf);
        for (unsigned i = 0; i < n_gpus; i++) {
                struct gw_gpu_snapshot *g = &s->gpu[i];
                if (gw_gpu_sample(lib, i, &g->sample) < 0)
                        g->sample.health = GW_GPU_UNAVAILABLE;
                size_t n = 0;
                g->procs_error = gw_gpu_processes(lib, i, buf, MAX_PROCS_PER_GPU, &n);
                if (g->procs_error >= 0 && n > 0) {
                        g->procs = gw_xmalloc(n * sizeof *g->procs);
                        memcpy(g->procs, buf, n * sizeof *buf);
                        g->n_procs = n;
                }
                g->mig = take_mig(lib, i);
        }
        free(buf);
        s->nvml_usec = gw_clock_mono() - t0;
        return s;
}

/* CPU time of the calling thread. */
static gw_usec_t thread_cpu(void) {
        struct timespec ts;
        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
                return 0;
        return (gw_usec_t) ts.tv_sec * GW_USEC_PER_SEC + ts.tv_nsec / 1000;
}

static void notify(struct gw_sampler *s) {
        uint64_t one = 1;
        (void) !write(s->efd, &one, sizeof one);
}

static struct timespec deadline_in(gw_usec_t usec) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t ns = ts.tv_nsec + (usec % GW_USEC_PER_SEC) * 1000;
        ts.tv_sec += (time_t) (usec / GW_USEC_PER_SEC + ns / 1000000000);
        ts.tv_nsec = (long) (ns % 1000000000);
        return ts;
}

/* Reads the GPUs asked for and answers every request made so far.  Called and returns with
 * the lock held; drops it around the NVML calls. */
static void serve_probe(struct gw_sampler *s) {
        uint64_t mask = s->probe_mask, asked = s->probe_asked;
        s->probe_mask = 0;
        pthread_mutex_unlock(&s->lock);
        struct gw_gpu_sample got[GW_SAMPLER_MAX_GPUS];
        for (unsigned i = 0; i < s->n_gpus; i++)
                if ((mask & (UINT64_C(1) << i)) && gw_gpu_sample(s->lib, i, &got[i]) < 0)
                        got[i] = (struct gw_gpu_sample){ .index = i, .health = GW_GPU_UNAVAILABLE };
        pthread_mutex_lock(&s->lock);
        for (unsigned i = 0; i < s->n_gpus; i++)
                if (mask & (UINT64_C(1) << i))
                        s->probe[i] = got[i];
        s->probe_done = asked;
        pthread_cond_broadcast(&s->probed);
}

static void *sample_main(void *arg) {
        struct gw_sampler *s = arg;
        pthread_mutex_lock(&s->lock);
        while (!s->stop) {
                pthread_mutex_unlock(&s->lock);
                struct gw_snapshot *snap = gw_snapshot_take(s->lib, s->n_gpus); /* no lock held */
                snap->sampler_cpu_usec = thread_cpu();
                pthread_mutex_lock(&s->lock);
                gw_snapshot_free(s->ready); /* the loop was too slow to take it: keep the newest */
                s->ready = snap;
                notify(s);
                struct timespec until = deadline_in(s->interval);
                for (;;) {
                        while (!s->stop && !s->probe_mask &&
                               pthread_cond_timedwait(&s->wake, &s->lock, &until) != ETIMEDOUT)
                                ;
                        if (s->stop || !s->probe_mask)
                                break;
                        serve_probe(s); /* then wait out the interval: a probe is not a snapshot */
                }
        }
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

static void *event_main(void *arg) {
        struct gw_sampler *s = arg;
        for (;;) {
                pthread_mutex_lock(&s->lock);
                bool stop = s->stop;
                pthread_mutex_unlock(&s->lock);
                if (stop)
                        break;
                struct gw_nvml_event ev;
                int r = gw_gpu_wait_event(s->lib, EVENT_WAIT_MS, &ev);
                if (r == -ETIMEDOUT)
                        continue;
                if (r == -ENOTSUP) {
                        log_info("NVML events are not supported here: no Xid monitoring");
                        break;
                }
                if (r < 0) {
                        /* A lost GPU can make every wait fail at once: do not spin. */
                        struct timespec ts = { 0, 200 * 1000 * 1000 };
                        nanosleep(&ts, NULL);
                        continue;
                }
                pthread_mutex_lock(&s->lock);
                if (s->n_events < MAX_PENDING_EVENTS)
                        s->events[s->n_events++] = ev;
                else
                        s->dropped_events++;
                notify(s);
                pthread_mutex_unlock(&s->lock);
        }
        return NULL;
}

int gw_sampler_start(struct gw_gpu_lib *lib, unsigned n_gpus, gw_usec_t interval, struct gw_sampler **ret,
                     int *ret_fd) {
        struct gw_sampler *s = gw_xcalloc(1, sizeof *s);
        s->lib = lib;
        s->n_gpus = n_gpus;
        s->interval = interval;
        s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (s->efd < 0) {
                free(s);
                return -errno;
        }
        gw_cond_init_monotonic(&s->wake);
        gw_cond_init_monotonic(&s->probed);
        pthread_mutex_init(&s->lock, NULL);
        /* Named so that `top -H` and the benchmark can tell NVML's time from the loop's. */
        int r = gw_thread_start(&s->sample_thread, sample_main, s, "gw-sample");
        if (r == 0)
                s->event_thread_started = gw_thread_start(&s->event_thread, event_main, s, "gw-nvml-events") == 0;
        if (r != 0) {
                (void) close(s->efd);
                free(s);
                return -r;
        }
        *ret = s;
        *ret_fd = s->efd;
        return 0;
}

struct gw_sampler *gw_sampler_stop(struct gw_sampler *s) {
        if (!s)
                return NULL;
        pthread_mutex_lock(&s->lock);
        s->stop = true;
        pthread_cond_broadcast(&s->wake);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->sample_thread, NULL);
        if (s->event_thread_started)
                pthread_join(s->event_thread, NULL);
        gw_snapshot_free(s->ready);
        pthread_cond_destroy(&s->wake);
        pthread_cond_destroy(&s->probed);
        pthread_mutex_destroy(&s->lock);
        (void) close(s->efd);
        free(s);
        return NULL;
}

struct gw_snapshot *gw_sampler_take(struct gw_sampler *s) {
        pthread_mutex_lock(&s->lock);
        struct gw_snapshot *snap = TAKE_PTR(s->ready);
        pthread_mutex_unlock(&s->lock);
        return snap;
}

size_t gw_sampler_events(struct gw_sampler *s, struct gw_nvml_event *out, size_t max) {
        pthread_mutex_lock(&s->lock);
        size_t n = s->n_events < max ? s->n_events : max;
        memcpy(out, s->events, n * sizeof *out);
        memmove(s->events, s->events + n, (s->n_events - n) * sizeof *out);
        s->n_events -= n;
        pthread_mutex_unlock(&s->lock);
        return n;
}

void gw_sampler_ack(struct gw_sampler *s) {
        uint64_t v;
        (void) !read(s->efd, &v, sizeof v);
}

int gw_sampler_probe(struct gw_sampler *s, uint64_t mask, gw_usec_t bound, struct gw_gpu_sample *ret) {
        if (s->n_gpus < 64)
                mask &= (UINT64_C(1) << s->n_gpus) - 1;
        if (!mask)
                return -EINVAL;
        pthread_mutex_lock(&s->lock);
        /* An earlier probe still unanswered means NVML hangs in the sampler's thread (a dying
         * GPU does that): waiting again would stall the loop once more per failed job. */
        gw_usec_t wait = s->probe_done < s->probe_asked ? 0 : bound;
        uint64_t asked = ++s->probe_asked;
        s->probe_mask |= mask;
        pthread_cond_broadcast(&s->wake);
        struct timespec until = deadline_in(wait);
        while (!s->stop && s->probe_done < asked && pthread_cond_timedwait(&s->probed, &s->lock, &until) != ETIMEDOUT)
                ;
        bool answered = s->probe_done >= asked;
        for (unsigned i = 0; answered && i < s->n_gpus; i++)
                if (mask & (UINT64_C(1) << i))
                        ret[i] = s->probe[i];
        pthread_mutex_unlock(&s->lock);
        return answered ? 0 : -ETIMEDOUT;
}
