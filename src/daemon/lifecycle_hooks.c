/* The lifecycle's hooks (lifecycle.h): subscribing, publishing in order, and the store's
 * writes published as GW_HOOK_RECORDED and GW_HOOK_BOOKED.  Plain enough to test alone
 * (tests/unit/test_lifecycle_hooks.c). */
#include <assert.h>

#include "daemon/daemon.h"
#include "daemon/lifecycle.h"

static const char *const hook_names[_GW_HOOK_MAX] = {
        [GW_HOOK_JOB_SUBMITTED] = "job submitted",   [GW_HOOK_ATTEMPT_STARTED] = "attempt started",
        [GW_HOOK_SAMPLED] = "sampled",               [GW_HOOK_ATTEMPT_ENDED] = "attempt ended",
        [GW_HOOK_JOB_ENDING] = "job ending",         [GW_HOOK_JOB_ENDED] = "job ended",
        [GW_HOOK_RECORDED] = "recorded",             [GW_HOOK_BOOKED] = "booked",
};

const char *gw_hook_name(enum gw_hook hook) {
        return hook >= 0 && hook < _GW_HOOK_MAX ? hook_names[hook] : NULL;
}

void gw_lifecycle_subscribe(struct gw_hooks *h, enum gw_hook hook, const char *name, gw_hook_fn *fn) {
        assert(hook >= 0 && hook < _GW_HOOK_MAX && h->n[hook] < GW_HOOK_MAX_SUBSCRIBERS);
        h->sub[hook][h->n[hook]].fn = fn;
        h->sub[hook][h->n[hook]].name = name;
        h->n[hook]++;
}

static void publish(struct gw_daemon *d, struct gw_djob *dj, const struct gw_hook_info *info) {
        for (size_t i = 0; i < d->hooks.n[info->hook]; i++)
                d->hooks.sub[info->hook][i].fn(d, dj, info);
}

void gw_lifecycle_publish(struct gw_daemon *d, enum gw_hook hook, struct gw_djob *dj, bool was_running) {
        publish(d, dj, &(struct gw_hook_info) { .hook = hook, .was_running = was_running });
}

static void store_job_written(void *userdata, int64_t id, const struct gw_job *j, enum gw_job_state state,
                              const char *kind, const char *message) {
        const struct gw_hook_record rec = { .id = id, .job = j, .state = state, .kind = kind, .message = message };
        publish(userdata, NULL, &(struct gw_hook_info) { .hook = GW_HOOK_RECORDED, .rec = &rec });
}

static void store_booking_written(void *userdata, const struct gw_store_booking *b) {
        publish(userdata, NULL, &(struct gw_hook_info) { .hook = GW_HOOK_BOOKED, .booking = b });
}

void gw_lifecycle_open(struct gw_daemon *d) {
        struct gw_store_observer o = { .job = store_job_written, .booking = store_booking_written, .userdata = d };
        gw_store_set_observer(d->store, &o);
}

void gw_lifecycle_close(struct gw_daemon *d) {
        if (d->store)
                gw_store_set_observer(d->store, &(struct gw_store_observer) { 0 });
}
