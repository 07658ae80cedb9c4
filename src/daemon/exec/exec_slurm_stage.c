/* A --dataset on a Slurm cluster (exec_slurm.h): the node is Slurm's choice, so the copy is
 * made there, by the node's agent, when the batch script starts: the script runs
 * `gpuwardd --stage-run SOCKET DATASET COMMAND...` (stage_run.c), which asks the agent and
 * then execs the command.  The allocation holds its GPUs meanwhile; the agent tells how long
 * (its snapshot's "staged"), and that time times the job's GPUs is recorded as the job's. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/directive.h"
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

void gw_slurm_staged(struct gw_daemon *d, const char *node, const struct gw_slurm_staging *st) {
        struct gw_exec_slurm *s = slurm_of(d);
        struct gw_slurm_job *sj = NULL;
        for (size_t i = 0; i < s->n_jobs && !sj; i++)
                if (s->jobs[i].slurm_id == st->slurm_id)
                        sj = &s->jobs[i];
        /* Another's Slurm job, one already told (a snapshot posted again), or one gone. */
        if (!sj || sj->staged || !sj->dj)
                return;
        sj->staged = true;
        struct gw_job *j = sj->dj->job;
        double secs = (double) st->took / (double) GW_USEC_PER_SEC;
        int gpus = j->ngpus > 0 ? j->ngpus : 0;
        char msg[400];
        snprintf(msg, sizeof msg, "dataset %s on %s in %.2f s while holding %d GPU%s: %.2f GPU-seconds%s",
                 st->ok ? "staged" : "staging failed", node, secs, gpus, gpus == 1 ? "" : "s", secs * gpus,
                 st->ok ? (st->hit ? " (the node's cached copy served)" : "") : "");
        j->staged = (struct gw_job_staged){ .set = true, .ok = st->ok, .hit = st->hit, .gpus = gpus, .took = st->took };
        snprintf(j->staged.node, sizeof j->staged.node, "%s", node);
        if (gw_store_job_event(d->store, j->id, j->state, "dataset", msg) < 0)
                log_warn("job %lld: %s, not recorded: %s", (long long) j->id, msg, gw_store_errmsg(d->store));
        log_info("job %lld: %s", (long long) j->id, msg);
}
