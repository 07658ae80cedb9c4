/* The lifecycle's hooks (lifecycle.h): subscribing, publishing in order, and the store's
 * writes published as GW_HOOK_RECORDED and GW_HOOK_BOOKED.  Plain enough to test alone
 * (tests/unit/test_lifecycle_hooks.c). */
#include <assert.h>
#include <errno.h>

#include "daemon/daemon.h"
#include "daemon/life/lifecycle.h"

static const char *const hook_names[_GW_HOOK_MAX] = {
        [GW_HOOK_JOB_SUBMITTED] = "job submitted",
        [GW_HOOK_ATTEMPT_STARTED] = "attempt started",
        [GW_HOOK_SAMPLED] = "sampled",
        [GW_HOOK_ATTEMPT_ENDED] = "attempt ended",
        [GW_HOOK_JOB_ENDING] = "job ending",
        [GW_HOOK_JOB_ENDED] = "job ended",
        [GW_HOOK_RECORDED] = "recorded",
        [GW_HOOK_BOOKED] = "booked",
        [GW_HOOK_JOB_RECOVERED] = "job recovered",
        [GW_HOOK_ATTEMPT_ADOPTED] = "attempt adopted",
        [GW_HOOK_ATTEMPT_LAUNCHING] = "attempt launching",
        [GW_HOOK_ATTEMPT_REQUEUED] = "attempt requeued",
        [GW_HOOK_JOB_FREED] = "job freed",
        [GW_HOOK_LOG_LINE] = "log line",
};

const char *gw_hook_name(enum gw_hook hook) { return hook >= 0 && hook < _GW_HOOK_MAX ? hook_names[hook] : NULL; }

void gw_lifecycle_subscribe(struct gw_hooks *h, enum gw_hook hook, const char *name, gw_hook_fn *fn) {
        assert(hook >= 0 && hook < _GW_HOOK_MAX && h->n[hook] < GW_HOOK_MAX_SUBSCRIBERS);
        h->sub[hook][h->n[hook]].fn = fn;
        h->sub[hook][h->n[hook]].name = name;
        h->n[hook]++;
}

void gw_lifecycle_subscribe_check(struct gw_hooks *h, const char *name, gw_submit_check_fn *fn) {
        assert(h->n_check < GW_HOOK_MAX_SUBSCRIBERS);
        h->check[h->n_check].fn = fn;
        h->check[h->n_check].name = name;
        h->n_check++;
}

int gw_lifecycle_check_submit(struct gw_daemon *d, struct gw_job *j, size_t ahead, struct gw_submit_error *err) {
        for (size_t i = 0; i < d->hooks.n_check; i++)
                if (d->hooks.check[i].fn(d, j, ahead, err) < 0)
                        return -EINVAL;
        return 0;
}

void gw_lifecycle_subscribe_sched(struct gw_hooks *h, const char *name, gw_sched_filter_fn *fn) {
        assert(h->n_sched < GW_HOOK_MAX_SUBSCRIBERS);
        h->sched[h->n_sched].fn = fn;
        h->sched[h->n_sched].name = name;
        h->n_sched++;
}

void gw_lifecycle_sched_filter(struct gw_daemon *d, struct gw_sched_job *pending, size_t n) {
        for (size_t i = 0; i < d->hooks.n_sched; i++)
                d->hooks.sched[i].fn(d, pending, n);
}

static void publish(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        for (size_t i = 0; i < d->hooks.n[info->hook]; i++)
                d->hooks.sub[info->hook][i].fn(d, dj, info);
}

void gw_lifecycle_publish(struct gw_daemon *d, enum gw_hook hook, struct gw_djob *dj, bool was_running) {
        publish(d, dj, &(struct gw_hook_info){ .hook = hook, .was_running = was_running });
}

void gw_lifecycle_publish_end(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_end *end) {
        publish(d, dj, &(struct gw_hook_info){ .hook = GW_HOOK_ATTEMPT_ENDED, .was_running = true, .end = end });
}

void gw_lifecycle_publish_recovered(struct gw_daemon *d, struct gw_djob *dj, const struct gw_job_event *ev, size_t n) {
        publish(d, dj, &(struct gw_hook_info){ .hook = GW_HOOK_JOB_RECOVERED, .events = ev, .n_events = n });
}

void gw_lifecycle_log_line(struct gw_daemon *d, struct gw_djob *dj, const char *line) {
        publish(d, dj, &(struct gw_hook_info){ .hook = GW_HOOK_LOG_LINE, .line = line });
}

static void store_job_written(void *userdata, int64_t id, const struct gw_job *j, enum gw_job_state state,
                              const char *kind, const char *message) {
        const struct gw_hook_record rec = { .id = id, .job = j, .state = state, .kind = kind, .message = message };
        publish(userdata, NULL, &(struct gw_hook_info){ .hook = GW_HOOK_RECORDED, .rec = &rec });
}

static void store_booking_written(void *userdata, const struct gw_store_booking *b) {
        publish(userdata, NULL, &(struct gw_hook_info){ .hook = GW_HOOK_BOOKED, .booking = b });
}

void gw_lifecycle_open(struct gw_daemon *d) {
        struct gw_store_observer o = { .job = store_job_written, .booking = store_booking_written, .userdata = d };
        gw_store_set_observer(d->store, &o);
}

void gw_lifecycle_close(struct gw_daemon *d) {
        if (d->store)
                gw_store_set_observer(d->store, &(struct gw_store_observer){ 0 });
}
