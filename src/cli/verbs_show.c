/* gpuward show JOB: one job as "key: value" lines, then its events. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/cleanup.h"
#include "cli/api.h"
#include "cli/format.h"
#include "cli/jobview.h"
#include "cli/trainview.h"
#include "cli/verbs.h"
#include "core/job.h"

static const char show_help[] = "Usage: gpuward show [--json] JOB\n"
                                "\n"
                                "Everything gpuwardd knows about one job: state and why (for a waiting job every\n"
                                "reason it waits for, one line each, under Waits for:), GPUs, limits, times, exit\n"
                                "status, command, directory, log file, GPU telemetry once sampled (mean and 95th\n"
                                "percentile utilisation and peak memory per GPU, GPU-hours so far), the attempts\n"
                                "of a job that was retried (GPUs, times, failure class and the log line that\n"
                                "shows it, the checkpoint each resumed from and the epoch read from it), and\n"
                                "the list of events (every state change with its reason).\n"
                                "A job array (submit --array): its spec, its tasks counted by state, the waiting\n"
                                "ones, and for a training sweep the task with the best mAP50-95; 17_3 shows task 3\n"
                                "as the job it is.\n"
                                "\n"
                                "Options:\n"
                                "  --json       print the API's JSON\n"
                                "  -h, --help   this help\n"
                                "\n"
                                "Examples:\n"
                                "  gpuward show 17\n"
                                "  gpuward show --json 17 | jq .state\n"
                                "  gpuward show --json 17 | jq .telemetry.gpu_hours\n"
                                "  gpuward show --json 17 | jq '.attempts[] | {attempt, class, evidence}'\n";

enum { OPT_JSON = 0x100 };

/* One "Key:  value" line; absent values print as "-", control characters neutralised. */
static void field(const char *key, const char *value) {
        _cleanup_free_ char *safe = cli_sanitize(value && *value ? value : "-");
        printf("%-12s %s\n", key, safe ? safe : "-");
}

static void field_time(const char *key, const json_t *job, const char *name, time_t now) {
        char buf[48];
        field(key, cli_format_time(cli_jnum(job, name), now, buf, sizeof(buf)));
}

static void show_state(const json_t *job) {
        const char *state = cli_jstr(job, "state");
        const char *reason = cli_jstr(job, "reason");
        size_t k = state ? strlen(state) : 0;
        /* Jobs reclaimed by older daemons have reasons that begin with the state's name. */
        if (reason && k && strncmp(reason, state, k) == 0 && reason[k] == ' ')
                reason += k + 1;
        _cleanup_free_ char *line = NULL;
        if (reason && *reason && asprintf(&line, "%s (%s)", state ? state : "-", reason) < 0)
                line = NULL;
        field("State:", line ? line : state);
}

/* A waiting job's reasons, one line each, the one State: shows first ("Quota: max_gpus=1,
 * ..." then "Dependency: after job 7 ends"): every one of them must go before it starts. */
static void show_reasons(const json_t *job) {
        size_t i;
        const json_t *r;
        json_array_foreach (json_object_get(job, "reasons"), i, r) {
                const char *code = cli_jstr(r, "code"), *text = cli_jstr(r, "text");
                _cleanup_free_ char *line = NULL;
                if (asprintf(&line, "%s%s%s", code ? code : "-", text && *text ? ": " : "", text ? text : "") < 0)
                        line = NULL;
                field(i ? "" : "Waits for:", line);
        }
}

static void show_gpus(const json_t *job) {
        long long n = 0, mem = 0;
        char mbuf[32];
        _cleanup_free_ char *list = cli_job_gpu_list(job);
        _cleanup_free_ char *line = NULL;
        if (!cli_jint(job, "ngpus", &n))
                n = (long long) json_array_size(json_object_get(job, "gpus"));
        if (asprintf(&line, "%lld%s%s%s", n, list && strcmp(list, "-") ? " (" : "",
                     list && strcmp(list, "-") ? list : "", list && strcmp(list, "-") ? ")" : "") < 0)
                line = NULL;
        field("GPUs:", line);
        if (cli_jint(job, "gpu_mem", &mem) && mem > 0) {
                _cleanup_free_ char *m = NULL;
                if (asprintf(&m, "%s free per GPU", cli_format_bytes((double) mem, mbuf, sizeof(mbuf))) < 0)
                        m = NULL;
                field("GPU memory:", m);
        }
}

/* "Dataset:    /nfs/coco (ready: /ssd/cache/entries/…/v2/data)"; none shown without one. */
static void show_dataset(const json_t *job) {
        const json_t *ds = json_object_get(job, "dataset");
        const char *path = cli_jstr(ds, "path"), *state = cli_jstr(ds, "state"), *dir = cli_jstr(ds, "dir");
        if (!path)
                return;
        char buf[8400];
        if (state && dir)
                snprintf(buf, sizeof buf, "%s (%s: %s)", path, state, dir);
        else
                snprintf(buf, sizeof buf, "%s%s%s%s", path, state ? " (" : "", state ? state : "", state ? ")" : "");
        field("Dataset:", buf);
}

static void field_int(const char *key, const json_t *job, const char *name) {
        long long v;
        char buf[32];
        if (cli_jint(job, name, &v))
                snprintf(buf, sizeof(buf), "%lld", v);
        else
                snprintf(buf, sizeof(buf), "-");
        field(key, buf);
}

static void show_after(const json_t *job) {
        const json_t *after = json_object_get(job, "after");
        long long id;
        _cleanup_free_ char *line = NULL;
        if (json_is_object(after) && cli_jint(after, "job", &id)) {
                const char *kind = cli_jstr(after, "kind");
                if (asprintf(&line, "%lld:%s", id, kind ? kind : "ok") < 0)
                        line = NULL;
        } else if (json_is_string(after)) {
                line = strdup(json_string_value(after));
        }
        if (line)
                field("After:", line);
}

/* "Retries:", "Resume:" and "Idle policy:": what the job asked for when it fails or idles. */
static void show_policies(const json_t *job) {
        long long n;
        if (cli_jint(job, "retries", &n) && n >= 0) {
                const char *on = cli_jstr(job, "retry_on");
                _cleanup_free_ char *line = NULL;
                if (n == 0)
                        line = strdup("0");
                else if (asprintf(&line, "%lld (on %s)", n, on && *on ? on : "the default classes") < 0)
                        line = NULL;
                field("Retries:", line);
        }
        if (json_is_true(json_object_get(job, "yolo")))
                field("Resume:", "an Ultralytics run: retries resume from its weights/last.pt");
        const char *policy = cli_jstr(job, "idle_policy");
        if (policy && *policy)
                field("Idle policy:", policy);
        const char *leak = cli_jstr(job, "leak_policy");
        if (leak && strcmp(leak, "warn"))
                field("Leak policy:", leak);
        const char *sig = cli_jstr(job, "warn_signal");
        if (sig) {
                char t[32];
                _cleanup_free_ char *line = NULL;
                bool at = json_is_integer(json_object_get(job, "warn_before"));
                if (asprintf(&line, "SIG%s to its main process %s%s", sig,
                             at ? cli_format_secs(cli_jnum(job, "warn_before"), t, sizeof t) : "when gpuwardd warns",
                             at ? " before its end" : " that its end is near") < 0)
                        line = NULL;
                field("Signal:", line);
        }
}

/* What a finished attempt came to, from its failure class. */
static const char *attempt_outcome(const char *cls) {
        static const struct {
                const char *cls, *state;
        } map[] = {
                { "ok", "COMPLETED" },
                { "cancelled", "CANCELLED" },
                { "timeout", "TIMEOUT" },
                { "reclaimed", "RECLAIMED" },
        };
        for (size_t i = 0; cls && i < ELEMENTSOF(map); i++)
                if (strcmp(cls, map[i].cls) == 0)
                        return map[i].state;
        return "FAILED";
}

/* Attempt lines are composed in a memstream, then printed neutralised: evidence is text
 * from a log. */
static bool line_begin(struct cli_text *l) { return cli_text_open(l) == 0; }

static void line_end(struct cli_text *l) {
        _cleanup_free_ char *text = cli_text_take(l, true);
        _cleanup_free_ char *safe = text ? cli_sanitize(text) : NULL;
        if (safe)
                printf("%s\n", safe);
}

/* "GPUs 2,3  13:00:01-16:41:07" */
static void put_run(FILE *f, const json_t *o, double start, double end, time_t now) {
        char a[48], b[48];
        _cleanup_free_ char *gpus = cli_job_gpu_list(o);
        fprintf(f, "GPUs %s  %s-%s", gpus ? gpus : "-", cli_format_time(start, now, a, sizeof(a)),
                isfinite(end) && end > 0 ? cli_format_time(end, now, b, sizeof(b)) : "");
}

/* The column under an attempt line's text ("  attempt 12  "). */
static int attempt_indent(long long k) {
        char num[32];
        return 2 + (int) strlen("attempt ") + snprintf(num, sizeof(num), "%lld", k) + 2;
}

/* What the daemon saw of an attempt offered a checkpoint, from its "resumed" or
 * "started_over" event (written at the attempt's first epoch) between start and end: the
 * kind, or NULL when it wrote no epoch (or is not a training the daemon follows). */
static const char *resume_seen(const json_t *job, double start, double end) {
        const json_t *events = json_object_get(job, "events"), *ev;
        size_t i;
        const char *kind = NULL;
        json_array_foreach (events, i, ev) {
                const char *k = cli_jstr(ev, "kind");
                double t = cli_jnum(ev, "time");
                if (k && (!strcmp(k, "resumed") || !strcmp(k, "started_over")) && isfinite(t) && t >= start &&
                    !(isfinite(end) && t > end))
                        kind = k;
        }
        return kind;
}

/* Under an attempt line: the checkpoint it started from and the epoch that checkpoint holds,
 * as the daemon read it from the file (ckpt_epoch, resume_epoch; not what the attempt before
 * reached, which may be more: killed between a results.csv row and its checkpoint).
 * "resumed from CKPT (epoch 3)" only when the daemon saw the attempt continue from it. */
static void put_resumed(long long k, bool waiting, const char *seen, const char *path, const json_t *o,
                        const char *epoch_key) {
        struct cli_text l;
        if (!path || !*path || !line_begin(&l))
                return;
        const char *verb = waiting ? "will resume from" : seen && !strcmp(seen, "resumed") ? "resumed from" : "offered";
        fprintf(l.f, "%*s%s %s", attempt_indent(k), "", verb, path);
        long long e = 0;
        if (cli_jint(o, epoch_key, &e) && e > 0)
                fprintf(l.f, " (epoch %lld)", e);
        else
                fputs(" (epoch not read from the checkpoint)", l.f);
        if (!waiting && seen && !strcmp(seen, "started_over"))
                fputs(": started over instead (the started_over event says why)", l.f);
        else if (!waiting && !seen)
                fputs(": no epoch of it seen, so not known to have resumed", l.f);
        line_end(&l);
}

/* Where a cluster's attempt ran: "on NODE as Slurm job N". */
static void put_where(const json_t *a, long long k) {
        long long sid = 0;
        const char *node = cli_jstr(a, "node");
        struct cli_text l;
        if (!cli_jint(a, "slurm_job", &sid) || !line_begin(&l))
                return;
        fprintf(l.f, "%*sran on %s as Slurm job %lld", attempt_indent(k), "", node && *node ? node : "(no node yet)",
                sid);
        line_end(&l);
}

/* A finished attempt; outcome is how it ended. */
static void put_finished(const json_t *job, const json_t *a, long long k, const char *outcome, time_t now) {
        const char *cls = cli_jstr(a, "class");
        const char *evidence = cli_jstr(a, "evidence");
        struct cli_text l;
        if (!line_begin(&l))
                return;
        fprintf(l.f, "  attempt %lld  ", k);
        put_run(l.f, a, cli_jnum(a, "start_time"), cli_jnum(a, "end_time"), now);
        fprintf(l.f, "  %s", outcome);
        if (cls && *cls && strcmp(cls, "ok") && strcasecmp(cls, outcome))
                fprintf(l.f, " %s", cls);
        /* The log line that shows why it failed; a success needs none. */
        if (evidence && *evidence && !(cls && strcmp(cls, "ok") == 0))
                fprintf(l.f, "  \"%s\"", evidence);
        line_end(&l);
        put_where(a, k);
        put_resumed(k, false, resume_seen(job, cli_jnum(a, "start_time"), cli_jnum(a, "end_time")),
                    cli_jstr(a, "resumed_from"), a, "ckpt_epoch");
}

/* The attempt being made now, when it is not among the finished ones. */
static void put_current(const json_t *job, long long k, double prev_end, time_t now) {
        const char *state = cli_jstr(job, "state");
        const char *reason = cli_jstr(job, "reason");
        enum gw_job_state st = gw_job_state_from_name(state ? state : "");
        bool waiting = cli_job_waiting(job);
        struct cli_text l;
        if (!line_begin(&l))
                return;
        fprintf(l.f, "  attempt %lld  ", k);
        if (waiting) {
                char until[48];
                double nb = cli_jnum(job, "not_before");
                fprintf(l.f, "waiting (%s", reason && *reason ? reason : "-");
                if (reason && strcmp(reason, "Backoff") == 0 && isfinite(nb) && nb > 0)
                        fprintf(l.f, " until %s", cli_format_time(nb, now, until, sizeof(until)));
                fputc(')', l.f);
        } else {
                /* Until it starts, the job's times are still those of the attempt before. */
                double start = cli_jnum(job, "start_time");
                if (isfinite(start) && start > 0 && !(isfinite(prev_end) && start < prev_end)) {
                        bool final = st >= 0 && gw_job_state_is_final(st);
                        put_run(l.f, job, start, final ? cli_jnum(job, "end_time") : NAN, now);
                        fputs("  ", l.f);
                }
                fputs(state ? state : "-", l.f);
        }
        line_end(&l);
        put_resumed(k, waiting, waiting ? NULL : resume_seen(job, cli_jnum(job, "start_time"), NAN),
                    cli_jstr(job, "resume_from"), job, "resume_epoch");
}

/* "Attempts:", one line per finished attempt and one for the current attempt, once a job
 * has more than one or has finished one. */
static void show_attempts(const json_t *job, time_t now) {
        const json_t *list = json_object_get(job, "attempts");
        long long cur = 0;
        (void) cli_jint(job, "attempt", &cur);
        if (json_array_size(list) == 0 && cur <= 1)
                return;
        const char *state = cli_jstr(job, "state");
        enum gw_job_state st = gw_job_state_from_name(state ? state : "");
        bool final = st >= 0 && gw_job_state_is_final(st);
        long long last = 0;
        double prev_end = NAN;
        printf("\nAttempts:\n");
        size_t i;
        const json_t *a;
        json_array_foreach (list, i, a) {
                long long k = 0;
                (void) cli_jint(a, "attempt", &k);
                /* The job's own state tells best how its last attempt ended. */
                put_finished(job, a, k, final && k == cur && state ? state : attempt_outcome(cli_jstr(a, "class")),
                             now);
                prev_end = cli_jnum(a, "end_time");
                last = k > last ? k : last;
        }
        if (cur > last)
                put_current(job, cur, prev_end, now);
}

static void show_events(const json_t *job, time_t now) {
        const json_t *events = json_object_get(job, "events");
        if (!json_is_array(events) || json_array_size(events) == 0)
                return;
        static const char *const cols[] = { "TIME", "STATE", "KIND", "MESSAGE" };
        struct cli_table *t = cli_table_new(cols, 4);
        if (!t)
                return;
        size_t i;
        const json_t *ev;
        json_array_foreach (events, i, ev) {
                char tbuf[48];
                const char *cells[] = {
                        cli_format_time(cli_jnum(ev, "time"), now, tbuf, sizeof(tbuf)),
                        cli_jstr(ev, "state"),
                        cli_jstr(ev, "kind"),
                        cli_jstr(ev, "message"),
                };
                if (cli_table_add(t, cells) < 0)
                        break;
        }
        printf("\nEvents:\n");
        cli_table_print(t, stdout);
        cli_table_free(t);
}

/* Utilisation as a whole percent, rounded down: "mean 71%" for 71.5 never claims more
 * than the GPU did. */
static char *format_util(double v, char *buf, size_t n) {
        if (isfinite(v) && v >= 0)
                snprintf(buf, n, "%.0f%%", floor(v));
        else
                snprintf(buf, n, "-");
        return buf;
}

/* "Telemetry:" with a line per GPU and the GPU-hours; nothing before the first sample.  A job
 * on MIG slices has no utilisation: its figure is GPM's SM activity, and says so. */
static void show_telemetry(const json_t *job) {
        const json_t *tel = json_object_get(job, "telemetry");
        if (!json_is_object(tel))
                return;
        const char *what = json_is_object(json_object_get(job, "mig")) ? "GPM SM activity" : "util";
        printf("\nTelemetry:\n");
        size_t i;
        const json_t *g;
        json_array_foreach (json_object_get(tel, "gpus"), i, g) {
                char idx[32], mean[32], p95[32], peak[32];
                long long v;
                if (cli_jint(g, "index", &v))
                        snprintf(idx, sizeof(idx), "%lld", v);
                else
                        snprintf(idx, sizeof(idx), "?");
                printf("  GPU %s: %s mean %s p95 %s, peak memory %s\n", idx, what,
                       format_util(cli_jnum(g, "util_mean"), mean, sizeof(mean)),
                       format_util(cli_jnum(g, "util_p95"), p95, sizeof(p95)),
                       cli_format_bytes(cli_jnum(g, "mem_peak"), peak, sizeof(peak)));
        }
        double hours = cli_jnum(tel, "gpu_hours");
        if (isfinite(hours) && hours >= 0)
                printf("  GPU-hours: %.2f\n", hours);
        else
                printf("  GPU-hours: -\n");
}

/* A job array: its spec, its tasks counted by state, the waiting ones folded; a task: which
 * array's.  "Tasks: 50: 45 PENDING, 4 RUNNING, 1 COMPLETED". */
static void show_array(const json_t *job) {
        long long v, index;
        if (cli_jint(job, "array_job_id", &v) && cli_jint(job, "array_index", &index)) {
                char task[64];
                snprintf(task, sizeof task, "%lld_%lld (task %lld of array %lld)", v, index, index, v);
                field("Task:", task);
                return;
        }
        const char *spec = cli_jstr(job, "array");
        const json_t *tasks = json_object_get(job, "array_tasks");
        if (!spec)
                return;
        field("Array:", spec);
        char line[512];
        int k = snprintf(line, sizeof line, "%lld", cli_jint(tasks, "total", &v) ? v : 0);
        static const char *const states[] = { "PENDING", "HELD",      "RUNNING", "COMPLETED",
                                              "FAILED",  "CANCELLED", "TIMEOUT", "RECLAIMED" };
        const char *sep = ": ";
        for (size_t i = 0; i < ELEMENTSOF(states) && k > 0 && (size_t) k < sizeof line; i++)
                if (cli_jint(tasks, states[i], &v) && v > 0) {
                        k += snprintf(line + k, sizeof line - (size_t) k, "%s%lld %s", sep, v, states[i]);
                        sep = ", ";
                }
        field("Tasks:", line);
        if (cli_jstr(job, "array_waiting"))
                field("Waiting:", cli_jstr(job, "array_waiting"));
        const json_t *best = json_object_get(job, "array_best");
        long long epoch;
        long long id = 0;
        (void) cli_jint(job, "id", &id);
        if (json_is_object(best) && cli_jint(best, "index", &index) && cli_jint(best, "epoch", &epoch)) {
                snprintf(line, sizeof line, "%s %.4f: task %lld_%lld, epoch %lld",
                         cli_jstr(best, "metric") ? cli_jstr(best, "metric") : "?", cli_jnum(best, "value"), id, index,
                         epoch);
                field("Best:", line);
        }
}

/* The slice uuid in the GPU list of reply, with its GPU's index in *ret_gpu; NULL none. */
static const json_t *find_slice(const json_t *reply, const char *uuid, long long *ret_gpu) {
        const json_t *g, *m;
        size_t i, k;
        json_array_foreach (json_object_get(reply, "gpus"), i, g)
                json_array_foreach (json_object_get(g, "mig"), k, m) {
                        const char *u = cli_jstr(m, "uuid");
                        if (u && !strcmp(u, uuid))
                                return cli_jint(g, "index", ret_gpu) ? m : NULL;
                }
        return NULL;
}

/* A job on MIG slices: one line per slice it got, "MIG-...  1g.10gb on GPU 0 (1/7 of it),
 * 1.0 GiB / 10.0 GiB", the figures read from the GPU list while the slice is the job's (a
 * slice given to another job since is not this one's to describe). */
static void show_slices(const struct cli_ctx *ctx, const json_t *job) {
        const json_t *slices = json_object_get(job, "slices"), *mig = json_object_get(job, "mig");
        if (!json_is_object(mig))
                return;
        long long count = 0, id = 0, gpu = 0, n = 0;
        (void) cli_jint(mig, "count", &count);
        (void) cli_jint(job, "id", &id);
        char asked[96];
        snprintf(asked, sizeof asked, "%lld x %s", count, cli_jstr(mig, "profile") ? cli_jstr(mig, "profile") : "?");
        field("MIG slices:", asked);
        if (!json_array_size(slices))
                return;
        struct cli_call call = { .method = "GET", .target = "/api/v1/gpus" };
        json_t *reply = NULL;
        if (cli_api_json(ctx, &call, &reply) != 0)
                reply = NULL;
        size_t i;
        const json_t *u;
        json_array_foreach (slices, i, u) {
                const char *uuid = json_string_value(u);
                const json_t *m = uuid && reply ? find_slice(reply, uuid, &gpu) : NULL;
                _cleanup_free_ char *line = NULL;
                char used[32], total[32];
                double share = m ? cli_jnum(m, "share") : NAN;
                if (m && cli_jint(m, "job", &n) && n == id && cli_jint(m, "slices", &count) && isfinite(share) &&
                    share > 0) {
                        if (asprintf(&line, "%s  %s on GPU %lld (%lld/%lld of it), %s / %s", uuid,
                                     cli_jstr(m, "profile"), gpu, count, llround((double) count / share),
                                     cli_format_bytes(cli_jnum(m, "mem_used"), used, sizeof used),
                                     cli_format_bytes(cli_jnum(m, "mem_total"), total, sizeof total)) < 0)
                                line = NULL;
                } else if (asprintf(&line, "%s", uuid ? uuid : "?") < 0)
                        line = NULL;
                field(i ? "" : "Slices:", line);
        }
        json_decref(reply);
}

static void show_job(const struct cli_ctx *ctx, const json_t *job) {
        time_t now = time(NULL);
        char buf[48], ubuf[32];
        _cleanup_free_ char *cmd = cli_job_command_line(job);

        field_int("Job:", job, "id");
        field("Name:", cli_jstr(job, "name"));
        field("User:", cli_job_user(job, ubuf, sizeof(ubuf)));
        show_state(job);
        show_reasons(job);
        show_array(job);
        show_gpus(job);
        show_slices(ctx, job);
        field_int("Priority:", job, "priority");
        if (cli_jstr(job, "priority_why")) /* queued: how the queue orders it, fair share's factor */
                field("Queue order:", cli_jstr(job, "priority_why"));
        field("Time limit:", cli_format_secs(cli_jnum(job, "time_limit"), buf, sizeof(buf)));
        field_time("Submitted:", job, "submit_time", now);
        /* Waiting to be retried, the job still carries its last attempt's times: the
         * attempts list shows them. */
        if (cli_job_waiting(job)) {
                field("Started:", NULL);
                field("Ended:", NULL);
        } else {
                field_time("Started:", job, "start_time", now);
                field_time("Ended:", job, "end_time", now);
        }
        field("Elapsed:", cli_job_elapsed(job, now, buf, sizeof(buf)));
        field("Exit:", cli_job_exit(job, buf, sizeof(buf)));
        show_after(job);
        field_int("Attempt:", job, "attempt");
        show_policies(job);
        field_int("PID:", job, "pid");
        field("Command:", cmd);
        field("Directory:", cli_jstr(job, "cwd"));
        field("Log:", cli_jstr(job, "log_path"));
        show_dataset(job);
        show_attempts(job, now);
        cli_show_training(job, now); /* epoch, ETA, leak, snapshots */
        show_telemetry(job);
        show_events(job, now);
}

static int print_job(const json_t *job, void *userdata) {
        show_job(userdata, job);
        return CLI_EXIT_OK;
}

int cli_verb_show(struct cli_ctx *ctx, int argc, char **argv) {
        static const struct cli_options spec = { .verb = "show", .help = show_help };
        bool json;
        long long id;
        int early = cli_parse_one_job(ctx, &spec, argc, argv, &json, &id);
        if (early >= 0)
                return early;

        char target[64], ref[32];
        snprintf(target, sizeof(target), "/api/v1/jobs/%s", cli_job_ref(id, ref, sizeof ref));
        struct cli_call call = { .method = "GET", .target = target };
        return cli_call_and_show(ctx, &call, json, print_job, ctx);
}
