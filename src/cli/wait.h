/* Waiting for jobs to end: gpuward wait, and submit --wait. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "base/time.h"
#include "cli/cli.h"

/* Looks at each job until it has ended (or timeout, 0: none, has passed), printing "Job N
 * STATE..." as each ends unless json or quiet; with json, the ended jobs' JSON at the end (an
 * object for one job).  Returns 0 when every job COMPLETED, else 1. */
int cli_wait_jobs(struct cli_ctx *ctx, const long long *ids, size_t n, gw_usec_t timeout, bool json, bool quiet);

/* "Job 17 COMPLETED (exit 0)" or "Job 17 FAILED: <reason>" on out: how a job (GET
 * /api/v1/jobs/ID's object) ended, the reason's control characters neutralised. */
void cli_print_job_end(FILE *out, const json_t *job, long long id);

/* Why a waiting job (GET /api/v1/jobs/ID's object) waits, in words: the scheduler's reason,
 * with the numbers behind it where the CLI can tell them (logs -f, run).  malloc'ed; NULL on
 * no memory. */
char *cli_wait_reason(struct cli_ctx *ctx, const json_t *job);

/* How an ended job (GET /api/v1/jobs/ID's object) ended, as submit --wait --follow's exit
 * status: 0 COMPLETED; FAILED: its exit code, or 1 when it has none, or it is 0 or one of
 * the codes below; CLI_EXIT_RECLAIMED, CLI_EXIT_TIMEOUT, CLI_EXIT_CANCELLED; 1 for a job that
 * has not ended. */
enum { CLI_EXIT_RECLAIMED = 123, CLI_EXIT_TIMEOUT = 124, CLI_EXIT_CANCELLED = 125 };
int cli_job_exit_status(const json_t *job);

/* Prints job id's log on stdout as it comes, across its attempts, until it ends (as 'gpuward
 * logs -f'), and how it ended on stderr.  0 when it COMPLETED, else 1 (a call failed, told;
 * stdout was closed; it did not complete). */
int cli_follow_log(struct cli_ctx *ctx, long long id);
