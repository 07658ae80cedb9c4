/* How the CLI shows pieces of a job object (docs/API.md) to a human. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/* "0,1,3" from the job's "gpus" list, or "-" when it holds none.  malloc'ed. */
char *cli_job_gpu_list(const json_t *job);

/* Whether the job is PENDING or HELD: not running now, perhaps waiting for a retry. */
bool cli_job_waiting(const json_t *job);

/* Time the current attempt has run: end (or now while running) minus start; "-" if it
 * never ran or waits to run again. */
char *cli_job_elapsed(const json_t *job, time_t now, char *buf, size_t n);

/* "0", "1", "sig 9" or "-" from exit_code and signal. */
char *cli_job_exit(const json_t *job, char *buf, size_t n);

/* The command as one shell-quoted line, so that it can be pasted back.  malloc'ed. */
char *cli_job_command_line(const json_t *job);

/* The job's user name, or "uid N" when the daemon sent only a uid.  Writes into buf. */
const char *cli_job_user(const json_t *job, char *buf, size_t n);

/* The calling user's uid as text, for the job list's uid= filter (--me): no user database is
 * read here (the CLI is linked statically).  malloc'ed; NULL on ENOMEM. */
char *cli_self_uid(void);

/* Checks a comma-separated list of job states and rewrites it in canonical upper case.
 * Returns a malloc'ed string, or NULL with *ret_bad set to the offending state (which
 * the caller frees too). */
char *cli_normalize_states(const char *list, char **ret_bad);
