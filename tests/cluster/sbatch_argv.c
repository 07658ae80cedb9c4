/* gw-sbatch-argv: prints what gw_slurm_sbatch_argv makes of a job, each argument followed
 * by a NUL, so that the cluster test can hand it to a real sbatch.  Exits 2 with the refusal
 * on stderr.
 *
 *   gw-sbatch-argv [--id N] [--name S] [--gpus N] [--time SECS] [--output P] [--cwd D]
 *                  [--begin-in SECS] [--gpus-per-node N] [--max-nodes N] [--exclude NODE]...
 *                  [--script PATH] -- COMMAND [ARG]... */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/directive.h"
#include "core/jobrec.h"
#include "core/slurm.h"

static long num(const char *opt, const char *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (!*s || *end) {
                fprintf(stderr, "gw-sbatch-argv: %s: \"%s\" is not a number\n", opt, s);
                exit(2);
        }
        return v;
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                {"id", 1, 0, 'i'},       {"name", 1, 0, 'n'},          {"gpus", 1, 0, 'g'},
                {"time", 1, 0, 't'},     {"output", 1, 0, 'o'},        {"cwd", 1, 0, 'c'},
                {"begin-in", 1, 0, 'b'}, {"gpus-per-node", 1, 0, 'G'}, {"max-nodes", 1, 0, 'N'},
                {"exclude", 1, 0, 'x'},  {"script", 1, 0, 's'},        {0, 0, 0, 0},
        };
        const gw_usec_t now = 1000 * GW_USEC_PER_SEC; /* any instant: only the difference counts */
        struct gw_job j = {.id = 1};
        struct gw_sbatch_opts o = {.now = now};
        const char *exclude[16];
        int c;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 'i': j.id = num("--id", optarg); break;
                case 'n': j.name = optarg; break;
                case 'g': j.ngpus = (int) num("--gpus", optarg); break;
                case 't': j.time_limit = num("--time", optarg) * GW_USEC_PER_SEC; break;
                case 'o': j.output = optarg; break;
                case 'c': j.cwd = optarg; break;
                case 'b': j.not_before = now + num("--begin-in", optarg) * GW_USEC_PER_SEC; break;
                case 'G': o.gpus_per_node = (int) num("--gpus-per-node", optarg); break;
                case 'N': o.max_nodes = (int) num("--max-nodes", optarg); break;
                case 's': o.script = optarg; break;
                case 'x':
                        if (o.n_exclude == sizeof exclude / sizeof exclude[0])
                                return 2;
                        exclude[o.n_exclude++] = optarg;
                        break;
                default: return 2;
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
