/* Training awareness as the API tells it: what GET /api/v1/jobs/{id}/eta replies (the
 * estimate and its basis) and the "training" object of GET /api/v1/jobs/{id}; the handlers,
 * with those of the snapshots and the restore, are in handlers_feature.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api/codec.h"
#include "base/cleanup.h"
#include "core/progress.h"
#include "core/yolo_run.h"
#include "daemon/http/handlers.h"
#include "daemon/training/training_int.h"
#include "daemon/life/queue.h"
#include "daemon/training/training.h"
#include "store/epochs.h"

#define EPOCHS_SHOWN 20

static json_t *num_or_null(bool ok, double v) { return ok && isfinite(v) ? json_real(v) : json_null(); }

json_t *gw_train_eta_json(const struct gw_train *t, gw_usec_t now) {
        const struct gw_eta *e = &t->eta;
        bool end = t->has_eta && e->has_end;
        json_t *o = json_object();
        json_object_set_new(o, "epoch", t->done >= 0 ? json_integer(t->done) : json_null());
        json_object_set_new(o, "epochs", t->total > 0 ? json_integer(t->total) : json_null());
        json_object_set_new(o, "epochs_from", t->total > 0 ? json_string(t->total_from) : json_null());
        json_object_set_new(o, "sec_per_epoch", num_or_null(t->has_eta, e->sec_per_epoch));
        json_object_set_new(o, "sigma_seconds", num_or_null(t->has_eta && e->sigma_s > 0, e->sigma_s));
        json_object_set_new(o, "eta", end ? json_real((double) e->end / 1e6) : json_null());
        json_object_set_new(o, "remaining_seconds", num_or_null(end, e->remaining_s));
        json_object_set_new(o, "overdue_seconds", num_or_null(end && e->overdue_s > 0, e->overdue_s));
        json_object_set_new(o, "error_seconds", num_or_null(end && e->has_error, e->error_s));
        json_object_set_new(o, "timed_epochs", json_integer((json_int_t) (t->has_eta ? e->n_timed : 0)));
        gw_usec_t last = t->n_epochs ? t->epochs[t->n_epochs - 1].end : 0;
        json_object_set_new(o, "since_last_epoch", num_or_null(last && now >= last, (double) (now - last) / 1e6));
        /* When each results.csv row appeared: the job page's epoch lines on the GPU curves. */
        json_t *ends = json_array();
        for (size_t i = 0; i < t->n_epochs; i++)
                json_array_append_new(ends, json_real((double) t->epochs[i].end / 1e6));
        json_object_set_new(o, "epoch_ends", ends);
        json_object_set_new(o, "results_csv", t->results_path ? gw_json_text(t->results_path) : json_null());
        return o;
}

json_t *gw_train_leak_json(const struct gw_job *j, const struct gw_train *t) {
        const struct gw_leak_verdict *v = &t->leak;
        const char *policy = j->leak_policy ? j->leak_policy : "warn";
        if (!t->leak_reported)
                return json_pack("{s:b,s:o,s:s}", "detected", false, "evidence",
                                 v->n_gpus ? gw_json_text(v->evidence) : json_null(), "policy", policy);
        json_t *o = json_pack("{s:b,s:o,s:s}", "detected", true, "evidence", gw_json_text(t->leak_evidence), "policy",
                              policy);
        /* The newest verdict's figures while it still says leak. */
        json_object_set_new(o, "gpu", v->leak ? json_integer(v->gpu) : json_null());
        json_object_set_new(o, "mib_per_epoch", num_or_null(v->leak, v->slope_mib));
        json_object_set_new(o, "epochs", v->leak ? json_integer(v->epochs) : json_null());
        json_object_set_new(o, "epochs_to_oom", num_or_null(v->leak, v->epochs_to_oom));
        json_object_set_new(o, "seconds_to_oom", num_or_null(v->leak, v->seconds_to_oom));
        json_object_set_new(o, "restart",
                            json_string(t->restart_sent      ? "stopping"
                                        : t->restart_pending ? "pending"
                                                             : "none"));
        return o;
}

/* When the epochs of j's current attempt ended, in Unix seconds (since the attempt's start
 * with since_start): from the watch while it runs, else from the store.  NULL when there
 * is nothing to say (never watched, or the store cannot be read). */
static json_t *epoch_ends_json(struct gw_daemon *d, const struct gw_job *j, bool since_start) {
        struct gw_djob *dj = gw_jobmap_get(&d->jobs.map, j->id);
        const struct gw_train *t = gw_train_at(d, dj, j->attempt);
        gw_usec_t ends[TRAIN_EPOCHS_KEEP];
        size_t n = 0;
        if (t) {
                for (; n < t->n_epochs; n++)
                        ends[n] = t->epochs[n].end;
        } else {
                struct gw_store_epoch e[TRAIN_EPOCHS_KEEP];
                int got = gw_store_epochs(d->store, j->id, j->attempt, e, TRAIN_EPOCHS_KEEP);
                if (got <= 0)
                        return NULL;
                for (; n < (size_t) got; n++)
                        ends[n] = e[n].end;
        }
        if (since_start && j->start_time <= 0)
                return NULL;
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
                if (!since_start)
                        json_array_append_new(arr, json_real((double) ends[i] / 1e6));
                else if (ends[i] >= j->start_time)
                        json_array_append_new(arr, json_real((double) (ends[i] - j->start_time) / 1e6));
        return arr;
}

json_t *gw_training_epoch_offsets_json(struct gw_daemon *d, const struct gw_job *j) {
        json_t *arr = epoch_ends_json(d, j, true);
        return arr ? arr : json_null();
}

json_t *gw_train_epoch_ends_json(struct gw_daemon *d, const struct gw_job *j) { return epoch_ends_json(d, j, false); }

static const struct gw_train *live_train(struct gw_daemon *d, const struct gw_job *j) {
        struct gw_djob *dj = gw_jobmap_get(&d->jobs.map, j->id);
        return j->state == GW_JOB_RUNNING ? gw_train_at(d, dj, j->attempt) : NULL;
}

/* Why a running job has no run yet, by the rule find_results credits one (training_runs.c):
 * what was looked at, so that a user can tell a script whose output goes elsewhere from a
 * run that has not reached its first epoch. */
static const char *why_no_run(const struct gw_job *j) {
        struct gw_yolo_run r;
        char dir[GW_YOLO_PATH_MAX];
        if (gw_train_resolve_run(j, true, &r) < 0)
                return "its command's run folder is too long a path";
        if (!r.training)
                return "not a training run: no --yolo, no epochs=, project=, name= or resume in its command, and its "
                       "log has no \"Logging results to\" line";
        if (gw_yolo_own_dir(&r, dir, sizeof dir) < 0)
                return "no training run found: its log has no \"Logging results to\" line yet, and its command "
                       "resumes no checkpoint nor names a run with exist_ok (a run next to it is not taken for its own)";
        return "no results.csv written by this attempt yet";
}

void gw_hide_paths(json_t *o) {
        static const char *const paths[] = { "results_csv", "source" }; /* in the job's directory */
        if (json_is_array(o)) {
                for (size_t i = 0; i < json_array_size(o); i++)
                        gw_hide_paths(json_array_get(o, i));
                return;
        }
        const char *key;
        json_t *v;
        json_object_foreach (o, key, v) {
                if (json_is_object(v) || json_is_array(v)) {
                        gw_hide_paths(v);
                        continue;
                }
                for (size_t i = 0; i < ELEMENTSOF(paths); i++)
                        if (!strcmp(key, paths[i]) && json_is_string(v)) {
                                json_object_set_new(o, key, json_null()); /* replaces v in place */
                                break;
                        }
        }
}

/* The object GET /api/v1/jobs/{id}/eta replies for j (new reference); details: whether the
 * reader sees the job's paths. */
json_t *gw_training_eta_reply(struct gw_daemon *d, const struct gw_job *j, bool details) {
        gw_training_predict_unseen(d, j);
        const struct gw_train *t = live_train(d, j);
        gw_usec_t now = d->now_wall;
        json_t *o = t ? gw_train_eta_json(t, now) : json_object();
        json_object_set_new(o, "id", json_integer(j->id));
        json_object_set_new(o, "state", json_string(gw_job_state_name(j->state)));
        bool queued = j->state == GW_JOB_PENDING || j->state == GW_JOB_HELD;
        json_object_set_new(o, "prediction", queued ? gw_training_prediction_json(d, j) : json_null());
        const char *why = queued             ? "the job has not started (see prediction)"
                          : !t               ? "the job is not running"
                          : !t->results_path ? why_no_run(j)
                          : !t->has_eta      ? "no epoch has finished yet"
                          : t->total <= 0 ? "the number of epochs is unknown (no args.yaml, no epochs= in the command)"
                                          : NULL;
        json_object_set_new(o, "why_none", why ? json_string(why) : json_null());
        if (!details)
                json_object_set_new(o, "results_csv", json_null());
        if (t) {
                json_t *arr = json_array();
                size_t from = t->n_epochs > EPOCHS_SHOWN ? t->n_epochs - EPOCHS_SHOWN : 0;
                for (size_t i = from; i < t->n_epochs; i++) {
                        const struct train_epoch *e = &t->epochs[i];
                        json_array_append_new(arr, json_pack("{s:I,s:f,s:f,s:b,s:b}", "epoch", (json_int_t) e->epoch,
                                                             "seconds", (double) (e->end - e->start) / 1e6, "end",
                                                             (double) e->end / 1e6, "startup", e->startup, "exact",
                                                             e->exact));
                }
                json_object_set_new(o, "recent_epochs", arr);
                json_object_set_new(o, "leak", gw_train_leak_json(j, t));
        } else if (!queued) {
                json_t *ends = gw_train_epoch_ends_json(d, j); /* an ended job's, kept */
                if (ends)
                        json_object_set_new(o, "epoch_ends", ends);
        }
        return o;
}
