/* Idle reclamation of a job on MIG slices: without GPM no utilisation exists there, so the
 * decision rests on the job's processes per slice and its training progress, and says so; with
 * GPM's SM activity the slice has a utilisation and is judged by it like a whole GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "core/reclaim.h"

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))
#define SEC GW_USEC_PER_SEC
#define T0 ((gw_usec_t) 1704117000 * SEC) /* 2024-01-01 13:50:00 UTC */
#define AT(s) (T0 + (gw_usec_t) (s) *SEC)
#define NOW AT(3600)
#define NONE (-1L)
#define UUID "MIG-fa4e0000-0000-4000-8001-000000000000"

static void assert_contains(const char *hay, const char *needle) {
        char *owner = gw_text_private_render(hay, true, NULL);
        if (!strstr(owner, needle))
                fail_msg("\"%s\" not in \"%s\"", needle, owner);
        free(owner);
}

/* Ages are seconds before NOW; NONE = absent.  The job started an hour ago on one slice. */
struct row {
        const char *name;
        bool procs_valid;
        unsigned n_procs;
        bool other;
        long log_age; /* the log grew (size > 0) this long ago */
        long results_age; /* results.csv (9 rows) changed this long ago */
        long proc_age; /* a process of the job last seen this long ago */
        long last_active_ago;
        /* expected */
        enum gw_reclaim_action action;
        enum gw_reclaim_why why;
        const char *ev1, *ev2;
};

static const struct row rows[] = {
        { "no process ever, no progress", true, 0, false, NONE, NONE, NONE, NONE, GW_RECLAIM_WARN, GW_RECLAIM_WHY_NONE,
          "no utilisation on a MIG slice: judged by its processes and training progress; no "
          "process on " UUID " for 1h",
          "no progress for 1h" },
        { "process gone 6m40s ago, no progress since", true, 0, false, NONE, NONE, 400, 400, GW_RECLAIM_WARN,
          GW_RECLAIM_WHY_NONE, "no process on " UUID " for 6m40s", NULL },
        { "process gone 2m ago (was loading)", true, 0, false, NONE, NONE, 120, 120, GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_RECENT, "kept: idle for 2m of 5m", "no process on " UUID " for 2m" },
        { "no process but the log still grows", true, 0, false, 30, NONE, NONE, NONE, GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_RECENT, "kept: idle for 30s of 5m", NULL },
        { "process there, epochs stopped 6m40s ago", true, 1, false, 400, 400, 0, NONE, GW_RECLAIM_WARN,
          GW_RECLAIM_WHY_NONE, "1 process of the job on " UUID, "no progress for 6m40s" },
        { "process there, epochs still coming", true, 1, false, 20, 20, 0, NONE, GW_RECLAIM_KEEP, GW_RECLAIM_WHY_RECENT,
          "kept: idle for 20s of 5m", NULL },
        { "process there, never progressed: cannot judge", true, 2, false, NONE, NONE, 0, NONE, GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_BUSY, "kept: 2 processes of the job on " UUID " and no training progress yet", NULL },
        { "process list unknown", false, 0, false, NONE, NONE, NONE, NONE, GW_RECLAIM_KEEP, GW_RECLAIM_WHY_BUSY,
          "kept: processes on " UUID " unknown", NULL },
        { "another's process on the slice", true, 0, true, NONE, NONE, NONE, NONE, GW_RECLAIM_KEEP, GW_RECLAIM_WHY_BUSY,
          "kept: " UUID " used by another process (counted as busy)", NULL },
};

static gw_usec_t ago(long s) { return s == NONE ? 0 : NOW - (gw_usec_t) s * SEC; }

static void decision_table(void **unused) {
        (void) unused;
        const struct gw_reclaim_policy *p = gw_reclaim_policy_find(NULL, 0, "default");
        assert_non_null(p);
        for (size_t i = 0; i < N_ELEMS(rows); i++) {
                const struct row *r = &rows[i];
                /* No GPM figure: util is not read (a 0 there is no reading). */
                struct gw_reclaim_gpu g = { .index = 0,
                                            .util_valid = false,
                                            .util = 0,
                                            .other_busy = r->other,
                                            .mig = true,
                                            .uuid = UUID,
                                            .procs_valid = r->procs_valid,
                                            .n_procs = r->n_procs };
                struct gw_job_obs o = {
                        .started_at = AT(0),
                        .gpus = &g,
                        .n_gpus = 1,
                        .log_size = r->log_age == NONE ? 0 : 4096,
                        .log_changed = ago(r->log_age),
                        .results_rows = r->results_age == NONE ? -1 : 9,
                        .results_changed = ago(r->results_age),
                        .loss = NAN,
                        .state = { .last_active = ago(r->last_active_ago), .last_proc = ago(r->proc_age) },
                };
                struct gw_reclaim_decision d;
                print_message("row: %s\n", r->name);
                assert_int_equal(gw_reclaim_decide(&o, p, NOW, &d), 0);
                assert_int_equal(d.action, r->action);
                assert_int_equal(d.why, r->why);
                assert_contains(d.evidence, r->ev1);
                if (r->ev2)
                        assert_contains(d.evidence, r->ev2);
                /* Never a utilisation figure for a slice. */
                assert_null(strstr(d.evidence, "util "));
                assert_null(strstr(d.evidence, "threshold"));
                assert_int_equal(d.next.last_proc, r->n_procs ? NOW : ago(r->proc_age));
        }
}

/* A whole lifetime: the job's trainer leaves its slice after some epochs; the job is warned
 * idle_timeout after its last progress and stopped warn later, never before. */
static void process_leaves(void **unused) {
        (void) unused;
        const struct gw_reclaim_policy *p = gw_reclaim_policy_find(NULL, 0, "default");
        struct gw_reclaim_gpu g = { .mig = true, .uuid = UUID, .procs_valid = true, .n_procs = 1 };
        struct gw_job_obs o = { .started_at = AT(0), .gpus = &g, .n_gpus = 1, .results_rows = -1, .loss = NAN };
        struct gw_reclaim_decision d;
        gw_usec_t last = AT(0), warned = 0, termed = 0;

        for (long s = 10; s <= 1200; s += 10) {
                if (s <= 600) { /* an epoch a minute while the trainer is there */
                        o.log_size = (uint64_t) s;
                        o.log_changed = AT(s - s % 60);
                        last = o.log_changed;
                }
                g.n_procs = s <= 600;
                assert_int_equal(gw_reclaim_decide(&o, p, AT(s), &d), 0);
                if (d.action == GW_RECLAIM_WARN && !warned)
                        warned = AT(s);
                if (d.action == GW_RECLAIM_TERMINATE) {
                        termed = AT(s);
                        break;
                }
                o.state = d.next;
        }
        assert_int_equal(warned, last + p->idle_timeout);
        assert_int_equal(termed, last + p->idle_timeout + p->warn);
        assert_int_equal(o.state.last_proc, AT(600));
}

/* The slice's memory is in the evidence, beside its processes; it decides nothing. */
static void memory_shown_not_judged(void **unused) {
        (void) unused;
        const struct gw_reclaim_policy *p = gw_reclaim_policy_find(NULL, 0, "default");
        struct gw_reclaim_gpu g = { .mig = true,
                                    .uuid = UUID,
                                    .procs_valid = true,
                                    .n_procs = 1,
                                    .mem_valid = true,
                                    .mem_used = UINT64_C(2) << 30,
                                    .mem_total = UINT64_C(10) << 30 };
        struct gw_job_obs o = { .started_at = AT(0),
                                .gpus = &g,
                                .n_gpus = 1,
                                .results_rows = -1,
                                .loss = NAN,
                                .log_size = 10,
                                .log_changed = AT(10) };
        struct gw_reclaim_decision d;
        assert_int_equal(gw_reclaim_decide(&o, p, AT(10) + p->idle_timeout, &d), 0);
        assert_int_equal(d.action, GW_RECLAIM_WARN);
        assert_contains(d.evidence, "1 process of the job on " UUID " (memory 2.0 of 10.0 GiB), no progress for ");
        g.mem_used = g.mem_total; /* full memory is no sign of work */
        assert_int_equal(gw_reclaim_decide(&o, p, AT(10) + p->idle_timeout, &d), 0);
        assert_int_equal(d.action, GW_RECLAIM_WARN);
        assert_contains(d.evidence, "(memory 10.0 of 10.0 GiB)");
        g.mem_valid = false;
        assert_int_equal(gw_reclaim_decide(&o, p, AT(10) + p->idle_timeout, &d), 0);
        assert_null(strstr(d.evidence, "memory"));
}

/* GPM's SM activity stands for the slice's utilisation: a process that never progressed is
 * idle at 0% (no more "cannot judge"), busy at or above the threshold, and the evidence
 * quotes the figure; an unknown process list is still busy. */
static void gpm_activity(void **unused) {
        (void) unused;
        const struct gw_reclaim_policy *p = gw_reclaim_policy_find(NULL, 0, "default");
        struct gw_reclaim_gpu g = { .mig = true,
                                    .uuid = UUID,
                                    .procs_valid = true,
                                    .n_procs = 1,
                                    .util_valid = true,
                                    .util = 0 };
        struct gw_job_obs o = { .started_at = AT(0), .gpus = &g, .n_gpus = 1, .results_rows = -1, .loss = NAN };
        struct gw_reclaim_decision d;
        char want[128];

        assert_int_equal(gw_reclaim_decide(&o, p, NOW, &d), 0);
        assert_int_equal(d.action, GW_RECLAIM_WARN);
        snprintf(want, sizeof want, "GPM SM activity 0%% on " UUID " (threshold %u%%), 1 process of the job on " UUID,
                 p->util_threshold);
        assert_contains(d.evidence, want);
        assert_null(strstr(d.evidence, "no utilisation"));

        g.util = p->util_threshold;
        assert_int_equal(gw_reclaim_decide(&o, p, NOW, &d), 0);
        assert_int_equal(d.action, GW_RECLAIM_KEEP);
        assert_int_equal(d.why, GW_RECLAIM_WHY_BUSY);
        snprintf(want, sizeof want, "kept: GPM SM activity %u%% on " UUID " (>= %u%%)", g.util, p->util_threshold);
        assert_contains(d.evidence, want);

        g.util = 0;
        g.procs_valid = false;
        assert_int_equal(gw_reclaim_decide(&o, p, NOW, &d), 0);
        assert_int_equal(d.action, GW_RECLAIM_KEEP);
        assert_contains(d.evidence, "kept: processes on " UUID " unknown (counted as busy)");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(decision_table),
                cmocka_unit_test(process_leaves),
                cmocka_unit_test(memory_shown_not_judged),
                cmocka_unit_test(gpm_activity),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
