/* Calls to gpuwardd's HTTP API (docs/API.md) with the CLI's error reporting. */
#pragma once
#include <jansson.h>
#include <stdbool.h>

#include "base/time.h"
#include "cli/cli.h"
#include "cli/http.h"

/* How long a plain call may take: generous for a loaded daemon, short enough that a
 * wedged one does not hang a terminal. */
#define CLI_API_TIMEOUT (30 * GW_USEC_PER_SEC)

/* Maps an API field name onto what the user typed, so "ngpus" reads "--gpus". */
struct cli_field_alias {
        const char *api;
        const char *cli;
};

struct cli_call {
        const char *method;
        const char *target; /* path and query, escaped */
        const json_t *body; /* NULL: no body */
        gw_usec_t timeout; /* 0: CLI_API_TIMEOUT */
        const char *subject; /* "job 17": prefixes error messages */
        const struct cli_field_alias *aliases; /* NULL-terminated by .api; may be NULL */
        int accept_status; /* a non-2xx status the caller answers itself
                                                 * (reserve's 409 names the nearest window);
                                                 * 0: none */
        const char *if_dropped; /* said after the error when the daemon went
                                                 * away without answering (what may have been
                                                 * done anyway); NULL: nothing */
        bool long_reply; /* read the JSON with cli_json_load_fast
                                                 * (cli/jsonfast.h): a long list */
};

/* Performs call.  On a 2xx answer (or call->accept_status) returns CLI_EXIT_OK and fills
 * *ret (release with cli_http_response_done; ret->status tells which).  Otherwise tells the user why on stderr ("cannot reach
 * gpuwardd at SOCKET: is it running?", or the API's error text naming the field) and
 * returns CLI_EXIT_FAIL; *ret is untouched. */
int cli_api_call(const struct cli_ctx *ctx, const struct cli_call *call, struct cli_http_response *ret);

/* The body of r (from cli_api_call for call), which must be a JSON object: CLI_EXIT_OK with
 * *ret_json, a new reference; else tells the user why and returns CLI_EXIT_FAIL. */
int cli_api_decode(const struct cli_call *call, const struct cli_http_response *r, json_t **ret_json);

/* cli_api_call, then decodes the body, which must be a JSON object.  *ret_json is a new
 * reference the caller drops with json_decref. */
int cli_api_json(const struct cli_ctx *ctx, const struct cli_call *call, json_t **ret_json);

/* cli_api_json that also says which status came back (call->accept_status or a 2xx). */
int cli_api_json_status(const struct cli_ctx *ctx, const struct cli_call *call, json_t **ret_json, int *ret_status);

/* The job's object (GET /api/v1/jobs/ID), a new reference; NULL when it could not be had,
 * after telling why with the subject "job ID" (an unknown id, no daemon). */
json_t *cli_job_get(const struct cli_ctx *ctx, long long id);
/* The same, with the call's exit status (CLI_EXIT_OK: *ret_job set) for a verb to return. */
int cli_job_fetch(const struct cli_ctx *ctx, long long id, json_t **ret_job);

/* An array's task as cli_parse_job_id returns it ("17_3", negative) replaced by its job's id,
 * which the daemon gives it when it starts; any other id is left alone.  0, or the exit code
 * after telling why (the task has not started, no such task). */
int cli_resolve_task(const struct cli_ctx *ctx, long long *id);

/* Appends "?key=value" (or "&key=value") to the malloc'ed *target, escaping value.
 * 0 or -ENOMEM (then *target is unchanged). */
int cli_query_add(char **target, const char *key, const char *value);

/* s percent-encoded for a query string.  malloc'ed; NULL when out of memory. */
char *cli_url_escape(const char *s);
