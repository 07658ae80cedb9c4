/* gpuward-sim: command line.  See docs/SIMULATOR.md. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "sim/sim.h"

#define MAX_CONFIGS 16

static const char usage[] = "usage: gpuward-sim [options]\n"
                            "  --gpus N            cluster size (default 40; above 64: nodes of --node-gpus)\n"
                            "  --node-gpus N       GPUs per node, one scheduler plan per node (default: one plan\n"
                            "                      when N <= 64, else 8)\n"
                            "  --days D            simulated period (default 7; with --trace: run until all end)\n"
                            "  --jobs N            generate exactly N jobs instead (the period follows the load)\n"
                            "  --workload lab      the generator (only 'lab')\n"
                            "  --load L            offered GPU-time held / capacity, no queueing (default 1.0)\n"
                            "  --seed S            random seed (default 1)\n"
                            "  --trace FILE        replay a CSV trace instead of generating one\n"
                            "  --write-trace FILE  write the workload as a CSV trace and go on\n"
                            "  --compare A,B,...   configurations side by side (default\n"
                            "                      baseline,reclaim,retry,bookings,all,princeton)\n"
                            "  --policy NAME       one configuration: baseline, reclaim[:PROFILE], retry, bookings,\n"
                            "                      all[:PROFILE], princeton, or a profile (default, hpo, finetune);\n"
                            "                      NAME+fair orders the queue by fair share (7-day half-life) and\n"
                            "                      adds a table of each user's GPU-hours and mean wait\n"
                            "  --repair DUR        a broken GPU is repaired (a drained one undrained) after this\n"
                            "                      (default 4h)\n"
                            "  --export-state DIR  write gpuwardd's job history in DIR (read-only) as a trace to\n"
                            "                      stdout, and stop\n"
                            "  --sample DUR        observation interval (default 30s; 0 = none: no reclaim)\n"
                            "  --window N          pending jobs per scheduler plan (queue depth; default all)\n"
                            "  --quota-gpus N      per-user GPU quota (max_gpus)\n"
                            "  --high-frac F       give a share F of the jobs priority 1, the high class that\n"
                            "                      NAME+preempt configurations preempt for (default 0.1 when one\n"
                            "                      is compared, else 0: the workload's own priorities); adds a\n"
                            "                      table of the high class's waits and the work preemption lost\n"
                            "  --json              JSON instead of the table\n"
                            "  --svg FILE          plot GPUs allocated and busy over time\n"
                            "  --scale             10,000 GPUs, 1,000,000 jobs, nodes of 8, timed (other options\n"
                            "                      still apply: --jobs, --gpus, --policy ...)\n"
                            "  --bench             the scheduler's cost per plan against queue length and GPUs\n";

struct opts {
        int gpus, node_gpus;
        bool gpus_set;
        double days;
        bool days_set;
        size_t jobs;
        double load;
        uint64_t seed;
        const char *trace, *write_trace, *svg, *configs;
        bool json, scale, bench;
        gw_usec_t sample, repair;
        bool sample_set;
        const char *export_state;
        size_t window;
        int64_t quota;
        double high_frac;
        bool high_set;
};

static gw_usec_t clock_ns(void) {
        struct timespec ts;
        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (gw_usec_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int num(const char *opt, const char *s, long long lo, long long hi, long long *ret) {
        if (gw_parse_int(s, lo, hi, ret) < 0) {
                fprintf(stderr, "gpuward-sim: %s: '%s' is not a whole number in %lld..%lld\n", opt, s, lo, hi);
                return -EINVAL;
        }
        return 0;
}

static int real(const char *opt, const char *s, double lo, double hi, double *ret) {
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (!*s || *end || errno || !isfinite(v) || v < lo || v > hi) {
                fprintf(stderr, "gpuward-sim: %s: '%s' is not a number in %g..%g\n", opt, s, lo, hi);
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

static int parse(int argc, char **argv, struct opts *o) {
        enum {
                O_GPUS = 256,
                O_NODE,
                O_DAYS,
                O_JOBS,
                O_WORKLOAD,
                O_LOAD,
                O_SEED,
                O_TRACE,
                O_WTRACE,
                O_COMPARE,
                O_POLICY,
                O_SAMPLE,
                O_WINDOW,
                O_QUOTA,
                O_JSON,
                O_SVG,
                O_SCALE,
                O_BENCH,
                O_REPAIR,
                O_EXPORT,
                O_HIGH,
                O_HELP
        };
        static const struct option lo[] = {
                { "gpus", required_argument, NULL, O_GPUS },
                { "node-gpus", required_argument, NULL, O_NODE },
                { "days", required_argument, NULL, O_DAYS },
                { "jobs", required_argument, NULL, O_JOBS },
                { "workload", required_argument, NULL, O_WORKLOAD },
                { "load", required_argument, NULL, O_LOAD },
                { "seed", required_argument, NULL, O_SEED },
                { "trace", required_argument, NULL, O_TRACE },
                { "write-trace", required_argument, NULL, O_WTRACE },
                { "compare", required_argument, NULL, O_COMPARE },
                { "policy", required_argument, NULL, O_POLICY },
                { "sample", required_argument, NULL, O_SAMPLE },
                { "window", required_argument, NULL, O_WINDOW },
                { "quota-gpus", required_argument, NULL, O_QUOTA },
                { "json", no_argument, NULL, O_JSON },
                { "svg", required_argument, NULL, O_SVG },
                { "scale", no_argument, NULL, O_SCALE },
                { "bench", no_argument, NULL, O_BENCH },
                { "repair", required_argument, NULL, O_REPAIR },
                { "export-state", required_argument, NULL, O_EXPORT },
                { "high-frac", required_argument, NULL, O_HIGH },
                { "help", no_argument, NULL, O_HELP },
                { 0 },
        };
        long long v = 0;
        int c, k = 0;

        *o = (struct opts){ .gpus = 40,
                            .days = 7,
                            .load = 1.0,
                            .seed = 1,
                            .sample = 30 * GW_SIM_SEC,
                            .repair = 4 * GW_SIM_HOUR };
        while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
                const char *a = optarg;
                switch (c) {
                case O_GPUS:
                        k = num("--gpus", a, 1, 1000000, &v);
                        o->gpus = (int) v;
                        o->gpus_set = true;
                        break;
                case O_NODE:
                        k = num("--node-gpus", a, 1, 64, &v);
                        o->node_gpus = (int) v;
                        break;
                case O_DAYS:
                        k = real("--days", a, 0.001, 3660, &o->days);
                        o->days_set = true;
                        break;
                case O_JOBS:
                        k = num("--jobs", a, 1, 100000000, &v);
                        o->jobs = (size_t) v;
                        break;
                case O_LOAD:
                        k = real("--load", a, 0.01, 100, &o->load);
                        break;
                case O_SEED:
                        k = num("--seed", a, 0, INT64_MAX, &v);
                        o->seed = (uint64_t) v;
                        break;
                case O_WORKLOAD:
                        if (strcmp(a, "lab") != 0) {
                                fprintf(stderr, "gpuward-sim: --workload: only 'lab' is known\n");
                                return -EINVAL;
                        }
                        break;
                case O_TRACE:
                        o->trace = a;
                        break;
                case O_WTRACE:
                        o->write_trace = a;
                        break;
                case O_COMPARE:
                case O_POLICY:
                        o->configs = a;
                        break;
                case O_SAMPLE:
                        if (strcmp(a, "0") == 0)
                                o->sample = 0;
                        else if (gw_parse_duration(a, &o->sample) < 0 || o->sample <= 0) {
                                fprintf(stderr, "gpuward-sim: --sample: '%s' is not a duration\n", a);
                                return -EINVAL;
                        }
                        o->sample_set = true;
                        break;
                case O_REPAIR:
                        if (gw_parse_duration(a, &o->repair) < 0 || o->repair <= 0) {
                                fprintf(stderr, "gpuward-sim: --repair: '%s' is not a duration\n", a);
                                return -EINVAL;
                        }
                        break;
                case O_EXPORT:
                        o->export_state = a;
                        break;
                case O_WINDOW:
                        k = num("--window", a, 1, 100000000, &v);
                        o->window = (size_t) v;
                        break;
                case O_QUOTA:
                        k = num("--quota-gpus", a, 1, 1000000, &v);
                        o->quota = v;
                        break;
                case O_HIGH:
                        k = real("--high-frac", a, 0, 1, &o->high_frac);
                        o->high_set = true;
                        break;
                case O_JSON:
                        o->json = true;
                        break;
                case O_SVG:
                        o->svg = a;
                        break;
                case O_SCALE:
                        o->scale = true;
                        break;
                case O_BENCH:
                        o->bench = true;
                        break;
                case O_HELP:
                        fputs(usage, stdout);
                        return 1;
                default:
                        fputs(usage, stderr);
                        return -EINVAL;
                }
                if (k < 0)
                        return k;
        }
        if (optind < argc) {
                fprintf(stderr, "gpuward-sim: unexpected argument '%s'\n%s", argv[optind], usage);
                return -EINVAL;
        }
        return 0;
}

/* Splits "a,b,c" into configurations (no strtok: the list is not ours to modify). */
static int configs(const char *list, struct gw_sim_config *out, size_t *ret_n) {
        size_t n = 0;
        const char *p = list;

        for (;;) {
                const char *c = strchr(p, ',');
                size_t len = c ? (size_t) (c - p) : strlen(p);
                char name[GW_SIM_NAME_MAX], msg[256];
                if (n == MAX_CONFIGS || len == 0 || len >= sizeof(name)) {
                        fprintf(stderr, "gpuward-sim: bad configuration list '%s'\n", list);
                        return -EINVAL;
                }
                memcpy(name, p, len);
                name[len] = '\0';
                if (gw_sim_config_named(name, &out[n], msg, sizeof(msg)) < 0) {
                        fprintf(stderr, "gpuward-sim: %s\n", msg);
                        return -EINVAL;
                }
                n++;
                if (!c)
                        break;
                p = c + 1;
        }
        *ret_n = n;
        return 0;
}

static int load_workload(const struct opts *o, int max_job_gpus, struct gw_sim_workload *w) {
        char msg[256];

        if (o->trace) {
                _cleanup_fclose_ FILE *f = fopen(o->trace, "re");
                if (!f) {
                        fprintf(stderr, "gpuward-sim: %s: %s\n", o->trace, strerror(errno));
                        return -errno;
                }
                if (gw_sim_trace_read(f, w, msg, sizeof(msg)) < 0) {
                        fprintf(stderr, "gpuward-sim: %s: %s\n", o->trace, msg);
                        return -EINVAL;
                }
                return 0;
        }
        struct gw_sim_gen g;
        gw_sim_gen_default(&g);
        g.n_gpus = o->gpus;
        g.max_job_gpus = max_job_gpus;
        g.span = (gw_usec_t) (o->days * (double) GW_SIM_DAY);
        g.n_jobs = o->jobs;
        g.load = o->load;
        g.seed = o->seed;
        return gw_sim_generate_lab(&g, w);
}

static int write_file(const char *path, const struct gw_sim_workload *w, const char *title, int gpus,
                      const struct gw_sim_result *r, size_t n) {
        _cleanup_fclose_ FILE *f = fopen(path, "we");
        if (!f) {
                fprintf(stderr, "gpuward-sim: %s: %s\n", path, strerror(errno));
                return -errno;
        }
        int k = w ? gw_sim_trace_write(f, w) : gw_sim_write_svg(f, title, gpus, r, n);
        if (k < 0 || fflush(f) != 0) {
                fprintf(stderr, "gpuward-sim: %s: write failed\n", path);
                return -EIO;
        }
        return 0;
}

static void print_costs(const struct gw_sim_result *r, double wall_s) {
        printf("\n%s: %.1f s wall, %llu events, %llu scheduler passes (mean %.1f us, max %.1f us), "
               "%llu plans, %llu reclaim decisions\n",
               r->name, wall_s, (unsigned long long) r->events, (unsigned long long) r->sched_passes,
               r->sched_passes ? r->pass_ns_sum / (double) r->sched_passes / 1000 : 0, r->pass_ns_max / 1000,
               (unsigned long long) r->sched_plans, (unsigned long long) r->reclaim_decisions);
        printf("  %-20s %10s %10s %10s\n", "pending jobs / plan", "plans", "mean us", "max us");
        for (unsigned b = 0; b < GW_SIM_COST_BUCKETS; b++) {
                const struct gw_sim_cost *c = &r->cost[b];
                char range[32];
                if (!c->n)
                        continue;
                if (b == 0)
                        snprintf(range, sizeof(range), "0-1");
                else
                        snprintf(range, sizeof(range), "%llu-%llu", 1ULL << b, (1ULL << (b + 1)) - 1);
                printf("  %-20s %10llu %10.2f %10.1f\n", range, (unsigned long long) c->n,
                       c->ns_sum / (double) c->n / 1000, c->ns_max / 1000);
        }
}

int main(int argc, char **argv) {
        struct opts o;
        struct gw_sim_config cfg[MAX_CONFIGS];
        struct gw_sim_result res[MAX_CONFIGS];
        struct gw_sim_workload w = { 0 };
        struct gw_sim_shape shape;
        double wall[MAX_CONFIGS];
        size_t n_cfg = 0, n_res = 0;
        char title[512];
        int k = parse(argc, argv, &o), rc = 1;

        if (k != 0)
                return k > 0 ? 0 : 2;
        if (o.export_state) {
                char msg[512];
                if (gw_sim_export_state(o.export_state, stdout, msg, sizeof(msg)) < 0 || fflush(stdout) != 0) {
                        fprintf(stderr, "gpuward-sim: --export-state: %s\n", msg);
                        return 1;
                }
                return 0;
        }
        if (o.bench)
                return gw_sim_bench_plan(stdout, clock_ns, (size_t) 1 << 20, o.json) < 0 ? 1 : 0;
        if (o.scale) {
                if (!o.gpus_set)
                        o.gpus = 10000;
                if (!o.jobs)
                        o.jobs = 1000000;
                if (!o.configs)
                        o.configs = "baseline";
                if (!o.sample_set)
                        o.sample = 0;
        }
        int node = o.node_gpus ? o.node_gpus : o.gpus > 64 ? 8 : 0;
        if (!node && o.gpus > 64) {
                fprintf(stderr, "gpuward-sim: more than 64 GPUs need --node-gpus\n");
                return 2;
        }
        if (configs(o.configs ? o.configs : "baseline,reclaim,retry,bookings,all,princeton", cfg, &n_cfg) < 0)
                return 2;
        if (load_workload(&o, node ? node : (o.gpus < 8 ? o.gpus : 8), &w) < 0)
                goto out;
        bool preempt = false;
        for (size_t i = 0; i < n_cfg; i++)
                preempt |= cfg[i].preempt;
        if (o.high_set || preempt)
                gw_sim_workload_high(&w, o.high_set ? o.high_frac : 0.1, o.seed);
        gw_sim_workload_shape(&w, &shape);
        if (o.write_trace && write_file(o.write_trace, &w, NULL, 0, NULL, 0) < 0)
                goto out;
        /* A trace or a job count runs until every job has ended, unless --days says otherwise. */
        bool to_end = (o.trace || o.jobs) && !o.days_set;
        gw_usec_t horizon = to_end ? 0 : (gw_usec_t) (o.days * (double) GW_SIM_DAY);
        char nodes[48] = "", period[64];
        if (node)
                snprintf(nodes, sizeof(nodes), " (nodes of %d, one plan each)", node);
        if (horizon)
                snprintf(period, sizeof(period), "%g days", o.days);
        else
                snprintf(period, sizeof(period), "until every job ends");
        if (o.trace)
                snprintf(title, sizeof(title), "gpuward-sim: trace %s, %d GPUs%s, %s", o.trace, o.gpus, nodes, period);
        else
                snprintf(title, sizeof(title),
                         "gpuward-sim: %d GPUs%s, %s, workload lab, %zu jobs, seed %llu, load %.2f", o.gpus, nodes,
                         period, w.n, (unsigned long long) o.seed, o.load);
        for (size_t i = 0; i < n_cfg; i++) {
                struct gw_sim_config *c = &cfg[i];
                c->n_gpus = o.gpus;
                c->node_gpus = node;
                c->horizon = horizon;
                c->window = o.window;
                c->seed = o.seed;
                c->quota_gpus = o.quota;
                c->sample = o.sample;
                c->repair = o.repair;
                gw_usec_t span = horizon ? horizon : w.span + GW_SIM_DAY;
                c->bucket = o.svg ? (span / 600 > 10 * GW_SIM_MIN ? span / 600 : 10 * GW_SIM_MIN) : 0;
                if (o.scale)
                        c->clock_ns = clock_ns;
                if (c->reclaim != GW_SIM_RECLAIM_OFF && c->sample == 0) {
                        fprintf(stderr, "gpuward-sim: %s needs --sample > 0\n", c->name);
                        goto out;
                }
                gw_usec_t t0 = clock_ns();
                k = gw_sim_run(&w, c, &res[n_res]);
                if (k < 0) {
                        fprintf(stderr, "gpuward-sim: %s: %s\n", c->name, strerror(-k));
                        goto out;
                }
                wall[n_res++] = (double) (clock_ns() - t0) / 1e9;
        }
        if (o.json) {
                gw_sim_print_json(stdout, title, &shape, res, n_res);
        } else {
                printf("%s\n", title);
                gw_sim_print_shape(stdout, &shape);
                printf("\n");
                gw_sim_print_table(stdout, res, n_res);
                bool fair = false;
                for (size_t i = 0; i < n_res; i++)
                        fair |= cfg[i].fairshare;
                if (fair) /* the per-user table only when asked for a fair-share comparison */
                        gw_sim_print_users(stdout, res, n_res);
                if (preempt || o.high_set)
                        gw_sim_print_preempt(stdout, res, n_res);
                if (o.scale)
                        for (size_t i = 0; i < n_res; i++)
                                print_costs(&res[i], wall[i]);
                else {
                        printf("\nwall time:");
                        for (size_t i = 0; i < n_res; i++)
                                printf(" %s %.2fs", res[i].name, wall[i]);
                        printf("\n");
                }
        }
        if (o.svg && write_file(o.svg, NULL, title, o.gpus, res, n_res) < 0)
                goto out;
        rc = 0;
out:
        for (size_t i = 0; i < n_res; i++)
                gw_sim_result_free(&res[i]);
        gw_sim_workload_free(&w);
        return rc;
}
