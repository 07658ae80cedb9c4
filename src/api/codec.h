/* Request decoding and response encoding: pure functions between JSON and plain structs. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/jobrec.h"

struct gw_codec_error {
        char field[64];
        char message[256];
};

/* Fills the user-given parts of j (command, ngpus, gpu_mem, time_limit, name, cwd, priority,
 * after, output, env, env_extra, hold) from a submission object.  Checks types and what
 * needs no daemon state; defaults: ngpus 1, time_limit = default_limit.  Returns 0, or
 * -EINVAL with err naming the field.  *ret_hold tells whether to queue it held. */
int gw_codec_job_spec(const json_t *o, gw_usec_t default_limit, struct gw_job *j, int *ret_hold,
                      struct gw_codec_error *err);

/* The small request bodies (bookings, tokens, quotas, drains) decoded with the rules of a
 * submission's: -EINVAL naming the field, err's message one line.  check_fields refuses the
 * first key of o that is not one of the n in known ("KEY: not a field of WHAT (it takes
 * ...)"), since a misspelt field would otherwise be dropped without a word.  get_string
 * and get_int leave *ret as it was (get_string: NULL) when the key is absent or null;
 * *ret points into o. */
int gw_codec_check_fields(const json_t *o, const char *const *known, size_t n, const char *what,
                          struct gw_codec_error *err);
int gw_codec_get_string(const json_t *o, const char *key, const char **ret, struct gw_codec_error *err);
int gw_codec_get_int(const json_t *o, const char *key, long long min, long long max, long long *ret,
                     struct gw_codec_error *err);

#define GW_CODEC_ALL_FIELDS UINT64_MAX

/* What a reader may see of a job (the daemon decides from who asks):
 * GW_VIEW_DETAILS: its command line, working directory, log path and checkpoint (the
 *   guests' view leaves them null: arguments often carry secrets);
 * GW_VIEW_LOG: what its reason, attempts and events quote from its log, which is as
 *   private as the log (its owner and admins); others read GW_CODEC_EVIDENCE_HIDDEN there. */
enum {
        GW_VIEW_DETAILS = 1u << 0,
        GW_VIEW_LOG = 1u << 1,
        GW_VIEW_ALL = GW_VIEW_DETAILS | GW_VIEW_LOG,
};
#define GW_CODEC_EVIDENCE_HIDDEN "(evidence hidden: only the job's owner and admins may read its log)"

/* The job as the API shows it (docs/API.md) to a reader with view.  New reference. */
json_t *gw_codec_job(const struct gw_job *j, unsigned view);
/* Only the fields in mask (from gw_codec_job_fields), for long lists. */
json_t *gw_codec_job_masked(const struct gw_job *j, uint64_t mask, unsigned view);
/* The same fields as an array, in the order gw_codec_job_field_names lists their names: a
 * long list of rows costs a client no hash table per job to read. */
json_t *gw_codec_job_row(const struct gw_job *j, uint64_t mask, unsigned view);
/* The same row written as JSON to out, byte for byte what json_dumpb writes for
 * gw_codec_job_row's array, without a JSON value per field for the common ones. */
void gw_codec_job_row_write(const struct gw_job *j, uint64_t mask, unsigned view, FILE *out);
json_t *gw_codec_job_field_names(uint64_t mask);
/* "id,state,gpus" → mask; empty or NULL = all.  -EINVAL naming an unknown field. */
int gw_codec_job_fields(const char *list, uint64_t *ret_mask, struct gw_codec_error *err);
/* codec_rec.c: a job's events and attempts (oldest first) as arrays for a reader with view. */
json_t *gw_codec_events(const struct gw_job_event *ev, size_t n, unsigned view);
json_t *gw_codec_attempts(const struct gw_job_attempt *a, size_t n, unsigned view);
/* An event's message, or an attempt's evidence, for a reader with view. */
json_t *gw_codec_event_message(const char *message, unsigned view);
/* How a person names the job: "8_2" for task 2 of array 8, "8" for any other job (the CLI's,
 * Slurm's).  A new reference. */
json_t *gw_codec_display_id(const struct gw_job *j);
/* A job's reason or an attempt's evidence, s, for a reader with view: a quote of the log, for
 * a reader who may not read the log, becomes the exit (or signal) and why the rest is hidden.
 * A new reference. */
json_t *gw_codec_evidence(const char *s, unsigned view, int signal, bool has_exit, int exit_code);
/* A GPU's event as the API shows it: time, gpu, kind, xid, job (null: none) and message,
 * which is null unless with_message (a guest may not read other users' command lines). */
json_t *gw_codec_gpu_event(const struct gw_gpu_event_rec *e, bool with_message);

/* {"error": message, "field": field or null}, serialized; malloc'ed. */
char *gw_codec_error_body(const char *field, const char *message, size_t *ret_len);
/* A JSON string of s with invalid UTF-8 bytes replaced by '?' (NULL s: ""). */
json_t *gw_json_text(const char *s);
/* Serializes and steals o; malloc'ed. */
char *gw_codec_dump(json_t *o, size_t *ret_len);
