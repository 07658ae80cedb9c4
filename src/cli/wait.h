/* Waiting for jobs to end: gpuward wait, and submit --wait. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "base/time.h"
#include "cli/cli.h"

/* Looks at each job until it has ended (or timeout, 0: none, has passed), printing "Job N
 * STATE..." as each ends unless json or quiet; with json, the ended jobs' JSON at the end (an
 * object for one job).  Returns 0 when every job COMPLETED, else 1. */
int cli_wait_jobs(struct cli_ctx *ctx, const long long *ids, size_t n, gw_usec_t timeout, bool json, bool quiet);
