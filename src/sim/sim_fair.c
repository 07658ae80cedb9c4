/* Fair share in the simulator: each user's usage charged as their jobs hold GPUs, the factors
 * handed to gw_sched_plan_fair at each plan, and the per-user results (GPU-hours held, mean
 * wait) that show what it changes.  All the policy is core/fairshare.c's. */
#include <stdio.h>

#include "base/cleanup.h"
#include "sim/sim_engine.h"

void gw_sim_fair_setup(struct eng *e) {
        size_t n = (size_t) e->n_users;

        e->res->n_users = n;
        e->res->user_gpu_h = gw_xcalloc(n ? n : 1, sizeof(double));
        e->res->user_wait_s = gw_xcalloc(n ? n : 1, sizeof(double));
        if (!e->cfg->fairshare)
                return;
        e->fs = gw_xcalloc(n ? n : 1, sizeof(*e->fs));
        e->fs_factor = gw_xcalloc(n ? n : 1, sizeof(double));
        e->fs_at = GW_SIM_EPOCH;
}

/* O(users) per instant: the daemon charges each running job the same way, periodically. */
void gw_sim_fair_advance(struct eng *e, gw_usec_t t) {
        if (!e->fs || t <= e->fs_at)
                return;
        for (int u = 0; u < e->n_users; u++)
                if (e->user_gpus[u] > 0)
                        (void) gw_fs_charge(&e->fs[u], (double) e->user_gpus[u], e->fs_at, t, e->cfg->fs_half_life);
        e->fs_at = t;
}

const struct gw_sched_fair *gw_sim_fair_input(struct eng *e, struct gw_sched_fair *buf) {
        if (!e->fs)
                return NULL;
        /* The users' records are well formed (charged only here), so this cannot fail. */
        (void) gw_fs_factors(e->fs, (size_t) e->n_users, e->now, e->cfg->fs_half_life, e->fs_factor);
        *buf = (struct gw_sched_fair){ e->fs_factor, (size_t) e->n_users };
        return buf;
}

void gw_sim_fair_finish(struct eng *e, gw_usec_t end) {
        _cleanup_free_ size_t *n = gw_xcalloc(e->res->n_users ? e->res->n_users : 1, sizeof(size_t));

        for (size_t i = 0; i < e->w->n; i++) {
                const struct jrun *j = &e->jr[i];
                int u = e->w->jobs[i].user;
                if (j->st == J_FUTURE)
                        continue;
                e->res->user_wait_s[u] +=
                        j->started ? e->waits[i]
                                   : (double) (end - (GW_SIM_EPOCH + e->w->jobs[i].submit)) / (double) GW_SIM_SEC;
                n[u]++;
        }
        for (size_t u = 0; u < e->res->n_users; u++)
                if (n[u])
                        e->res->user_wait_s[u] /= (double) n[u];
}

void gw_sim_fair_free(struct eng *e) {
        free(e->fs);
        free(e->fs_factor);
        e->fs = NULL;
        e->fs_factor = NULL;
}

void gw_sim_print_users(FILE *f, const struct gw_sim_result *r, size_t n) {
        size_t users = 0;

        for (size_t i = 0; i < n; i++)
                if (r[i].n_users > users)
                        users = r[i].n_users;
        fprintf(f, "\nper user: GPU-hours held / mean wait (h)\n%-6s", "user");
        for (size_t i = 0; i < n; i++)
                fprintf(f, "  %22s", r[i].name);
        fputc('\n', f);
        for (size_t u = 0; u < users; u++) {
                fprintf(f, "%-6zu", u);
                for (size_t i = 0; i < n; i++) {
                        if (u < r[i].n_users)
                                fprintf(f, "  %12.1f / %7.2f", r[i].user_gpu_h[u], r[i].user_wait_s[u] / 3600.0);
                        else
                                fprintf(f, "  %22s", "-");
                }
                fputc('\n', f);
        }
}
