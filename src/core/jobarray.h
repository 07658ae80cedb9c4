/* Job arrays (sweeps), the pure parts: the index list a user gives to --array, in Slurm's
 * syntax, and the folded form `gpuward queue` shows for the tasks of one array.
 *
 *   SPEC  := LIST ['%' LIMIT]
 *   LIST  := ITEM (',' ITEM)*
 *   ITEM  := INDEX | INDEX '-' INDEX [':' STEP]
 * "0-49%4": tasks 0..49, at most 4 running at once; "1,3,5-9"; "0-99:10%8": 0, 10, .., 90.
 * Indexes are 0..GW_ARRAY_MAX_INDEX, plain decimal digits (no sign, no spaces); a range may
 * not end before it starts; STEP and LIMIT are 1 or more.  Repeated indexes count once (as
 * Slurm's bitmap has it): "1-5,3" is 1..5.  At most GW_ARRAY_MAX_TASKS distinct tasks.
 *
 * `gpuward submit --array` (and #GPUWARD --array) sends the spec as the request's `array`
 * field; the daemon runs the array's tasks (daemon/life/jobarray.c). */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define GW_ARRAY_MAX_TASKS 10000
#define GW_ARRAY_MAX_INDEX 999999
#define GW_ARRAY_MSG_SIZE 192

struct gw_array {
        uint32_t *ids; /* ascending, distinct, n of them; malloc'ed, owned */
        size_t n; /* 1..GW_ARRAY_MAX_TASKS */
        uint32_t max_running; /* the %LIMIT; 0 = none */
};

/* Parses spec into *ret (which owns its ids: gw_array_done()).  field names the option or
 * API field in messages ("--array", "array").  Returns 0, or -EINVAL with a message naming
 * the field and the part at fault in msg ("--array: '9-3': the range ends before it starts");
 * *ret is written only on success. */
int gw_array_parse(const char *spec, const char *field, struct gw_array *ret, char *msg, size_t msg_size);

/* Frees a's ids and empties it; accepts NULL. */
void gw_array_done(struct gw_array *a);

/* Writes the tasks ids[0..n-1] (ascending, distinct) of job job_id in Slurm's folded form:
 * "17_5" for one task, "17_[5-49]", "17_[1,3,5-9]", "17_[0-49%4]" with a limit of running
 * tasks (max_running > 0).  Returns the length, -EINVAL (n == 0, ids not ascending), or
 * -ENOBUFS when buf is too small: buf then holds a prefix cut after a whole item and
 * ended by "...]" when size allows (at least 8 bytes), else "". */
int gw_array_fold(int64_t job_id, const uint32_t *ids, size_t n, uint32_t max_running, char *buf, size_t size);
