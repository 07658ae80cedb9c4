/* gw-slurm-probe: core/slurm.h's pure functions on what a real Slurm shows, for the
 * cluster test.
 *
 *   gw-slurm-probe sbatch [--id N] [--name S] [--gpus N] [--time SECS] [--output P]
 *                  [--cwd D] [--begin-in SECS] [--gpus-per-node N] [--max-nodes N]
 *                  [--exclude NODE]... [--script PATH] -- COMMAND [ARG]...
 *       gw_slurm_sbatch_argv's vector, each argument followed by a NUL
 *   gw-slurm-probe proc FILE      what gw_slurm_proc_from_cgroup reads in FILE
 *                                 (/proc/PID/cgroup): "job=J step=KIND[:N] uid=U node=NODE"
 *   gw-slurm-probe state TEXT     "STATE CLASS": gw_slurm_state_parse
 *   gw-slurm-probe reason TEXT    "REASON blocked|waiting": gw_slurm_reason_parse
 *
 * Exits 2 on a refusal or a text the function does not know, with why on stderr. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/directive.h"
#include "core/jobrec.h"
#include "core/slurm.h"

static long num(const char *opt, const char *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (!*s || *end) {
                fprintf(stderr, "gw-slurm-probe: %s: \"%s\" is not a number\n", opt, s);
                exit(2);
        }
        return v;
}

static int sbatch(int argc, char **argv) {
        static const struct option opts[] = {
                { "id", 1, 0, 'i' },       { "name", 1, 0, 'n' },          { "gpus", 1, 0, 'g' },
                { "time", 1, 0, 't' },     { "output", 1, 0, 'o' },        { "cwd", 1, 0, 'c' },
                { "begin-in", 1, 0, 'b' }, { "gpus-per-node", 1, 0, 'G' }, { "max-nodes", 1, 0, 'N' },
                { "exclude", 1, 0, 'x' },  { "script", 1, 0, 's' },        { 0, 0, 0, 0 },
        };
        const gw_usec_t now = 1000 * GW_USEC_PER_SEC; /* any instant: only the difference counts */
        struct gw_job j = { .id = 1 };
        struct gw_sbatch_opts o = { .now = now };
        const char *exclude[16];
        int c;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 'i':
                        j.id = num("--id", optarg);
                        break;
                case 'n':
                        j.name = optarg;
                        break;
                case 'g':
                        j.ngpus = (int) num("--gpus", optarg);
                        break;
                case 't':
                        j.time_limit = num("--time", optarg) * GW_USEC_PER_SEC;
                        break;
                case 'o':
                        j.output = optarg;
                        break;
                case 'c':
                        j.cwd = optarg;
                        break;
                case 'b':
                        j.not_before = now + num("--begin-in", optarg) * GW_USEC_PER_SEC;
                        break;
                case 'G':
                        o.gpus_per_node = (int) num("--gpus-per-node", optarg);
                        break;
                case 'N':
                        o.max_nodes = (int) num("--max-nodes", optarg);
                        break;
                case 's':
                        o.script = optarg;
                        break;
                case 'x':
                        if (o.n_exclude == sizeof exclude / sizeof exclude[0])
                                return 2;
                        exclude[o.n_exclude++] = optarg;
                        break;
                default:
                        return 2;
                }
        }
        o.exclude = exclude;
        j.argv = argv + optind;

        char **v = NULL, why[256];
        if (gw_slurm_sbatch_argv(&j, &o, &v, why, sizeof why) < 0) {
                fprintf(stderr, "%s\n", why);
                return 2;
        }
        for (size_t i = 0; v[i]; i++)
                printf("%s%c", v[i], '\0');
        gw_strv_free(v);
        return 0;
}

static int proc(const char *path) {
        char text[16384];
        FILE *f = fopen(path, "re");
        if (!f) {
                perror(path);
                return 2;
        }
        size_t n = fread(text, 1, sizeof text, f);
        (void) fclose(f);
        struct gw_slurm_proc p;
        int r = gw_slurm_proc_from_cgroup(text, n, &p);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", path, r == -ENOENT ? "names no Slurm job" : strerror(-r));
                return 2;
        }
        printf("job=%u step=%s", p.job_id, gw_slurm_step_kind_name(p.step_kind));
        if (p.step_kind == GW_SLURM_STEP_NUMBERED)
                printf(":%u", p.step);
        if (p.has_uid)
                printf(" uid=%u", p.uid);
        printf(" node=%s\n", p.node);
        return 0;
}

static int words(const char *verb, const char *text) {
        if (strcmp(verb, "state") == 0) {
                struct gw_slurm_state s;
                if (gw_slurm_state_parse(text, &s) < 0) {
                        fprintf(stderr, "state \"%s\" not known\n", text);
                        return 2;
                }
                printf("%s %s\n", gw_job_state_name(s.state), gw_failure_class_name(s.cls));
                return 0;
        }
        struct gw_slurm_reason r;
        if (gw_slurm_reason_parse(text, &r) != 0) {
                fprintf(stderr, "reason \"%s\" not known\n", text);
                return 2;
        }
        printf("%s %s\n", r.reason == GW_REASON_NONE ? "None" : gw_job_reason_name(r.reason),
               r.blocked ? "blocked" : "waiting");
        return 0;
}

int main(int argc, char **argv) {
        if (argc >= 2 && strcmp(argv[1], "sbatch") == 0)
                return sbatch(argc - 1, argv + 1);
        if (argc == 3 && strcmp(argv[1], "proc") == 0)
                return proc(argv[2]);
        if (argc == 3 && (strcmp(argv[1], "state") == 0 || strcmp(argv[1], "reason") == 0))
                return words(argv[1], argv[2]);
        fprintf(stderr, "usage: gw-slurm-probe sbatch|proc|state|reason ... (see its source)\n");
        return 2;
}
