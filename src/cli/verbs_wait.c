/* gpuward wait, and submit --wait: until jobs end, as `tsp -w` and `sbatch --wait`. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "cli/api.h"
#include "cli/format.h"
#include "cli/verbs.h"
#include "cli/wait.h"

static const char wait_help[] = "Usage: gpuward wait [--timeout DURATION] [--json] JOB...\n"
                                "\n"
                                "Wait until the jobs have ended, and say how each ended.  For scripts and CI:\n"
                                "the exit status is 0 when every job COMPLETED, 1 otherwise (one failed, was\n"
                                "cancelled, timed out or was reclaimed, or --timeout passed first).  JOB is an id\n"
                                "or a range of ids (17-40); a job array's id waits for every one of its tasks, and\n"
                                "17_3 for task 3 once it started.  'gpuward submit --wait' submits and waits in\n"
                                "one go.\n"
                                "\n"
                                "Options:\n"
                                "  --timeout DURATION  give up after this long (90s, 10m, 2h; default: no limit)\n"
                                "  --json              print the ended jobs' JSON (a list for several jobs)\n"
                                "  -h, --help          this help\n"
                                "\n"
                                "Examples:\n"
                                "  gpuward wait 17 && echo done\n"
                                "  gpuward wait --timeout 2h 30-39\n";

/* A job ends within a second of being looked at, without a stream to hold open: the first
 * looks come quickly (short jobs), later ones once a second. */
#define POLL_FIRST (50 * GW_USEC_PER_MSEC)
#define POLL_MAX (1 * GW_USEC_PER_SEC)

static bool is_final(const char *state) {
        static const char *const finals[] = { "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "RECLAIMED" };
        for (size_t i = 0; state && i < ELEMENTSOF(finals); i++)
                if (!strcmp(state, finals[i]))
                        return true;
        return false;
}

void cli_print_job_end(FILE *out, const json_t *job, long long num) {
        char id[32];
        cli_job_ref(num, id, sizeof id);
        const char *state = cli_jstr(job, "state"), *reason = cli_jstr(job, "reason");
        long long code;
        _cleanup_free_ char *why = reason ? cli_sanitize(reason) : NULL;
        if (state && !strcmp(state, "COMPLETED") && cli_jint(job, "exit_code", &code))
                fprintf(out, "Job %s COMPLETED (exit %lld)\n", id, code);
        else
                fprintf(out, "Job %s %s%s%s\n", id, state ? state : "?", why && *why ? ": " : "", why ? why : "");
}

int cli_job_exit_status(const json_t *job) {
        static const struct {
                const char *state;
                int code;
        } codes[] = {
                { "COMPLETED", CLI_EXIT_OK },
                { "RECLAIMED", CLI_EXIT_RECLAIMED },
                { "TIMEOUT", CLI_EXIT_TIMEOUT },
                { "CANCELLED", CLI_EXIT_CANCELLED },
        };
        const char *state = cli_jstr(job, "state");
        long long code;
        for (size_t i = 0; state && i < ELEMENTSOF(codes); i++)
                if (!strcmp(state, codes[i].state))
                        return codes[i].code;
        /* A FAILED job's own code, unless it would read as one of the states above. */
        if (state && !strcmp(state, "FAILED") && cli_jint(job, "exit_code", &code) && code > 0 && code < 256 &&
            (code < CLI_EXIT_RECLAIMED || code > CLI_EXIT_CANCELLED))
                return (int) code;
        return CLI_EXIT_FAIL;
}

/* One look at every job not ended yet: ended ones are told and kept in ended, the others'
 * states are left in still[i].  Returns the jobs still running or waiting, or -1 when a
 * look failed (told). */
static long look_all(struct cli_ctx *ctx, const long long *ids, size_t n, bool *done, char (*still)[16], bool tell,
                     json_t *ended, int *status) {
        long left = 0;
        for (size_t i = 0; i < n; i++) {
                if (done[i])
                        continue;
                json_t *job = cli_job_get(ctx, ids[i]);
                if (!job)
                        return -1;
                const char *state = cli_jstr(job, "state");
                if (is_final(state)) {
                        done[i] = true;
                        *status = strcmp(state, "COMPLETED") ? CLI_EXIT_FAIL : *status;
                        if (tell)
                                cli_print_job_end(stdout, job, ids[i]);
                        (void) json_array_append(ended, job);
                } else {
                        snprintf(still[i], sizeof still[i], "%s", state ? state : "?");
                        left++;
                }
                json_decref(job);
        }
        fflush(stdout);
        return left;
}

int cli_wait_jobs(struct cli_ctx *ctx, const long long *ids, size_t n, gw_usec_t timeout, bool json, bool quiet) {
        json_t *ended = json_array();
        _cleanup_free_ bool *done = calloc(n ? n : 1, sizeof *done);
        _cleanup_free_ char(*still)[16] = calloc(n ? n : 1, sizeof *still);
        if (!ended || !done || !still) {
                json_decref(ended);
                cli_error("out of memory");
                return CLI_EXIT_FAIL;
        }
        gw_usec_t deadline = timeout > 0 ? gw_clock_mono() + timeout : 0, pause = POLL_FIRST;
        char ref[32];
        int status = CLI_EXIT_OK;
        long left;
        while ((left = look_all(ctx, ids, n, done, still, !json && !quiet, ended, &status)) > 0) {
                if (deadline && gw_clock_mono() >= deadline) {
                        for (size_t i = 0; i < n; i++)
                                if (!done[i])
                                        cli_error("job %s is still %s: gave up waiting",
                                                  cli_job_ref(ids[i], ref, sizeof ref), still[i]);
                        status = CLI_EXIT_FAIL;
                        break;
                }
                cli_sleep_usec(pause);
                pause = pause * 2 < POLL_MAX ? pause * 2 : POLL_MAX;
        }
        if (left < 0) {
                json_decref(ended);
                return CLI_EXIT_FAIL;
        }
        if (json)
                (void) cli_print_json(n == 1 && json_array_size(ended) == 1 ? json_array_get(ended, 0) : ended);
        json_decref(ended);
        return status;
}

static int on_timeout(void *userdata, int opt, const char *arg) {
        (void) opt;
        gw_usec_t *timeout = userdata;
        if (gw_parse_duration(arg, timeout) < 0 || *timeout <= 0)
                return cli_usage("wait", "--timeout: '%s' is not a positive duration: " GW_DURATION_FORMS, arg);
        return 0;
}

int cli_verb_wait(struct cli_ctx *ctx, int argc, char **argv) {
        enum { OPT_TIMEOUT = 0x100 };
        static const struct option extra[] = {
                { "timeout", required_argument, NULL, OPT_TIMEOUT },
                { 0 },
        };
        gw_usec_t timeout = 0;
        const struct cli_options spec = {
                .verb = "wait",
                .help = wait_help,
                .extra = extra,
                .on_option = on_timeout,
                .userdata = &timeout,
        };
        bool json;
        int r = cli_parse_options(ctx, &spec, argc, argv, &json);
        if (r >= 0)
                return r;
        if (optind >= argc)
                return cli_usage("wait", "which job? gpuward wait JOB...");
        struct cli_id_list ids = { 0 };
        r = cli_parse_job_ids("wait", argv + optind, argc - optind, &ids);
        if (r == 0)
                r = cli_wait_jobs(ctx, ids.v, ids.n, timeout, json, false);
        free(ids.v);
        return r;
}
