/* Job arrays in the store: the array is a row of `jobs` with its spec (array_spec) and how
 * many of its tasks were handed out (array_next); a task is a row of `jobs` of its own,
 * made when it starts (or is cancelled before it started), with array_job and array_index. */
#pragma once
#include <stdint.h>

#include "core/job.h"
#include "store/store.h"

/* Records that the array id handed out next of its tasks (in its spec's order). */
int gw_store_array_next_set(struct gw_store *s, int64_t id, uint32_t next);

/* The id of task index of array array_job: 0 with *ret_id, -ENOENT when it has no row. */
int gw_store_array_task(struct gw_store *s, int64_t array_job, int64_t index, int64_t *ret_id);

/* A task's row, as gw_store_array_tasks hands it: the strings are borrowed for the call. */
struct gw_store_array_task {
        int64_t id, index;
        enum gw_job_state state;
        const char *telemetry; /* NULL = none */
};
typedef void (*gw_store_array_task_cb)(const struct gw_store_array_task *t, void *userdata);

/* A task's best epoch, as the event "best" that training writes at the end of a task's
 * attempt says it: "mAP50-95 0.5123 at epoch 37". */
#define GW_ARRAY_BEST_FORMAT "mAP50-95 %.4f at epoch %ld"
struct gw_store_array_best {
        int64_t index; /* the task's; -1 = no task reported one */
        double map50_95;
        long epoch;
};
/* The best of the "best" events of array array_job's tasks into *ret.  0 or -errno. */
int gw_store_array_best(struct gw_store *s, int64_t array_job, struct gw_store_array_best *ret);

/* Calls cb for each task row of array array_job, by index. */
int gw_store_array_tasks(struct gw_store *s, int64_t array_job, gw_store_array_task_cb cb, void *userdata);
