/* gpuward queue and gpuward history: job lists as tables. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "cli/api.h"
#include "cli/arena.h"
#include "cli/format.h"
#include "cli/jsonfast.h"
#include "cli/jobview.h"
#include "cli/trainview.h"
#include "core/jobarray.h"
#include "cli/verbs.h"

#define NAME_MAX_COLS 24
#define FINAL_STATES "COMPLETED,FAILED,CANCELLED,TIMEOUT,RECLAIMED"
#define ALL_STATES "PENDING,HELD,RUNNING," FINAL_STATES

static const char queue_help[] = "Usage: gpuward queue [--user USER | --me] [--state STATES] [--all] [--array]\n"
                                 "                     [--json]\n"
                                 "\n"
                                 "List the jobs that are waiting or running, in queue order: running jobs first,\n"
                                 "then waiting ones in the order they will start, held ones last.  The last column\n"
                                 "shows the GPUs a running job holds, or why a waiting job waits (on a Slurm\n"
                                 "cluster a NODE column follows: the node Slurm runs the job on):\n"
                                 "  (Resources)   not enough free GPUs        (Dependency)  waits for --after\n"
                                 "  (Drained)     it needs a GPU out of service (drained or unhealthy) back\n"
                                 "  (Held)        held; 'gpuward release'     (Priority)    others go first\n"
                                 "  (Backoff)     a retry, after its delay    (Quota)       its user is at a limit\n"
                                 "  (Reservation) its booking has not begun, or the free GPUs are booked before\n"
                                 "                its --time would end\n"
                                 "  (Quota: max_gpus=1, 1 in use by job 24) the limit, and the job holding it\n"
                                 "  (JobArrayTaskLimit) an array runs as many tasks as its %N allows\n"
                                 "  (Preempted: by job 12 (alice, priority 5); waits first of priority 0 for free\n"
                                 "                GPUs) it gave way to that job or booking and starts again\n"
                                 "                before others of its priority\n"
                                 "  0,1 (stopping) a running job cancelled or stopped whose processes are ending;\n"
                                 "                'gpuward show' says why\n"
                                 "A waiting job held back by more than one thing shows the first and how many\n"
                                 "more, (Quota: max_gpus=1, 1 in use by job 24 +1); 'gpuward show' lists them all.\n"
                                 "The ETA column says 'overdue' when a run's current epoch is well past its usual\n"
                                 "length (a hung run most often) instead of an ETA that no longer moves.\n"
                                 "PRIO: a waiting job's place, its priority and its user's fair-share factor\n"
                                 "(0.42; 5/0.42 with a priority of 5): the queue goes by priority, then by that\n"
                                 "factor (whoever used the GPUs least lately first), then submission; 'gpuward\n"
                                 "show' says why.\n"
                                 "A job array (submit --array) shows its waiting tasks on one row, as Slurm does:\n"
                                 "17_[5-49] (17_[5-49%4] when at most 4 run at once), and each running task on a\n"
                                 "row of its own (17_3); --array lists every waiting task on its own row.\n"
                                 "\n"
                                 "Options:\n"
                                 "  --user USER     only USER's jobs\n"
                                 "  --me            only my jobs\n"
                                 "  --state STATES  only jobs in these states, comma-separated\n"
                                 "                  (PENDING, HELD, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT,\n"
                                 "                  RECLAIMED)\n"
                                 "  --all           jobs in every state, finished ones included\n"
                                 "  -r, --array     one row per task of a job array, waiting ones too\n"
                                 "  --json          print the API's JSON\n"
                                 "  -h, --help      this help\n"
                                 "\n"
                                 "Examples:\n"
                                 "  gpuward queue\n"
                                 "  gpuward queue --me --state PENDING\n"
                                 "  gpuward --json queue | jq '.jobs[].id'\n";

static const char history_help[] = "Usage: gpuward history [--user USER | --me] [--limit N] [--json]\n"
                                   "\n"
                                   "List finished jobs (COMPLETED, FAILED, CANCELLED, TIMEOUT, RECLAIMED) by the time\n"
                                   "they ended, as sacct lists them: the oldest end first, the newest last.  --limit\n"
                                   "takes the N jobs submitted last.\n"
                                   "EXIT is the exit status, or 'sig N' when a signal ended the job.\n"
                                   "\n"
                                   "Options:\n"
                                   "  --user USER   only USER's jobs\n"
                                   "  --me          only my jobs\n"
                                   "  --limit N     at most N jobs (default 100, at most 10000)\n"
                                   "  --json        print the API's JSON (newest job first, as the API orders them)\n"
                                   "  -h, --help    this help\n"
                                   "\n"
                                   "Examples:\n"
                                   "  gpuward history\n"
                                   "  gpuward history --me --limit 10\n";

enum { OPT_USER = 0x100, OPT_ME, OPT_STATE, OPT_ALL, OPT_LIMIT, OPT_JSON };

struct list_opts {
        const char *user;
        bool me, all, json, help, expand;
        const char *state;
        long long limit;
};

static const struct option list_options[] = {
        { "user", required_argument, NULL, OPT_USER },
        { "me", no_argument, NULL, OPT_ME },
        { "state", required_argument, NULL, OPT_STATE },
        { "all", no_argument, NULL, OPT_ALL },
        { "limit", required_argument, NULL, OPT_LIMIT },
        { "json", no_argument, NULL, OPT_JSON },
        { "array", no_argument, NULL, 'r' },
        { "help", no_argument, NULL, 'h' },
        CLI_SOCKET_OPTION,
        { 0 },
};

/* Shared by queue and history; is_queue says which of the list-specific options apply. */
static int parse_list_opts(struct cli_ctx *ctx, const char *verb, int argc, char **argv, bool is_queue,
                           struct list_opts *o) {
        int c, r;
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+:hr", list_options, NULL)) != -1) {
                switch (c) {
                case OPT_USER:
                        if (!*optarg)
                                return cli_usage(verb, "--user: the user name is empty");
                        o->user = optarg;
                        break;
                case OPT_ME:
                        o->me = true;
                        break;
                case OPT_STATE:
                case OPT_ALL:
                        if (!is_queue)
                                return cli_usage(verb, "unknown option '--%s'", c == OPT_ALL ? "all" : "state");
                        if (c == OPT_ALL)
                                o->all = true;
                        else
                                o->state = optarg;
                        break;
                case OPT_LIMIT:
                        if (is_queue)
                                return cli_usage(verb, "unknown option '--limit'");
                        if (gw_parse_int(optarg, 1, 10000, &o->limit) < 0)
                                return cli_usage(verb, "--limit: '%s' is not a number from 1 to 10000", optarg);
                        break;
                case OPT_JSON:
                        o->json = true;
                        break;
                case 'h':
                        o->help = true;
                        break;
                case 'r':
                        if (!is_queue)
                                return cli_usage(verb, "unknown option '--array'");
                        o->expand = true;
                        break;
                case CLI_OPT_SOCKET:
                        if ((r = cli_take_socket(ctx, verb, optarg)) != 0)
                                return r;
                        break;
                default:
                        return cli_bad_option_in(verb, argv, optind, c, optopt, list_options);
                }
        }
        if (optind < argc)
                return cli_usage(verb, "unexpected argument '%s'", argv[optind]);
        if (o->me && o->user)
                return cli_usage(verb, "--user and --me exclude each other");
        if (o->all && o->state)
                return cli_usage(verb, "--state and --all exclude each other");
        return 0;
}

/* The API target for a list; user filters by name. */
static int list_target(const struct list_opts *o, const char *verb, const char *states, bool is_queue, bool json,
                       char **ret) {
        _cleanup_free_ char *target = strdup("/api/v1/jobs");
        _cleanup_free_ char *me = o->me ? cli_self_uid() : NULL;
        char limit[32];
        snprintf(limit, sizeof(limit), "%lld", o->limit);
        if (!target || (o->me && !me) || (states && cli_query_add(&target, "state", states) < 0) ||
            (me && cli_query_add(&target, "uid", me) < 0) || (o->user && cli_query_add(&target, "user", o->user) < 0) ||
            (o->limit > 0 && cli_query_add(&target, "limit", limit) < 0) ||
            /* Tables need a few fields: asking only for those keeps long queues fast. */
            (!json &&
             cli_query_add(&target, "fields",
                           is_queue ? "id,name,user,state,reason,ngpus,gpus,start_time,end_time,time_limit,"
                                      "eta,eta_overdue,predicted_start,latest_start,priority,fairshare,"
                                      "array,array_waiting,array_job_id,array_index,node,predicted_wait,reasons"
                                    : "id,name,user,state,exit_code,signal,start_time,end_time,"
                                      "array_job_id,array_index") < 0) ||
            (!json && cli_query_add(&target, "layout", "rows") < 0)) {
                cli_error("%s: out of memory", verb);
                return CLI_EXIT_FAIL;
        }
        *ret = TAKE_PTR(target);
        return 0;
}

/* The reply's jobs: objects under "jobs", or (layout=rows) arrays under "rows" whose names
 * are under "fields" (n_fields is 0 for objects).  A rows reply is read a row at a time
 * (rows): each row is made where the last was in the JSON arena (mark), so that 10,000 rows
 * take the memory of one; any other reply is read whole (reply, items).  Each row's values
 * are set into one reused object (scratch), a job object as the rest of the CLI reads them,
 * whose entries are found once (iter[k] is field k's): replacing the last row's values
 * allocates nothing and hashes no name. */
struct job_list {
        json_t *reply;
        const json_t *items;
        struct cli_json_rows rows;
        const json_t *fields;
        size_t n_fields, next;
        json_t *scratch;
        void **iter;
        struct cli_json_arena_mark mark;
};

/* The object with every field's name (null for now) and where each is in it, made before the
 * arena's mark: a row's values only replace values, the object takes no new name, its
 * entries stay where they are. */
static int scratch_init(struct job_list *l) {
        l->scratch = json_object();
        l->iter = calloc(l->n_fields ? l->n_fields : 1, sizeof(void *));
        if (!l->scratch || !l->iter)
                return -ENOMEM;
        for (size_t k = 0; k < l->n_fields; k++) {
                const char *name = json_string_value(json_array_get(l->fields, k));
                if (name && json_object_set_new(l->scratch, name, json_null()) < 0)
                        return -ENOMEM;
        }
        for (size_t k = 0; k < l->n_fields; k++) {
                const char *name = json_string_value(json_array_get(l->fields, k));
                l->iter[k] = name ? json_object_iter_at(l->scratch, name) : NULL;
        }
        return 0;
}

/* Its JSON values are not released one by one: they are the arena's, whose end gives back
 * all of them at once (walking 200,000 values to free them was a tenth of a long queue). */
static void job_list_done(struct job_list *l) {
        free(l->iter);
        *l = (struct job_list){ 0 };
}

/* The jobs of resp, a row at a time when it is a rows reply and whole is false. */
static int job_list_open(struct job_list *l, const struct cli_call *call, const struct cli_http_response *resp,
                         bool whole) {
        *l = (struct job_list){ 0 };
        if (!whole && cli_json_rows_open(&l->rows, resp->body, resp->body_len) == 0) {
                l->fields = l->rows.fields;
                l->n_fields = json_array_size(l->fields);
                if (scratch_init(l) < 0 || cli_json_arena_mark(&l->mark) < 0) {
                        job_list_done(l);
                        return -ENOMEM;
                }
                return 0;
        }
        int r = cli_api_decode(call, resp, &l->reply);
        if (r)
                return r;
        l->items = json_object_get(l->reply, "jobs");
        if (!l->items && json_is_array(json_object_get(l->reply, "rows"))) {
                l->items = json_object_get(l->reply, "rows");
                l->fields = json_object_get(l->reply, "fields");
                l->n_fields = json_array_size(l->fields);
        }
        if (!json_is_array(l->items) || (l->fields && !json_is_array(l->fields))) {
                cli_error("gpuwardd's job list has no \"jobs\" array");
                job_list_done(l);
                return CLI_EXIT_FAIL;
        }
        if (l->n_fields && scratch_init(l) < 0) {
                job_list_done(l);
                return -ENOMEM;
        }
        return 0;
}

/* item as a job object: itself, or its row's values in the scratch object. */
static const json_t *job_of(struct job_list *l, const json_t *item) {
        if (!l->n_fields)
                return item;
        for (size_t k = 0; k < l->n_fields; k++) {
                json_t *v = json_array_get(item, k);
                if (l->iter[k])
                        (void) json_object_iter_set(l->scratch, l->iter[k], v ? v : json_null());
        }
        return l->scratch;
}

/* Before a row is read in the last one's memory: nothing may hold the last one's values.
 * The rows themselves are not released value by value: their memory is made again. */
static void forget_row(struct job_list *l) {
        for (size_t k = 0; k < l->n_fields; k++)
                if (l->iter[k])
                        (void) json_object_iter_set(l->scratch, l->iter[k], json_null());
        cli_json_arena_release(&l->mark);
}

/* The next job: 1 with *ret_job (valid until the next call) and *ret_at, its place for
 * job_at; 0 after the last; -EBADMSG where a row reply is not JSON. */
static int job_next(struct job_list *l, const json_t **ret_job, size_t *ret_at) {
        if (l->items) {
                if (l->next >= json_array_size(l->items))
                        return 0;
                *ret_at = l->next;
                *ret_job = job_of(l, json_array_get(l->items, l->next++));
                return 1;
        }
        json_t *row;
        forget_row(l);
        int r = cli_json_rows_next(&l->rows, &row, ret_at);
        if (r > 0)
                *ret_job = job_of(l, row);
        return r;
}

/* The job at at (from job_next) again, valid until the next call; NULL where not JSON. */
static const json_t *job_at(struct job_list *l, size_t at) {
        if (l->items)
                return job_of(l, json_array_get(l->items, at));
        forget_row(l);
        json_t *row = cli_json_rows_at(&l->rows, at);
        return row ? job_of(l, row) : NULL;
}

/* The queue's last column: where a running job runs ("0,1", "0,1 (stopping)" while a stop
 * is under way: the reason says why), or why a waiting one waits, "+1" when it waits for
 * more than that (`gpuward show` lists them). */
static char *where_or_why(const json_t *job) {
        const char *state = cli_jstr(job, "state");
        const char *reason = cli_jstr(job, "reason");
        if (state && strcmp(state, "RUNNING") == 0) {
                char *gpus = cli_job_gpu_list(job), *out = NULL;
                if (!gpus || !reason || strncmp(reason, "stopping", 8) != 0)
                        return gpus;
                if (asprintf(&out, "%s (stopping)", gpus) < 0)
                        out = NULL;
                free(gpus);
                return out;
        }
        char *out = NULL, more[32] = "";
        size_t n = json_array_size(json_object_get(job, "reasons"));
        if (n > 1)
                snprintf(more, sizeof more, " +%zu", n - 1);
        if (asprintf(&out, "(%s%s)", reason && *reason ? reason : "-", more) < 0)
                return NULL;
        return out;
}

/* PRIO: what orders a queued job, priority then its user's fair-share factor ("0.42"; "5/0.42"
 * with a priority; the priority alone with fair share off); "-" for a running job. */
static const char *prio_cell(const json_t *job, char *buf, size_t size) {
        long long prio = 0;
        double fs = cli_jnum(job, "fairshare");
        const char *state = cli_jstr(job, "state");
        if (!state || (strcmp(state, "PENDING") && strcmp(state, "HELD")))
                return "-";
        (void) cli_jint(job, "priority", &prio);
        if (!isfinite(fs))
                snprintf(buf, size, "%lld", prio);
        else if (prio)
                snprintf(buf, size, "%lld/%.2f", prio, fs);
        else
                snprintf(buf, size, "%.2f", fs);
        return buf;
}

/* The ID cell: "17", or "17_3" for a task of array 17. */
static const char *id_cell(const json_t *job, char *buf, size_t size) {
        long long v, array, index;
        if (cli_jint(job, "array_job_id", &array) && cli_jint(job, "array_index", &index))
                snprintf(buf, size, "%lld_%lld", array, index);
        else
                snprintf(buf, size, "%lld", cli_jint(job, "id", &v) ? v : 0);
        return buf;
}

static int add_queue_row_as(struct cli_table *t, const json_t *job, time_t now, const char *id_text);

/* A job array still in the queue: its waiting tasks folded on one row ("17_[5-49%4]"), or one
 * row each with --array; none once they all started (the tasks have their own rows). */
static int add_array_rows(struct cli_table *t, const json_t *job, time_t now, bool expand) {
        const char *folded = cli_jstr(job, "array_waiting");
        if (!folded)
                return 0;
        const char *open = strchr(folded, '[');
        if (!expand || !open)
                return add_queue_row_as(t, job, now, folded);
        _cleanup_free_ char *spec = strndup(open + 1, strcspn(open + 1, "%]"));
        struct gw_array a;
        char msg[GW_ARRAY_MSG_SIZE];
        if (!spec || gw_array_parse(spec, "array_waiting", &a, msg, sizeof msg) < 0)
                return add_queue_row_as(t, job, now, folded);
        int r = 0;
        for (size_t i = 0; i < a.n && r >= 0; i++) {
                char id[48];
                snprintf(id, sizeof id, "%.*s%u", (int) (open - folded), folded, a.ids[i]);
                r = add_queue_row_as(t, job, now, id);
        }
        gw_array_done(&a);
        return r;
}

static int add_queue_row(struct cli_table *t, const json_t *job, time_t now, bool expand) {
        const char *state = cli_jstr(job, "state");
        bool queued = state && (!strcmp(state, "PENDING") || !strcmp(state, "HELD"));
        if (cli_jstr(job, "array") && queued)
                return add_array_rows(t, job, now, expand);
        char id[48];
        return add_queue_row_as(t, job, now, id_cell(job, id, sizeof id));
}

static int add_queue_row_as(struct cli_table *t, const json_t *job, time_t now, const char *id) {
        char ngpus[32], elapsed[32], limit[32], ubuf[32], eta[32], start[40], prio[48];
        long long v;
        if (cli_jint(job, "ngpus", &v))
                snprintf(ngpus, sizeof(ngpus), "%lld", v);
        else
                snprintf(ngpus, sizeof(ngpus), "%zu", json_array_size(json_object_get(job, "gpus")));
        _cleanup_free_ char *last = where_or_why(job);
        const char *cells[] = {
                id, cli_jstr(job, "name"), cli_job_user(job, ubuf, sizeof(ubuf)), cli_jstr(job, "state"),
                prio_cell(job, prio, sizeof(prio)), ngpus, cli_job_elapsed(job, now, elapsed, sizeof(elapsed)),
                cli_format_secs(cli_jnum(job, "time_limit"), limit, sizeof(limit)),
                cli_format_start_cell(job, now, start, sizeof(start)), /* predicted for pending */
                /* the estimated end; "overdue" once the run is past it (hung), not a frozen "18s" */
                isfinite(cli_jnum(job, "eta_overdue")) ? "overdue"
                                                       : cli_format_eta(cli_jnum(job, "eta"), now, eta, sizeof(eta)),
                last, cli_jstr(job, "node"), /* read only when the table has a NODE column */
        };
        return cli_table_add(t, cells);
}

static int add_history_row(struct cli_table *t, const json_t *job, time_t now) {
        char id[48], ex[32], start[32], end[32], elapsed[32], ubuf[32];
        id_cell(job, id, sizeof id);
        const char *cells[] = {
                id,
                cli_jstr(job, "name"),
                cli_job_user(job, ubuf, sizeof(ubuf)),
                cli_jstr(job, "state"),
                cli_job_exit(job, ex, sizeof(ex)),
                cli_format_time(cli_jnum(job, "start_time"), now, start, sizeof(start)),
                cli_format_time(cli_jnum(job, "end_time"), now, end, sizeof(end)),
                cli_job_elapsed(job, now, elapsed, sizeof(elapsed)),
        };
        return cli_table_add(t, cells);
}

struct end_key {
        double end;
        long long id;
        size_t at;
};

static int by_end(const void *a, const void *b) {
        const struct end_key *x = a, *y = b;
        if (x->end != y->end)
                return x->end < y->end ? -1 : 1;
        return (x->id > y->id) - (x->id < y->id);
}

/* History's rows in the order they ended (sacct's): the API gives them newest id first, and a
 * long job ends after shorter ones submitted behind it.  0 with *ret_order (their places for
 * job_at, malloc'ed) and *ret_n, or -errno. */
static int end_order(struct job_list *jobs, size_t **ret_order, size_t *ret_n) {
        _cleanup_free_ struct end_key *keys = NULL;
        size_t n = 0, cap = 0, at;
        const json_t *job;
        int r;
        while ((r = job_next(jobs, &job, &at)) > 0) {
                if (n == cap) {
                        cap = cap ? cap * 2 : 64;
                        struct end_key *k = realloc(keys, cap * sizeof *keys);
                        if (!k)
                                return -ENOMEM;
                        keys = k;
                }
                double end = cli_jnum(job, "end_time");
                keys[n] = (struct end_key){ isfinite(end) ? end : 0, 0, at };
                (void) cli_jint(job, "id", &keys[n].id);
                n++;
        }
        if (r < 0)
                return r;
        size_t *order = calloc(n ? n : 1, sizeof *order);
        if (!order)
                return -ENOMEM;
        if (n)
                qsort(keys, n, sizeof *keys, by_end);
        for (size_t i = 0; i < n; i++)
                order[i] = keys[i].at;
        *ret_order = order;
        *ret_n = n;
        return 0;
}

enum { QUEUE_COL_NODE = 11 };

static int add_queue_rows(struct cli_table *t, struct job_list *jobs, time_t now, bool expand) {
        /* NODE only on a cluster (a job Slurm runs somewhere): one host's queue has no use for it. */
        bool nodes = false;
        const json_t *job;
        size_t at;
        int r;
        while ((r = job_next(jobs, &job, &at)) > 0) {
                nodes |= cli_jstr(job, "node") != NULL;
                r = add_queue_row(t, job, now, expand);
                if (r < 0)
                        return r;
        }
        if (!nodes)
                cli_table_hide_col(t, QUEUE_COL_NODE);
        return r;
}

static int add_history_rows(struct cli_table *t, struct job_list *jobs, time_t now) {
        _cleanup_free_ size_t *order = NULL;
        size_t n = 0;
        int r = end_order(jobs, &order, &n);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                const json_t *job = job_at(jobs, order[i]);
                r = job ? add_history_row(t, job, now) : -EBADMSG;
        }
        return r;
}

/* The table of jobs: CLI_EXIT_OK, CLI_EXIT_FAIL, or -EBADMSG (nothing printed) where a reply
 * read a row at a time turned out not to be JSON. */
static int print_jobs(struct job_list *jobs, bool is_queue, bool expand) {
        static const char *const queue_cols[] = { "ID",   "NAME",  "USER",  "STATE", "PRIO",        "GPUS",
                                                  "TIME", "LIMIT", "START", "ETA",   "GPU(REASON)", "NODE" };
        static const char *const history_cols[] = { "ID", "NAME", "USER", "STATE", "EXIT", "START", "END", "ELAPSED" };
        struct cli_table *t = is_queue ? cli_table_new(queue_cols, ELEMENTSOF(queue_cols))
                                       : cli_table_new(history_cols, ELEMENTSOF(history_cols));
        if (!t)
                return CLI_EXIT_FAIL;
        cli_table_set_max_width(t, 1, NAME_MAX_COLS);
        time_t now = time(NULL);
        int r = is_queue ? add_queue_rows(t, jobs, now, expand) : add_history_rows(t, jobs, now);
        if (r >= 0)
                cli_table_print(t, stdout);
        cli_table_free(t);
        return r == -EBADMSG ? r : r < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

static int run_list(struct cli_ctx *ctx, const char *verb, const struct list_opts *o, const char *states,
                    bool is_queue) {
        _cleanup_free_ char *target = NULL;
        bool json = ctx->json || o->json;
        int r = list_target(o, verb, states, is_queue, json, &target);
        if (r)
                return r;
        struct cli_call call = { .method = "GET", .target = target, .long_reply = true };
        struct cli_http_response resp;
        r = cli_api_call(ctx, &call, &resp);
        if (r)
                return r;
        cli_json_arena_begin();
        if (json) {
                /* Not freed value by value: the arena's end gives back all of it at once. */
                json_t *reply = NULL;
                r = cli_api_decode(&call, &resp, &reply);
                if (r == 0)
                        r = cli_print_json(reply) < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
        } else {
                struct job_list jobs;
                r = job_list_open(&jobs, &call, &resp, false);
                if (r == 0)
                        r = print_jobs(&jobs, is_queue, o->expand);
                job_list_done(&jobs);
                if (r == -EBADMSG) {
                        /* Read whole, the reply says what is wrong with it. */
                        r = job_list_open(&jobs, &call, &resp, true);
                        if (r == 0)
                                r = print_jobs(&jobs, is_queue, o->expand);
                        job_list_done(&jobs);
                }
        }
        cli_json_arena_end();
        cli_http_response_done(&resp);
        return r < 0 ? CLI_EXIT_FAIL : r;
}

int cli_verb_queue(struct cli_ctx *ctx, int argc, char **argv) {
        struct list_opts o = { 0 };
        int r = parse_list_opts(ctx, "queue", argc, argv, true, &o);
        if (r)
                return r;
        if (o.help) {
                fputs(queue_help, stdout);
                return CLI_EXIT_OK;
        }
        _cleanup_free_ char *states = NULL, *bad = NULL;
        if (o.state) {
                states = cli_normalize_states(o.state, &bad);
                if (!states)
                        return bad ? cli_usage("queue",
                                               "--state: '%s' is not a job state (PENDING, HELD, RUNNING, "
                                               "COMPLETED, FAILED, CANCELLED, TIMEOUT, RECLAIMED)",
                                               bad)
                                   : CLI_EXIT_FAIL;
        }
        return run_list(ctx, "queue", &o, o.all ? ALL_STATES : states, true);
}

int cli_verb_history(struct cli_ctx *ctx, int argc, char **argv) {
        struct list_opts o = { 0 };
        int r = parse_list_opts(ctx, "history", argc, argv, false, &o);
        if (r)
                return r;
        if (o.help) {
                fputs(history_help, stdout);
                return CLI_EXIT_OK;
        }
        return run_list(ctx, "history", &o, FINAL_STATES, false);
}
