/* The cluster's GPUs by node (nodeview.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "cli/format.h"
#include "cli/nodeview.h"

enum { C_NODE, C_STATE, C_GPU, C_NAME, C_UTIL, C_MEM, C_JOBS, _C_MAX };

/* "42 (alice), 43 (bob)"; "-" for none. */
static void format_jobs(const json_t *g, char *buf, size_t n) {
        size_t i, len = 0;
        const json_t *j;
        snprintf(buf, n, "-");
        json_array_foreach (json_object_get(g, "slurm_jobs"), i, j) {
                long long id = 0;
                const char *user = cli_jstr(j, "user");
                (void) cli_jint(j, "id", &id);
                long long gw = 0;
                char mine[32] = "";
                if (cli_jint(j, "gpuward_job", &gw))
                        snprintf(mine, sizeof mine, " = gpuward %lld", gw);
                int w = snprintf(buf + len, n - len, "%s%lld%s%s%s%s", i ? ", " : "", id, user && user[0] ? " (" : "",
                                 user && user[0] ? user : "", user && user[0] ? ")" : "", mine);
                if (w < 0 || (size_t) w >= n - len)
                        return;
                len += (size_t) w;
        }
}

/* "  ~ Slurm job 57 (user bob) is not gpuward's: idle 5m12s, reported" under its GPU: what the
 * controller's idle watch says of a job submitted with plain sbatch (slurm_foreign_jobs). */
static int add_foreign(struct cli_table *t, const json_t *g) {
        size_t i;
        const json_t *j;
        json_array_foreach (json_object_get(g, "slurm_jobs"), i, j) {
                const json_t *idle = json_object_get(j, "idle_for");
                if (!json_is_true(json_object_get(j, "foreign")) || !json_is_number(idle))
                        continue;
                char line[256], secs[32];
                long long id = 0;
                const char *user = cli_jstr(j, "user"), *action = cli_jstr(j, "idle_action");
                (void) cli_jint(j, "id", &id);
                snprintf(line, sizeof line, "    ~ Slurm job %lld (user %s) is not gpuward's: idle %s%s%s", id,
                         user && user[0] ? user : "?", cli_format_secs(json_number_value(idle), secs, sizeof secs),
                         action ? ", " : "", action ? action : "");
                if (cli_table_add_line(t, line) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* "  ! rogue pid 4242 (user bob, 2.0 GiB): no Slurm job" under its GPU. */
static int add_rogues(struct cli_table *t, const json_t *g) {
        size_t i;
        const json_t *p;
        json_array_foreach (json_object_get(g, "procs"), i, p) {
                if (!json_is_true(json_object_get(p, "rogue")))
                        continue;
                char line[256], mem[32];
                long long pid = 0;
                const char *user = cli_jstr(p, "user");
                (void) cli_jint(p, "pid", &pid);
                snprintf(line, sizeof line, "    ! rogue pid %lld (user %s, %s): in no Slurm job", pid,
                         user && user[0] ? user : "?", cli_format_bytes(cli_jnum(p, "mem"), mem, sizeof mem));
                if (cli_table_add_line(t, line) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int add_node(struct cli_table *t, const json_t *node) {
        char state[48], gpu[16], util[16], mem[80], used[32], total[32], jobs[256], age[32];
        const char *name = cli_jstr(node, "node");
        if (json_is_true(json_object_get(node, "stale")))
                snprintf(state, sizeof state, "stale %s", cli_format_secs(cli_jnum(node, "age"), age, sizeof age));
        else
                snprintf(state, sizeof state, "ok");
        const json_t *gpus = json_object_get(node, "gpus");
        if (json_array_size(gpus) == 0) {
                const char *cells[_C_MAX] = { name, state, "-", "(no GPUs)", "-", "-", "-" };
                return cli_table_add(t, cells);
        }
        size_t i;
        const json_t *g;
        json_array_foreach (gpus, i, g) {
                long long idx = 0, u;
                (void) cli_jint(g, "index", &idx);
                snprintf(gpu, sizeof gpu, "%lld", idx);
                if (cli_jint(g, "util", &u))
                        snprintf(util, sizeof util, "%lld%%", u);
                else
                        snprintf(util, sizeof util, "-");
                snprintf(mem, sizeof mem, "%s / %s", cli_format_bytes(cli_jnum(g, "mem_used"), used, sizeof used),
                         cli_format_bytes(cli_jnum(g, "mem_total"), total, sizeof total));
                format_jobs(g, jobs, sizeof jobs);
                const char *health = cli_jstr(g, "health");
                const char *cells[_C_MAX] = {
                        name, health && strcmp(health, "ok") ? health : state, gpu, cli_jstr(g, "name"), util, mem, jobs
                };
                if (cli_table_add(t, cells) < 0 || add_rogues(t, g) < 0 || add_foreign(t, g) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int cli_nodes_print(const json_t *nodes, FILE *f) {
        static const char *const cols[_C_MAX] = { "NODE", "STATE", "GPU", "NAME", "UTIL", "MEMORY", "SLURM JOBS" };
        if (json_array_size(nodes) == 0) {
                fputs("No node agent has reported yet (gpuwardd --agent on each node).\n", f);
                return 0;
        }
        struct cli_table *t = cli_table_new(cols, _C_MAX);
        if (!t)
                return -ENOMEM;
        size_t i;
        const json_t *n;
        int r = 0;
        json_array_foreach (nodes, i, n)
                if (r == 0)
                        r = add_node(t, n);
        if (r == 0)
                cli_table_print(t, f);
        cli_table_free(t);
        return r;
}
