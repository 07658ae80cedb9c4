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
