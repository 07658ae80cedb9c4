/* The schema: numbered migrations (see the comment below), kept apart from the queries. */
#include <errno.h>
#include <stdio.h>

#include "base/cleanup.h"
#include "store/store_internal.h"

/* Numbered migrations: entry k takes the schema from user_version k to k+1.  Never edit a
 * released entry; append a new one. */
const char *const gw_store_migrations[] = {
        "CREATE TABLE jobs ("
        "  id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, uid INTEGER NOT NULL,"
        "  gid INTEGER NOT NULL, user TEXT NOT NULL, state INTEGER NOT NULL, wait_reason INTEGER NOT NULL DEFAULT 0,"
        "  end_reason TEXT, priority INTEGER NOT NULL DEFAULT 0, ngpus INTEGER NOT NULL,"
        "  gpu_mem INTEGER NOT NULL DEFAULT 0, time_limit INTEGER NOT NULL, after_job INTEGER NOT NULL DEFAULT 0,"
        "  after_kind INTEGER NOT NULL DEFAULT 0, argv BLOB NOT NULL, env BLOB, env_extra BLOB,"
        "  cwd TEXT NOT NULL, output TEXT, log_path TEXT, gpu_mask INTEGER NOT NULL DEFAULT 0,"
        "  submit_time INTEGER NOT NULL, start_time INTEGER NOT NULL DEFAULT 0, end_time INTEGER NOT NULL DEFAULT 0,"
        "  has_exit INTEGER NOT NULL DEFAULT 0, exit_code INTEGER NOT NULL DEFAULT 0, signal INTEGER NOT NULL DEFAULT 0,"
        "  attempt INTEGER NOT NULL DEFAULT 1, pid INTEGER NOT NULL DEFAULT 0, shim_pid INTEGER NOT NULL DEFAULT 0,"
        "  pid_start INTEGER NOT NULL DEFAULT 0, shim_start INTEGER NOT NULL DEFAULT 0, cgroup TEXT);"
        "CREATE INDEX jobs_state ON jobs(state);"
        "CREATE INDEX jobs_uid ON jobs(uid, id);"
        "CREATE TABLE job_events ("
        "  id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, time INTEGER NOT NULL, state INTEGER NOT NULL,"
        "  kind TEXT NOT NULL, message TEXT NOT NULL);"
        "CREATE INDEX job_events_job ON job_events(job_id, id);"
        "CREATE TABLE gpus ("
        "  idx INTEGER PRIMARY KEY, uuid TEXT NOT NULL, name TEXT NOT NULL, mem_total INTEGER NOT NULL,"
        "  drained INTEGER NOT NULL DEFAULT 0, drain_reason TEXT);",

        /* 2: telemetry */
        "ALTER TABLE jobs ADD COLUMN telemetry TEXT;"
        "CREATE TABLE job_series ("
        "  job_id INTEGER NOT NULL, gpu INTEGER NOT NULL, t INTEGER NOT NULL,"
        "  util_min INTEGER NOT NULL, util_mean REAL NOT NULL, util_max INTEGER NOT NULL,"
        "  mem_min INTEGER NOT NULL, mem_mean INTEGER NOT NULL, mem_max INTEGER NOT NULL,"
        "  PRIMARY KEY (job_id, gpu, t)) WITHOUT ROWID;"
        "CREATE TABLE gpu_events ("
        "  id INTEGER PRIMARY KEY, time INTEGER NOT NULL, gpu INTEGER NOT NULL, kind TEXT NOT NULL,"
        "  xid INTEGER, job_id INTEGER, message TEXT NOT NULL);",

        /* 3: recovery and reclamation options, attempts */
        "ALTER TABLE jobs ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE jobs ADD COLUMN retry_on TEXT;"
        "ALTER TABLE jobs ADD COLUMN yolo INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE jobs ADD COLUMN checkpoint TEXT;"
        "ALTER TABLE jobs ADD COLUMN resume_cmd TEXT;"
        "ALTER TABLE jobs ADD COLUMN not_before INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE jobs ADD COLUMN resume_from TEXT;"
        "ALTER TABLE jobs ADD COLUMN idle_policy TEXT;"
        "ALTER TABLE jobs ADD COLUMN progress_file TEXT;"
        "ALTER TABLE jobs ADD COLUMN health_url TEXT;"
        "CREATE TABLE job_attempts ("
        "  job_id INTEGER NOT NULL, attempt INTEGER NOT NULL, gpu_mask INTEGER NOT NULL,"
        "  start_time INTEGER NOT NULL, end_time INTEGER NOT NULL, has_exit INTEGER NOT NULL,"
        "  exit_code INTEGER NOT NULL, signal INTEGER NOT NULL, class TEXT NOT NULL, evidence TEXT NOT NULL,"
        "  resumed_from TEXT, epoch INTEGER NOT NULL DEFAULT -1, log_path TEXT,"
        "  PRIMARY KEY (job_id, attempt)) WITHOUT ROWID;",

        /* 4: bookings, quotas, API tokens */
        "ALTER TABLE jobs ADD COLUMN booking_id INTEGER NOT NULL DEFAULT 0;"
        "CREATE TABLE bookings ("
        "  id INTEGER PRIMARY KEY AUTOINCREMENT, uid INTEGER NOT NULL, user TEXT NOT NULL, name TEXT NOT NULL,"
        "  ngpus INTEGER NOT NULL, start_time INTEGER NOT NULL, end_time INTEGER NOT NULL,"
        "  gpu_mask INTEGER NOT NULL, state INTEGER NOT NULL, last_used INTEGER NOT NULL DEFAULT 0,"
        "  created INTEGER NOT NULL, note TEXT NOT NULL DEFAULT '');"
        "CREATE INDEX bookings_state ON bookings(state);"
        "CREATE TABLE quotas (subject TEXT NOT NULL, key TEXT NOT NULL, value INTEGER NOT NULL,"
        "  PRIMARY KEY (subject, key)) WITHOUT ROWID;"
        "CREATE TABLE tokens ("
        "  id INTEGER PRIMARY KEY AUTOINCREMENT, uid INTEGER NOT NULL, user TEXT NOT NULL, name TEXT NOT NULL,"
        "  hash TEXT NOT NULL UNIQUE, created INTEGER NOT NULL, last_used INTEGER NOT NULL DEFAULT 0,"
        "  revoked INTEGER NOT NULL DEFAULT 0);",

        /* 5: training awareness: the leak policy, checkpoint snapshots */
        "ALTER TABLE jobs ADD COLUMN leak_policy TEXT;"
        "CREATE TABLE snapshots ("
        "  id INTEGER PRIMARY KEY AUTOINCREMENT, job_id INTEGER NOT NULL, seq INTEGER NOT NULL,"
        "  kind TEXT NOT NULL, epoch INTEGER NOT NULL DEFAULT -1, metric REAL, sha256 TEXT NOT NULL,"
        "  size INTEGER NOT NULL, time INTEGER NOT NULL, src_mtime INTEGER NOT NULL, path TEXT NOT NULL,"
        "  source TEXT NOT NULL, pruned INTEGER NOT NULL DEFAULT 0, UNIQUE (job_id, seq));",

        /* 6: token expiry (gpuward token create --expires); 0 = never */
        "ALTER TABLE tokens ADD COLUMN expires INTEGER NOT NULL DEFAULT 0;",

        /* 7: when each epoch of an attempt ended (store/epochs.h), kept for finished jobs */
        "CREATE TABLE job_epochs ("
        "  job_id INTEGER NOT NULL, attempt INTEGER NOT NULL, epoch INTEGER NOT NULL,"
        "  start_time INTEGER NOT NULL, end_time INTEGER NOT NULL, startup INTEGER NOT NULL DEFAULT 0,"
        "  exact INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (job_id, attempt, epoch)) WITHOUT ROWID;",

        /* 8: a stop (cancel, time limit, reclaim) recorded before the job is signalled */
        "ALTER TABLE jobs ADD COLUMN stop_state INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE jobs ADD COLUMN stop_reason TEXT;",

        /* 9: the newest checkpoint's identity at an attempt's end, for the crash-loop rule
         * after a restart (NULL: not recorded, an attempt of an older version) */
        "ALTER TABLE job_attempts ADD COLUMN ckpt_id TEXT;",

        /* 10: each measured epoch's memory low and peak per GPU (store/epochs.h), the leak
         * detector's input, so that a restarted daemon judges the same series */
        "CREATE TABLE job_epoch_mem ("
        "  job_id INTEGER NOT NULL, attempt INTEGER NOT NULL, gpu INTEGER NOT NULL, epoch INTEGER NOT NULL,"
        "  low REAL NOT NULL, peak REAL NOT NULL, PRIMARY KEY (job_id, attempt, gpu, epoch)) WITHOUT ROWID;",

        /* 11: submit --signal: a signal for the job's main process ahead of its end */
        "ALTER TABLE jobs ADD COLUMN warn_signal INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE jobs ADD COLUMN warn_before INTEGER NOT NULL DEFAULT 0;",

        /* 12: GET /api/v1/usage reads the jobs that ended inside its window */
        "CREATE INDEX jobs_end ON jobs(end_time);",

        /* 13: GPUs gone from NVML's devices, by UUID, drained when they come back */
        "CREATE TABLE gpus_missing (uuid TEXT PRIMARY KEY, reason TEXT NOT NULL) WITHOUT ROWID;",

        /* 14: a running attempt's monotonic start (store/jobclock.h), for its runtime across a
         * daemon restart within one boot */
        "CREATE TABLE job_clock ("
        "  job_id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL, boot_id TEXT NOT NULL,"
        "  start_mono INTEGER NOT NULL);",

        /* 15: GET /api/v1/gpus/events reads a GPU's (or all GPUs') newest events since a time */
        "CREATE INDEX gpu_events_gpu ON gpu_events(gpu, time);"
        "CREATE INDEX gpu_events_time ON gpu_events(time);",

        /* 16: gpuward run: the job is a terminal session (its supervisor makes a pty) */
        "ALTER TABLE jobs ADD COLUMN interactive INTEGER NOT NULL DEFAULT 0;",

        /* 17: a token's scope: '' = its account's whole rights, 'agent' = a node agent's, which
         * may only post node snapshots (gpuward token create --scope agent) */
        "ALTER TABLE tokens ADD COLUMN scope TEXT NOT NULL DEFAULT '';",

        /* 18: job arrays: the array's spec and how many of its tasks were handed out; a task's
         * array and index (its row is made when it starts) */
        "ALTER TABLE jobs ADD COLUMN array_spec TEXT;"
        "ALTER TABLE jobs ADD COLUMN array_next INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE jobs ADD COLUMN array_job INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE jobs ADD COLUMN array_index INTEGER NOT NULL DEFAULT 0;"
        "CREATE INDEX jobs_array ON jobs(array_job, array_index) WHERE array_job > 0;",

        /* 19: submit --preemptible: the job may be stopped for a higher-priority job or a booking */
        "ALTER TABLE jobs ADD COLUMN preemptible INTEGER NOT NULL DEFAULT 0;",

        /* 20: the node of a GPU event on a cluster's controller (its agent's Xid); NULL = this
         * host's own GPU, so that node1's GPU 2 is not read as the head node's */
        "ALTER TABLE gpu_events ADD COLUMN node TEXT;",

        /* 21: a node agent's token is bound to its node (gpuward token create --scope agent
         * --node NAME): it may post that node's snapshots only.  '' = bound to none: every
         * token of scope '' and the agents' tokens made before, which are refused (nodes.h) */
        "ALTER TABLE tokens ADD COLUMN node TEXT NOT NULL DEFAULT '';",

        /* 22: a booking that is over whose Slurm reservation is still to delete (Slurm refuses
         * while a job runs in it): deleted once its jobs are gone, after a restart too */
        "ALTER TABLE bookings ADD COLUMN resv_drop INTEGER NOT NULL DEFAULT 0;",

        /* 23: the epochs the checkpoint a job (and each attempt) resumes from holds, read from
         * the file when the job was queued again; 0 = not read (none offered, a file whose epoch
         * is not readable, or an attempt of an older version) */
        "ALTER TABLE jobs ADD COLUMN resume_epoch INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE job_attempts ADD COLUMN ckpt_epoch INTEGER NOT NULL DEFAULT 0;",

        /* 24: submit --dataset: the directory or data YAML staged into the node's cache before
         * the job starts; NULL = none */
        "ALTER TABLE jobs ADD COLUMN dataset TEXT;",
        /* 25: submit --publish NAME and --publish-if-better METRIC: the model the job's run is
         * published as when it completes, and the metric it must beat (NULL: none) */
        "ALTER TABLE jobs ADD COLUMN publish TEXT;"
        "ALTER TABLE jobs ADD COLUMN publish_metric TEXT;",
        /* 26: submit --gpus PROFILE[:COUNT]: MIG slices instead of whole GPUs (NULL profile =
         * whole GPUs); the slices an attempt got (their UUIDs, comma-separated) and the GPUs
         * they make up, which accounting counts GPU-hours by (0 = whole GPUs: ngpus) */
        "ALTER TABLE jobs ADD COLUMN mig_profile TEXT;"
        "ALTER TABLE jobs ADD COLUMN mig_count INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE jobs ADD COLUMN mig_slices TEXT;"
        "ALTER TABLE jobs ADD COLUMN mig_share REAL NOT NULL DEFAULT 0;",
        /* 27: submit --scratch: the job works in a node-local folder whose checkpoints are
         * copied back to its working directory (daemon/scratch) */
        "ALTER TABLE jobs ADD COLUMN scratch INTEGER NOT NULL DEFAULT 0;",
        /* 28: on a cluster, the name of the --scratch folder of the job's latest attempt under
         * the nodes' scratch_dir, with its random part (core/scratch.h), kept for a restart;
         * NULL = JOB-ATTEMPT (one host's, or a job recorded before) */
        "ALTER TABLE jobs ADD COLUMN scratch_name TEXT;",
        /* 29: jobs_end without the jobs that have not ended (end_time 0), which no query reads
         * by it: an end then adds an entry at the index's back and no longer also takes one
         * from its front, a page less written per end once the index spans pages.  The same
         * name, for the same rows its readers ask for; SQLite reads a partial index only for a
         * WHERE that says end_time > 0 in those words (usage.c, sharing_store.c). */
        "DROP INDEX jobs_end;"
        "CREATE INDEX jobs_end ON jobs(end_time) WHERE end_time > 0;",
        /* 30: a running attempt's monotonic start (store/jobclock.h) moves into the job's row:
         * written with the start's own update of that row, it costs no page of its own in the
         * start's commit (job_clock's was one of its eight or nine) */
        "ALTER TABLE jobs ADD COLUMN clock_attempt INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE jobs ADD COLUMN clock_boot TEXT;"
        "ALTER TABLE jobs ADD COLUMN clock_mono INTEGER NOT NULL DEFAULT 0;"
        "UPDATE jobs SET (clock_attempt, clock_boot, clock_mono) = "
        "  (SELECT attempt, boot_id, start_mono FROM job_clock c WHERE c.job_id = jobs.id)"
        "  WHERE id IN (SELECT job_id FROM job_clock);"
        "DROP TABLE job_clock;",
};

int gw_store_schema_version(void) { return (int) ELEMENTSOF(gw_store_migrations); }

/* The database's schema version (PRAGMA user_version), or -EIO. */
static int schema_read(sqlite3 *db) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
                return -EIO;
        int version = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -EIO;
        sqlite3_finalize(st);
        return version;
}

/* A database a later gpuwardd made is refused before anything is written to it (not even
 * the journal mode): this build does not know what its tables mean, and the later version
 * must still find the file as it left it. */
int gw_store_schema_check(sqlite3 *db, const char *path, char *err, size_t errlen) {
        int version = schema_read(db), latest = gw_store_schema_version();
        if (version < 0) {
                snprintf(err, errlen, "reading the schema version of %s failed: %s", path, sqlite3_errmsg(db));
                return -EIO;
        }
        if (version > latest) {
                snprintf(err, errlen,
                         "database schema %d is newer than this gpuwardd knows (%d): %s was written by a later "
                         "gpuward; run that version, or restore a backup made by this one (left unchanged)",
                         version, latest, path);
                return -EPROTO;
        }
        return 0;
}

int gw_store_migrate(sqlite3 *db, char *err, size_t errlen) {
        int version = schema_read(db);
        if (version < 0)
                goto fail;
        int latest = gw_store_schema_version();
        for (int v = version; v < latest; v++) {
                char pragma[64];
                snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", v + 1);
                if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK ||
                    sqlite3_exec(db, gw_store_migrations[v], NULL, NULL, NULL) != SQLITE_OK ||
                    sqlite3_exec(db, pragma, NULL, NULL, NULL) != SQLITE_OK) {
                        snprintf(err, errlen, "migration %d failed: %s", v + 1, sqlite3_errmsg(db));
                        (void) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
                        return -EIO;
                }
                if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
                        goto fail;
        }
        return 0;
fail:
        snprintf(err, errlen, "reading the schema version failed: %s", sqlite3_errmsg(db));
        return -EIO;
}
