/* A fake executor (src/daemon/exec/executor.h) for unit tests of the job lifecycle: it starts
 * nothing.  Each start or adoption is an attempt on record here; the test decides when an
 * attempt "ends" and how (fake_exec_exit, fake_exec_lose), and reads the signals it was sent. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/daemon.h"

#define FAKE_EXEC_MAX 32
#define FAKE_EXEC_SIGNALS 8

struct fake_attempt {
        int64_t job_id;
        int attempt;
        bool adopted; /* found running at a restart, not started */
        bool ended; /* its end was told */
        int signals[FAKE_EXEC_SIGNALS]; /* in the order sent, while it ran */
        size_t n_signals;
        size_t late_signals; /* sent after its end (a no-op, counted) */
};

struct fake_exec {
        struct gw_executor ops; /* the daemon's d->exec */
        struct fake_attempt v[FAKE_EXEC_MAX];
        size_t n;
        int start_error; /* the next start fails with this (-errno), then 0 again */
        int64_t running[FAKE_EXEC_MAX]; /* job ids adopt finds running (a restart's processes) */
        size_t n_running;
        size_t adopt_begun, adopt_ended, ends_told;
};

/* A fresh fake (free it with free()); d->exec = &f->ops. */
struct fake_exec *fake_exec_new(void);
/* The newest attempt of job id on record, or NULL. */
struct fake_attempt *fake_exec_attempt(struct fake_exec *f, int64_t id);
/* The attempt of job id ends with wait status status (lost: how is not known), at the
 * daemon's now.  The end is told through gw_exec_attempt_end, as a real executor does. */
void fake_exec_exit(struct gw_daemon *d, struct fake_exec *f, int64_t id, int status);
void fake_exec_lose(struct gw_daemon *d, struct fake_exec *f, int64_t id);
