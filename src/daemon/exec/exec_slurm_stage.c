/* A --dataset on a Slurm cluster (exec_slurm.h): the node is Slurm's choice, so the copy is
 * made there, by the node's agent, when the batch script starts: the script runs
 * `gpuwardd --stage-run SOCKET DATASET COMMAND...` (stage_run.c), which asks the agent and
 * then execs the command.  The allocation holds its GPUs meanwhile; the agent tells how long
 * (its snapshot's "staged"), and that time times the job's GPUs is recorded as the job's.
 * A --scratch job's command is wrapped the same way, in `gpuwardd --scratch-run`
 * (daemon/scratch/scratch_step.c), outside any staging step, so that one batch script does
 * both. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/directive.h"
#include "core/scratch.h"
#include "daemon/base/config.h"
#include "daemon/exec/exec_slurm.h"

void gw_slurm_self_find(struct gw_exec_slurm *s) {
        ssize_t l = readlink("/proc/self/exe", s->self, sizeof s->self - 1);
        s->self[l > 0 && (size_t) l < sizeof s->self - 1 ? l : 0] = '\0';
}

char **gw_slurm_stage_argv(struct gw_daemon *d, const char *dataset, char *const *argv, char *why, size_t n) {
        struct gw_exec_slurm *s = slurm_of(d);
        if (s->self[0] != '/' || strstr(s->self, " (deleted)")) {
                snprintf(why, n, "dataset: this gpuwardd cannot tell its own path for the job's staging step");
                return NULL;
        }
        size_t k = 0;
        while (argv[k])
                k++;
        char **v = gw_xcalloc(k + 5, sizeof *v);
        v[0] = gw_xstrdup(s->self);
        v[1] = gw_xstrdup("--stage-run");
        v[2] = gw_xstrdup(d->cfg->stage_socket);
        v[3] = gw_xstrdup(dataset);
        for (size_t i = 0; i < k; i++)
                v[4 + i] = gw_xstrdup(argv[i]);
        return v;
}

char **gw_slurm_scratch_argv(struct gw_daemon *d, const struct gw_job *j, char *const *argv, char *why, size_t n) {
        struct gw_exec_slurm *s = slurm_of(d);
        if (s->self[0] != '/' || strstr(s->self, " (deleted)")) {
                snprintf(why, n, "scratch: this gpuwardd cannot tell its own path for the job's scratch step");
                return NULL;
        }
        char run[4400] = "-";
        if (j->attempt > 1 && j->resume_from && j->cwd &&
            gw_scratch_restore_sub(j->cwd, j->resume_from, run, sizeof run) < 0)
                snprintf(run, sizeof run, "-"); /* told by the scratch feature */
        gw_usec_t iv = d->cfg->scratch_interval;
        long long secs = iv > 0 ? (iv + GW_USEC_PER_SEC - 1) / GW_USEC_PER_SEC : 1;
        size_t k = gw_strv_length(argv);
        char **v = gw_xcalloc(k + 6, sizeof *v);
        v[0] = gw_xstrdup(s->self);
        v[1] = gw_xstrdup("--scratch-run");
        v[2] = gw_xstrdup(j->scratch_dir);
        if (asprintf(&v[3], "%lld", secs) < 0)
                abort();
        v[4] = gw_xstrdup(run);
        for (size_t i = 0; i < k; i++)
                v[5 + i] = gw_xstrdup(argv[i]);
        return v;
}

/* Whether sid's staging was recorded already (a snapshot posted again after a lost answer);
 * else it is now. */
static bool told_before(struct gw_exec_slurm *s, uint32_t sid) {
        size_t n = s->n_staged_told < GW_SLURM_ENDED_KEEP ? s->n_staged_told : GW_SLURM_ENDED_KEEP;
        for (size_t i = 0; i < n; i++)
                if (s->staged_told[i] == sid)
                        return true;
        s->staged_told[s->n_staged_told++ % GW_SLURM_ENDED_KEEP] = sid;
        return false;
}

void gw_slurm_staged(struct gw_daemon *d, const char *node, const struct gw_slurm_staging *st) {
        struct gw_exec_slurm *s = slurm_of(d);
        bool running;
        /* A job that failed its staging ends at once: its record may come after squeue told. */
        int64_t id = gw_slurm_job_of(d, st->slurm_id, &running);
        struct gw_slurm_job *sj = running ? gw_slurm_job_find(s, id) : NULL;
        struct gw_job *j = sj && sj->dj ? sj->dj->job : NULL;
        _cleanup_(gw_job_freep) struct gw_job *gone = NULL;
        if (!j && id > 0 && gw_store_job_get(d->store, id, &gone) == 0)
                j = gone;
        /* Another's Slurm job, or one told already. */
        if (!j || told_before(s, st->slurm_id))
                return;
        double secs = (double) st->took / (double) GW_USEC_PER_SEC;
        int gpus = j->ngpus > 0 ? j->ngpus : 0;
        char msg[400];
        snprintf(msg, sizeof msg, "dataset %s on %s in %.2f s while holding %d GPU%s: %.2f GPU-seconds%s",
                 st->ok ? "staged" : "staging failed", node, secs, gpus, gpus == 1 ? "" : "s", secs * gpus,
                 st->ok ? (st->hit ? " (the node's cached copy served)" : "") : "");
        if (!gone) {
                j->staged = (struct gw_job_staged){ .set = true,
                                                    .ok = st->ok,
                                                    .hit = st->hit,
                                                    .gpus = gpus,
                                                    .took = st->took };
                snprintf(j->staged.node, sizeof j->staged.node, "%s", node);
        }
        if (gw_store_job_event(d->store, j->id, j->state, "dataset", msg) < 0)
                log_warn("job %lld: %s, not recorded: %s", (long long) j->id, msg, gw_store_errmsg(d->store));
        log_info("job %lld: %s", (long long) j->id, msg);
}
