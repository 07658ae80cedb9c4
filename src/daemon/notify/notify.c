/* Webhooks (see notify.h): a bounded queue of JSON payloads and one thread that POSTs each
 * to every URL with libcurl (loaded at run time), trying three times. */
#include "daemon/notify/notify.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/codec.h"
#include "api/jsonout.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "base/text.h"
#include "base/thread.h"
#include "core/webhook.h"
#include "daemon/base/config.h"

/* libcurl is loaded when webhooks are set, not linked: for everyone else the daemon maps none
 * of its dozen libraries (TLS, HTTP/2, LDAP, ...), a few MiB of resident memory. */
#define LIBCURL "libcurl.so.4"
static struct {
        void *lib;
        CURLcode (*global_init)(long flags);
        void (*global_cleanup)(void);
        CURL *(*easy_init)(void);
        void (*easy_cleanup)(CURL *c);
        void (*easy_reset)(CURL *c);
        CURLcode (*easy_setopt)(CURL *c, CURLoption opt, ...);
        CURLcode (*easy_perform)(CURL *c);
        CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
        const char *(*easy_strerror)(CURLcode rc);
        struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
        void (*slist_free_all)(struct curl_slist *l);
} cu;

/* 0, or -ENOENT with the reason in why. */
static int load_curl(char *why, size_t n) {
        if (cu.lib)
                return 0;
        void *lib = dlopen(LIBCURL, RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
                snprintf(why, n, "cannot load %s (Debian package libcurl4): %s", LIBCURL, dlerror());
                return -ENOENT;
        }
        static const char *const names[] = { "curl_global_init",  "curl_global_cleanup", "curl_easy_init",
                                             "curl_easy_cleanup", "curl_easy_reset",     "curl_easy_setopt",
                                             "curl_easy_perform", "curl_easy_getinfo",   "curl_easy_strerror",
                                             "curl_slist_append", "curl_slist_free_all" };
        void *fn[sizeof names / sizeof names[0]];
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
                if (!(fn[i] = dlsym(lib, names[i]))) {
                        snprintf(why, n, "%s has no %s", LIBCURL, names[i]);
                        dlclose(lib);
                        return -ENOENT;
                }
        /* POSIX: a data pointer from dlsym is the function's address. */
        memcpy(&cu.global_init, &fn[0], sizeof fn[0]);
        memcpy(&cu.global_cleanup, &fn[1], sizeof fn[1]);
        memcpy(&cu.easy_init, &fn[2], sizeof fn[2]);
        memcpy(&cu.easy_cleanup, &fn[3], sizeof fn[3]);
        memcpy(&cu.easy_reset, &fn[4], sizeof fn[4]);
        memcpy(&cu.easy_setopt, &fn[5], sizeof fn[5]);
        memcpy(&cu.easy_perform, &fn[6], sizeof fn[6]);
        memcpy(&cu.easy_getinfo, &fn[7], sizeof fn[7]);
        memcpy(&cu.easy_strerror, &fn[8], sizeof fn[8]);
        memcpy(&cu.slist_append, &fn[9], sizeof fn[9]);
        memcpy(&cu.slist_free_all, &fn[10], sizeof fn[10]);
        cu.lib = lib;
        return 0;
}

#define QUEUE_MAX 1024
#define TRIES 3
#define TIMEOUT_S 10L

struct gw_notify {
        char **urls;
        size_t n_urls;
        unsigned topics;
        char host[64];
        uint64_t job_fields;

        pthread_t thread;
        bool started; /* the thread runs; the lock and wake exist */
        pthread_mutex_t lock;
        pthread_cond_t wake;
        bool stopping;
        char *queue[QUEUE_MAX]; /* JSON texts, a ring */
        size_t head, n;
        struct gw_notify_counts counts;
};

static void count(struct gw_notify *n, unsigned long *c) {
        pthread_mutex_lock(&n->lock);
        (*c)++;
        pthread_mutex_unlock(&n->lock);
}

/* Sleeps s seconds unless the daemon stops meanwhile; false when it does. */
static bool pause_unless_stopping(struct gw_notify *n, int s) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until); /* the wake's clock (gw_notify_open) */
        until.tv_sec += s;
        pthread_mutex_lock(&n->lock);
        while (!n->stopping && pthread_cond_timedwait(&n->wake, &n->lock, &until) != ETIMEDOUT)
                ;
        bool go_on = !n->stopping;
        pthread_mutex_unlock(&n->lock);
        return go_on;
}

/* The reply's body is not ours to keep. */
static size_t discard(char *p, size_t size, size_t nmemb, void *userdata) {
        (void) p;
        (void) userdata;
        return size * nmemb;
}

/* libcurl asks this about once a second during a transfer: a stopping daemon ends it. */
static int abort_if_stopping(void *userdata, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
        (void) a, (void) b, (void) c, (void) d;
        struct gw_notify *n = userdata;
        pthread_mutex_lock(&n->lock);
        bool stop = n->stopping;
        pthread_mutex_unlock(&n->lock);
        return stop;
}

static bool post_once(struct gw_notify *n, CURL *c, const char *url, const char *body, char *why, size_t why_n) {
        struct curl_slist *h = cu.slist_append(NULL, "Content-Type: application/json");
        char err[CURL_ERROR_SIZE] = "";
        cu.easy_reset(c);
        cu.easy_setopt(c, CURLOPT_URL, url);
        cu.easy_setopt(c, CURLOPT_POSTFIELDS, body);
        cu.easy_setopt(c, CURLOPT_HTTPHEADER, h);
        cu.easy_setopt(c, CURLOPT_TIMEOUT, TIMEOUT_S);
        cu.easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* a thread: no SIGALRM for DNS timeouts */
        cu.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        cu.easy_setopt(c, CURLOPT_USERAGENT, "gpuwardd");
        cu.easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
        cu.easy_setopt(c, CURLOPT_ERRORBUFFER, err);
        cu.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        cu.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, abort_if_stopping);
        cu.easy_setopt(c, CURLOPT_XFERINFODATA, n);
        CURLcode rc = cu.easy_perform(c);
        long status = 0;
        cu.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        cu.slist_free_all(h);
        if (rc != CURLE_OK)
                snprintf(why, why_n, "%s", err[0] ? err : cu.easy_strerror(rc));
        else if (status < 200 || status >= 300)
                snprintf(why, why_n, "HTTP %ld", status);
        return rc == CURLE_OK && status >= 200 && status < 300;
}

/* Every URL gets the payload, each tried up to TRIES times (1 s, then 4 s apart). */
static void deliver(struct gw_notify *n, CURL *c, const char *body) {
        for (size_t u = 0; u < n->n_urls; u++) {
                char why[CURL_ERROR_SIZE + 32] = "";
                bool ok = false;
                for (int t = 0; t < TRIES && !ok; t++)
                        ok = (t == 0 || pause_unless_stopping(n, t == 1 ? 1 : 4)) &&
                             post_once(n, c, n->urls[u], body, why, sizeof why);
                count(n, ok ? &n->counts.sent : &n->counts.failed);
                if (!ok)
                        log_warn("webhook %s: not delivered after %d tries: %s", n->urls[u], TRIES, why);
        }
}

static void *sender(void *arg) {
        struct gw_notify *n = arg;
        CURL *c = cu.easy_init();
        for (;;) {
                pthread_mutex_lock(&n->lock);
                while (!n->stopping && n->n == 0)
                        pthread_cond_wait(&n->wake, &n->lock);
                if (n->stopping) {
                        pthread_mutex_unlock(&n->lock);
                        break;
                }
                char *body = n->queue[n->head];
                n->head = (n->head + 1) % QUEUE_MAX;
                n->n--;
                pthread_mutex_unlock(&n->lock);
                if (c)
                        deliver(n, c, body);
                else
                        count(n, &n->counts.failed);
                free(body);
        }
        if (c)
                cu.easy_cleanup(c);
        return NULL;
}

static void push(struct gw_notify *n, char *body) {
        pthread_mutex_lock(&n->lock);
        if (n->n == QUEUE_MAX) {
                free(n->queue[n->head]);
                n->head = (n->head + 1) % QUEUE_MAX;
                n->n--;
                n->counts.dropped++;
        }
        n->queue[(n->head + n->n) % QUEUE_MAX] = body;
        n->n++;
        pthread_cond_signal(&n->wake);
        pthread_mutex_unlock(&n->lock);
}

void gw_notify_job(struct gw_notify *n, int64_t id, const struct gw_job *j, enum gw_job_state state, const char *kind,
                   const char *message, gw_usec_t now) {
        int topic = n ? gw_webhook_topic_of(kind, gw_job_state_is_final(state)) : -1;
        if (topic < 0 || !(n->topics & (1u << topic)))
                return;
        const char *st = gw_job_state_name(state);
        char text[800];
        /* Webhooks are the admins' setting: they carry what the job's owner reads, log quotes
         * included (without the markers around them). */
        _cleanup_free_ char *msg = gw_text_private_render(message, true, NULL);
        message = msg;
        gw_webhook_text(text, sizeof text, n->host, id, j ? j->name : NULL, j ? j->user : NULL, st, message);
        (void) gw_text_neutralize(text); /* a chat shows it as it is: no U+202E from a job's name */
        json_t *o = json_pack("{s:s,s:s,s:f,s:s,s:o,s:o}", "event", gw_webhook_topic_name(topic), "kind", kind, "time",
                              (double) now / 1e6, "host", n->host, "message", gw_json_text(message), "text",
                              gw_json_text(text));
        json_t *job =
                j ? gw_codec_job_masked(j, n->job_fields, GW_VIEW_ALL) : json_pack("{s:I}", "id", (json_int_t) id);
        if (o && job) {
                json_object_set_new(job, "state", json_string(st ? st : "?"));
                json_object_set_new(o, "job", job);
                job = NULL;
        }
        char *body = gw_json_compact(o, 0, NULL);
        json_decref(o);
        json_decref(job);
        if (body)
                push(n, body);
}

static int split_urls(struct gw_notify *n, const char *list) {
        for (const char *p = list; *p;) {
                size_t len = strcspn(p, ", ");
                if (len) {
                        n->urls = gw_xrealloc(n->urls, (n->n_urls + 1) * sizeof *n->urls);
                        n->urls[n->n_urls++] = strndup(p, len);
                }
                p += len;
                p += strspn(p, ", ");
        }
        return n->n_urls ? 0 : -EINVAL;
}

/* The sender thread (gw_thread_start blocks every signal in it). */
static int start_sender(struct gw_notify *n) {
        gw_cond_init_monotonic(&n->wake);
        pthread_mutex_init(&n->lock, NULL);
        int r = gw_thread_start(&n->thread, sender, n, "gw-webhooks");
        if (r != 0) {
                pthread_mutex_destroy(&n->lock);
                pthread_cond_destroy(&n->wake);
                return -r;
        }
        n->started = true;
        return 0;
}

struct gw_notify *gw_notify_open(const struct gw_config *cfg) {
        if (!cfg->webhook_url || !*cfg->webhook_url)
                return NULL;
        struct gw_notify *n = gw_xcalloc(1, sizeof *n);
        char why[160];
        struct gw_codec_error ferr;
        if (split_urls(n, cfg->webhook_url) < 0 ||
            gw_webhook_topics_parse(cfg->webhook_events, &n->topics, why, sizeof why) < 0 ||
            gw_codec_job_fields("id,name,user,state,reason,gpus,exit_code,signal,attempt,start_time,end_time",
                                &n->job_fields, &ferr) < 0) {
                gw_notify_close(n);
                return NULL; /* the config was checked when it was read */
        }
        if (gethostname(n->host, sizeof n->host - 1) < 0)
                snprintf(n->host, sizeof n->host, "?");
        char why2[300];
        if (load_curl(why2, sizeof why2) < 0) {
                log_err("webhooks: not sent: %s", why2);
                gw_notify_close(n);
                return NULL;
        }
        CURLcode cr = cu.global_init(CURL_GLOBAL_DEFAULT);
        int r = cr == CURLE_OK ? start_sender(n) : -EIO;
        if (r < 0) {
                log_err("webhooks: not sent: %s", cr != CURLE_OK ? cu.easy_strerror(cr) : strerror(-r));
                if (cr == CURLE_OK)
                        cu.global_cleanup();
                gw_notify_close(n);
                return NULL;
        }
        log_info("webhooks: %zu URL%s, events %s", n->n_urls, n->n_urls == 1 ? "" : "s", cfg->webhook_events);
        return n;
}

void gw_notify_counts(struct gw_notify *n, struct gw_notify_counts *ret) {
        *ret = (struct gw_notify_counts){ 0 };
        if (!n)
                return;
        pthread_mutex_lock(&n->lock);
        *ret = n->counts;
        pthread_mutex_unlock(&n->lock);
}

void gw_notify_close(struct gw_notify *n) {
        if (!n)
                return;
        if (n->started) {
                pthread_mutex_lock(&n->lock);
                n->stopping = true;
                pthread_cond_broadcast(&n->wake);
                pthread_mutex_unlock(&n->lock);
                pthread_join(n->thread, NULL);
                if (n->n)
                        log_info("webhooks: %zu event%s not sent (the daemon stops)", n->n, n->n == 1 ? "" : "s");
                pthread_mutex_destroy(&n->lock);
                pthread_cond_destroy(&n->wake);
                cu.global_cleanup();
        }
        for (size_t i = 0; i < n->n; i++)
                free(n->queue[(n->head + i) % QUEUE_MAX]);
        for (size_t i = 0; i < n->n_urls; i++)
                free(n->urls[i]);
        free(n->urls);
        free(n);
}
