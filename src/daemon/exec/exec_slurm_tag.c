/* Finding an attempt's Slurm job by its tag (core/slurm.h: --comment=gpuward:JOB:ATTEMPT)
 * when its id was not recorded: a daemon killed between sbatch's answer and the store's
 * record of it.  At a restart one squeue lists the tagged jobs of the whole cluster; each is
 * adopted by the running attempt it names (the store records a start before sbatch runs),
 * never submitted a second time. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/slurm.h"
#include "daemon/exec/exec_slurm.h"

/* squeue's output for the whole cluster: about 40 bytes a job. */
#define TAGS_OUT_MAX (8u << 20)

void gw_slurm_tags_load(struct gw_daemon *d) {
        struct gw_exec_slurm *s = slurm_of(d);
        char *argv[] = { s->squeue, "--states=all", "--noheader", GW_SLURM_TAG_FORMAT, NULL };
        char conf[4200], *env[2];
        gw_slurm_client_env(conf, sizeof conf, env);
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0) {
                log_warn("backend slurm: pipe: %s", strerror(errno));
                return;
        }
        pid_t pid = gw_slurm_spawn(argv, env, false, 0, 0, NULL, 0, NULL, p[1]);
        (void) close(p[1]);
        _cleanup_close_ int fd = p[0];
        if (pid < 0) {
                log_warn("backend slurm: cannot run squeue for the tagged jobs: %s", strerror((int) -pid));
                return;
        }
        _cleanup_free_ char *out = gw_xmalloc(TAGS_OUT_MAX);
        int status = 0;
        int r = gw_slurm_wait_child(pid, fd, out, TAGS_OUT_MAX, &status);
        if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                /* Attempts without a recorded id are then lost, as before tags. */
                log_warn("backend slurm: squeue of the tagged jobs failed (%s): %.200s",
                         r < 0 ? "no answer" : "its status", out);
                return;
        }
        size_t cap = 0;
        for (char *line = out; line && *line;) {
                char *nl = strchr(line, '\n');
                struct gw_slurm_tagged t;
                if (gw_slurm_tag_parse(line, nl ? (size_t) (nl - line) : strlen(line), &t) == 0) {
                        if (s->n_tags == cap)
                                s->tags = gw_xrealloc(s->tags, (cap = cap ? 2 * cap : 64) * sizeof *s->tags);
                        s->tags[s->n_tags++] = t;
                }
                line = nl ? nl + 1 : NULL;
        }
        log_info("backend slurm: %zu Slurm job%s tagged by gpuward", s->n_tags, s->n_tags == 1 ? "" : "s");
}

uint32_t gw_slurm_tag_take(struct gw_exec_slurm *s, int64_t job, int attempt, uint32_t uid) {
        for (size_t i = 0; i < s->n_tags; i++) {
                struct gw_slurm_tagged *t = &s->tags[i];
                if (t->job != job || t->attempt != attempt)
                        continue;
                if (t->uid != uid) {
                        log_warn("job %" PRId64 ": Slurm job %" PRIu32 " carries its tag but is uid %" PRIu32
                                 "'s, not the job's (%" PRIu32 "); ignored",
                                 job, t->slurm_id, t->uid, uid);
                        continue;
                }
                uint32_t id = t->slurm_id;
                *t = s->tags[--s->n_tags];
                return id;
        }
        return 0;
}
