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
/* 2024-01-01 13:50:00 UTC: the fake clock's origin, so evidence times are readable. */
#define T0 ((gw_usec_t) 1704117000 * SEC)
#define AT(s) (T0 + (gw_usec_t) (s) *SEC)
#define NONE (-1L)
/* One whole GPU: index, whether its utilisation is known, the utilisation, another's process. */
#define GPU(i, valid, u, other) \
        { .index = (i), .util_valid = (valid), .util = (u), .other_busy = (other) }

static const struct gw_reclaim_policy *profile(const char *name) {
        const struct gw_reclaim_policy *p = gw_reclaim_policy_find(NULL, 0, name);
        assert_non_null(p);
        return p;
}

/* hay as the job's owner reads it (the log quotes shown): needle in it; and as another user
 * reads it: no log text, the quote hidden. */
static void assert_contains(const char *hay, const char *needle) {
        char *owner = gw_text_private_render(hay, true, NULL), *other = gw_text_private_render(hay, false, "HIDDEN");
        if (needle && !strstr(owner, needle))
                fail_msg("\"%s\" not in \"%s\"", needle, owner);
        const char *quote = strstr(owner, "line \"");
        if (quote && strstr(other, "line \"HIDDEN\"") == NULL)
                fail_msg("the log line is shown to others: \"%s\"", other);
        free(owner);
        free(other);
}

/* ---- the decision table: one observation, one decision ---- */

/* Ages are seconds before now; NONE = absent.  The base job: started an hour ago, two GPUs,
 * results.csv with 9 rows. */
struct row {
        const char *name;
        const char *policy;
        int util0, util1; /* -1: no reading */
        bool other1; /* someone else's process busy on GPU 1 */
        long log_age, results_age, ckpt_age, started_ago, last_active_ago, warned_ago, term_ago;
        enum gw_phase phase;
        const char *line;
        enum gw_probe_result probe;
        /* expected */
        enum gw_reclaim_action action;
        enum gw_reclaim_why why;
        bool cleared;
        const char *ev1, *ev2;
};

#define HUNG 0, 0, false, 400, 460, NONE, 3600, NONE
static const char val_line[] = "Class     Images  Instances      Box(P          R      mAP50  mAP50-95):  45%|####";

static const struct row rows[] = {
        { "hung, first time over the timeout", "default", HUNG, NONE, NONE, GW_PHASE_TRAINING,
          "9/100  2.61G  1.1  1.3  1.2  0%|  | 0/8", GW_PROBE_NONE, GW_RECLAIM_WARN, GW_RECLAIM_WHY_NONE, false,
          "WARNING idle for 6m40s: GPU 0,1 util 0%/0% (threshold 5%)", "last log line \"9/100" },
        { "hung, warned 30s ago", "default", HUNG, 30, NONE, GW_PHASE_UNKNOWN, NULL, GW_PROBE_NONE, GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_WARNED, false, "kept: warned 14:49:30", "SIGTERM at 14:50:30 unless it resumes" },
        { "hung, warned 61s ago", "default", HUNG, 61, NONE, GW_PHASE_UNKNOWN, NULL, GW_PROBE_NONE,
          GW_RECLAIM_TERMINATE, GW_RECLAIM_WHY_NONE, false, "idle for 6m40s: ", "; warned 14:48:59" },
        /* The warning is old enough but idle < timeout + warn (policy shortened meanwhile? a
         * stepped clock?): the user still gets the full notice. */
        { "warned long ago, not idle long enough",
          "default",
          0,
          0,
          false,
          330,
          460,
          NONE,
          3600,
          NONE,
          120,
          NONE,
          GW_PHASE_UNKNOWN,
          NULL,
          GW_PROBE_NONE,
          GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_WARNED,
          false,
          "idle 5m30s",
          NULL },
        { "SIGTERM 10s ago", "default", HUNG, 70, 10, GW_PHASE_UNKNOWN, NULL, GW_PROBE_NONE, GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_TERMINATING, false, "terminating: SIGTERM 14:49:50", "SIGKILL at 14:50:20 if still running" },
        { "SIGTERM 30s ago, still running", "default", HUNG, 90, 30, GW_PHASE_UNKNOWN, NULL, GW_PROBE_NONE,
          GW_RECLAIM_KILL, GW_RECLAIM_WHY_NONE, false, "KILL: still running 30s after SIGTERM 14:49:30 (grace 30s)",
          NULL },
        /* A job saving its state after SIGTERM is busy: that is what the grace is for. */
        { "SIGTERM sent, then busy",
          "default",
          90,
          90,
          false,
          0,
          0,
          NONE,
          3600,
          NONE,
          70,
          10,
          GW_PHASE_SAVING,
          "Saving",
          GW_PROBE_NONE,
          GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_TERMINATING,
          false,
          "terminating",
          NULL },
        { "busy GPU",
          "default",
          0,
          90,
          false,
          400,
          460,
          NONE,
          3600,
          NONE,
          NONE,
          NONE,
          GW_PHASE_UNKNOWN,
          NULL,
          GW_PROBE_NONE,
          GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_BUSY,
          false,
          "kept: GPU 1 busy (90% >= 5%)",
          "util 0%/90%" },
        { "util at the threshold is busy",
          "default",
          5,
          0,
          false,
          400,
          460,
          NONE,
          3600,
          NONE,
          NONE,
          NONE,
          GW_PHASE_UNKNOWN,
          NULL,
          GW_PROBE_NONE,
          GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_BUSY,
          false,
          "GPU 0 busy (5% >= 5%)",
          NULL },
        { "util just below the threshold",
          "default",
          4,
          4,
          false,
          400,
          460,
          NONE,
          3600,
          NONE,
          NONE,
          NONE,
          GW_PHASE_UNKNOWN,
          NULL,
          GW_PROBE_NONE,
          GW_RECLAIM_WARN,
          GW_RECLAIM_WHY_NONE,
          false,
          "util 4%/4%",
          NULL },
        { "no utilisation reading",
          "default",
          0,
          -1,
          false,
          400,
          460,
          NONE,
          3600,
          NONE,
          NONE,
          NONE,
          GW_PHASE_UNKNOWN,
          NULL,
          GW_PROBE_NONE,
          GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_BUSY,
          false,
          "GPU 1 utilisation unknown (counted as busy)",
          "util 0%/?" },
        { "rogue process busy on the job's GPU",
          "default",
          0,
          0,
          true,
          400,
          460,
          NONE,
          3600,
          NONE,
          NONE,
          NONE,
          GW_PHASE_UNKNOWN,
          NULL,
          GW_PROBE_NONE,
          GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_BUSY,
          false,
          "kept: GPU 1 used by another process (counted as busy)",
          "GPU 1 used by another process" },
        { "slow io: 1% but results.csv moved 100s ago",
          "default",
          1,
          1,
          false,
          100,
          100,
          NONE,
          3600,
          NONE,
          NONE,
          NONE,
          GW_PHASE_TRAINING,
          "7/50 ...",
          GW_PROBE_NONE,
          GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_RECENT,
          false,
          "kept: idle for 1m40s of 5m",
          "results.csv 9 rows since 14:48:20" },
        { "long validation at 2%",
          "default",
          2,
          2,
          false,
          1200,
          1200,
          NONE,
          3600,
          NONE,
          NONE,
          NONE,
          GW_PHASE_VALIDATING,
          val_line,
          GW_PROBE_NONE,
          GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_PROTECTED,
          false,
          "kept: validating per the log",
          "validating (\"Class     Images  Instances" },
        { "validation line but nothing moved for 2h",
          "default",
          2,
          2,
          false,
          7200,
          7200,
          NONE,
          10000,
          NONE,
          NONE,
          NONE,
          GW_PHASE_VALIDATING,
          val_line,
          GW_PROBE_NONE,
          GW_RECLAIM_WARN,
          GW_RECLAIM_WHY_NONE,
          false,
          "no longer protecting",
          "no progress for 2h" },
        { "end of training: optimizer stripped",
          "default",
          0,
          0,
          false,
          400,
          460,
          NONE,
          3600,
          NONE,
          NONE,
          NONE,
          GW_PHASE_SAVING,
          "Optimizer stripped from runs/detect/train/weights/last.pt, 6.2MB",
          GW_PROBE_NONE,
          GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_PROTECTED,
          false,
          "kept: saving per the log",
          "saving (\"Optimizer stripped from" },
        { "checkpoint written 10s ago",
          "default",
          0,
          0,
          false,
          400,
          460,
          10,
          3600,
          NONE,
          NONE,
          NONE,
          GW_PHASE_UNKNOWN,
          NULL,
          GW_PROBE_NONE,
          GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_PROTECTED,
          false,
          "kept: checkpoint written 14:49:50 (within grace 30s)",
          "saving (checkpoint written 14:49:50)" },
        { "checkpoint written 31s ago",
          "default",
          0,
          0,
          false,
          400,
          460,
          31,
          3600,
          NONE,
          NONE,
          NONE,
          GW_PHASE_UNKNOWN,
          NULL,
          GW_PROBE_NONE,
          GW_RECLAIM_WARN,
          GW_RECLAIM_WHY_NONE,
          false,
          "not saving",
          NULL },
        { "finetune", "finetune", HUNG, NONE, NONE, GW_PHASE_UNKNOWN, NULL, GW_PROBE_NONE, GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_DISABLED, false, "kept: reclamation off (policy finetune)", "no progress for 6m40s" },
        { "finetune withdraws a warning", "finetune", HUNG, 10, NONE, GW_PHASE_UNKNOWN, NULL, GW_PROBE_NONE,
          GW_RECLAIM_KEEP, GW_RECLAIM_WHY_DISABLED, true, NULL, NULL },
        { "young job",
          "default",
          0,
          0,
          false,
          200,
          NONE,
          NONE,
          200,
          NONE,
          NONE,
          NONE,
          GW_PHASE_UNKNOWN,
          NULL,
          GW_PROBE_NONE,
          GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_YOUNG,
          false,
          "kept: young, started 3m20s ago (idle timeout 5m)",
          NULL },
        { "warned, then the log moved",
          "default",
          0,
          0,
          false,
          5,
          460,
          NONE,
          3600,
          NONE,
          30,
          NONE,
          GW_PHASE_UNKNOWN,
          NULL,
          GW_PROBE_NONE,
          GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_RECENT,
          true,
          "activity resumed after the warning at 14:49:30",
          NULL },
        { "warned, then the GPU got busy",
          "default",
          60,
          0,
          false,
          400,
          460,
          NONE,
          3600,
          NONE,
          30,
          NONE,
          GW_PHASE_UNKNOWN,
          NULL,
          GW_PROBE_NONE,
          GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_BUSY,
          true,
          "activity resumed",
          NULL },
        /* A failing probe is "no progress"; the log advancing is progress: kept. */
        { "probe failing, log advancing",
          "default",
          0,
          0,
          false,
          5,
          460,
          NONE,
          3600,
          NONE,
          NONE,
          NONE,
          GW_PHASE_UNKNOWN,
          NULL,
          GW_PROBE_FAIL,
          GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_RECENT,
          false,
          "health probe failing (HTTP 503)",
          NULL },
        /* A passing probe does not keep a job by itself. */
        { "probe passing, hung", "default", HUNG, NONE, NONE, GW_PHASE_UNKNOWN, NULL, GW_PROBE_PASS, GW_RECLAIM_WARN,
          GW_RECLAIM_WHY_NONE, false, "health probe passing", NULL },
        { "busy sample 100s ago",
          "default",
          0,
          0,
          false,
          900,
          900,
          NONE,
          3600,
          100,
          NONE,
          NONE,
          GW_PHASE_UNKNOWN,
          NULL,
          GW_PROBE_NONE,
          GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_RECENT,
          false,
          "idle for 1m40s of 5m",
          "no progress for 15m" },
        { "log mtime in the future",
          "default",
          0,
          0,
          false,
          -30,
          460,
          NONE,
          3600,
          NONE,
          NONE,
          NONE,
          GW_PHASE_UNKNOWN,
          NULL,
          GW_PROBE_NONE,
          GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_RECENT,
          false,
          "idle for 0s of 5m",
          NULL },
        { "hpo: 200s idle is enough",
          "hpo",
          0,
          0,
          false,
          200,
          200,
          NONE,
          3600,
          NONE,
          NONE,
          NONE,
          GW_PHASE_UNKNOWN,
          NULL,
          GW_PROBE_NONE,
          GW_RECLAIM_WARN,
          GW_RECLAIM_WHY_NONE,
          false,
          "WARNING idle for 3m20s",
          NULL },
        { "no results.csv",
          "default",
          0,
          0,
          false,
          400,
          NONE,
          NONE,
          3600,
          NONE,
          NONE,
          NONE,
          GW_PHASE_UNKNOWN,
          NULL,
          GW_PROBE_NONE,
          GW_RECLAIM_WARN,
          GW_RECLAIM_WHY_NONE,
          false,
          "(log unchanged since 14:43:20)",
          NULL },
};

static gw_usec_t ago(long s, gw_usec_t now) { return s == NONE ? 0 : now - (gw_usec_t) s * SEC; }

static void decision_table(void **state) {
        const gw_usec_t now = AT(3600); /* 14:50:00 */

        for (size_t i = 0; i < N_ELEMS(rows); i++) {
                const struct row *r = &rows[i];
                struct gw_reclaim_gpu g[2] = {
                        GPU(0, r->util0 >= 0, (unsigned) (r->util0 >= 0 ? r->util0 : 0), false),
                        GPU(1, r->util1 >= 0, (unsigned) (r->util1 >= 0 ? r->util1 : 0), r->other1),
                };
                struct gw_job_obs o = {
                        .started_at = ago(r->started_ago, now),
                        .gpus = g,
                        .n_gpus = 2,
                        .log_size = 12345,
                        .log_changed = ago(r->log_age, now),
                        .results_rows = r->results_age == NONE ? -1 : 9,
                        .results_changed = ago(r->results_age, now),
                        .loss = NAN,
                        .ckpt_mtime = ago(r->ckpt_age, now),
                        .phase = r->phase,
                        .phase_line = r->line,
                        .probe = r->probe,
                        .probe_detail = r->probe == GW_PROBE_FAIL ? "HTTP 503" : NULL,
                        .state = { ago(r->last_active_ago, now), ago(r->warned_ago, now), ago(r->term_ago, now) },
                };
                struct gw_reclaim_decision d;
                bool active = r->why == GW_RECLAIM_WHY_BUSY || r->why == GW_RECLAIM_WHY_PROTECTED;

                memset(&d, 0xa5, sizeof(d));
                assert_int_equal(gw_reclaim_decide(&o, profile(r->policy), now, &d), 0);
                if (d.action != r->action || d.why != r->why || d.warning_cleared != r->cleared)
                        fail_msg("%s: %s/%d/%d, want %s/%d/%d: %s", r->name, gw_reclaim_action_name(d.action), d.why,
                                 d.warning_cleared, gw_reclaim_action_name(r->action), r->why, r->cleared, d.evidence);
                assert_contains(d.evidence, r->ev1);
                assert_contains(d.evidence, r->ev2);
                assert_non_null(memchr(d.evidence, '\0', sizeof(d.evidence)));

                /* What the caller stores: exactly what the header promises. */
                if (r->why == GW_RECLAIM_WHY_TERMINATING || r->action == GW_RECLAIM_KILL) {
                        assert_memory_equal(&d.next, &o.state, sizeof(d.next));
                        continue;
                }
                if (r->why == GW_RECLAIM_WHY_DISABLED) {
                        assert_int_equal(d.next.last_active, now);
                        assert_int_equal(d.next.warned_at, 0);
                        assert_int_equal(d.next.term_at, 0);
                        continue;
                }
                assert_int_equal(d.next.last_active, active ? now : o.state.last_active);
                assert_int_equal(d.next.warned_at, r->action == GW_RECLAIM_WARN ? now
                                                   : r->cleared                 ? 0
                                                                                : o.state.warned_at);
                assert_int_equal(d.next.term_at, r->action == GW_RECLAIM_TERMINATE ? now : 0);
                assert_int_equal(d.idle_since, active ? 0 : now - d.idle_for);
        }
}

/* The evidence line of core/reclaim.h's example, to the character (the policy's timeout is
 * 4 min so that 5m12s of idleness is past timeout + warning). */
static void issue_example(void **state) {
        struct gw_reclaim_gpu g[2] = { GPU(0, true, 0, false), GPU(1, true, 0, false) };
        struct gw_reclaim_policy p = *profile("default");
        const gw_usec_t now = AT(17 * 60 + 23); /* 14:07:23 */
        struct gw_job_obs o = {
                .started_at = T0,
                .gpus = g,
                .n_gpus = 2,
                .log_changed = AT(12 * 60 + 11), /* 14:02:11 */
                .results_rows = 37,
                .results_changed = AT(8 * 60 + 40), /* 13:58:40 */
                .loss = NAN,
                .phase = GW_PHASE_UNKNOWN,
                .state = { .warned_at = AT(16 * 60 + 11) },
        };
        struct gw_reclaim_decision d;

        p.idle_timeout = 240 * SEC;
        assert_int_equal(gw_reclaim_decide(&o, &p, now, &d), 0);
        assert_int_equal(d.action, GW_RECLAIM_TERMINATE);
        assert_int_equal(d.idle_for, 312 * SEC);
        assert_string_equal(d.evidence, "idle for 5m12s: GPU 0,1 util 0%/0% (threshold 5%), no "
                                        "progress for 5m12s (log unchanged since 14:02:11, results.csv 37 "
                                        "rows since 13:58:40), not validating, not saving; warned 14:06:11");

        /* The daemon's time zone, not the core's: +02:00 shifts every clock time. */
        o.utc_offset = 2 * 3600;
        o.loss = 0.8125;
        o.loss_changed = AT(8 * 60 + 40);
        assert_int_equal(gw_reclaim_decide(&o, &p, now, &d), 0);
        assert_contains(d.evidence, "log unchanged since 16:02:11");
        assert_contains(d.evidence, "loss 0.8125 since 15:58:40");
        assert_contains(d.evidence, "warned 16:06:11");
}

/* ---- whole lives: a fake trainer sampled every 5 s under the fake clock ---- */

typedef void (*trainer_fn)(long t, struct gw_job_obs *o, struct gw_reclaim_gpu *g);

static void util(struct gw_reclaim_gpu *g, unsigned u) { g[0].util = g[1].util = u; }

/* Trains (90%, a log line per sample, a row a minute) until 600 s, then hangs. */
static void hung(long t, struct gw_job_obs *o, struct gw_reclaim_gpu *g) {
        long last = t < 600 ? t : 595;

        util(g, t < 600 ? 90 : 0);
        o->log_changed = AT(last);
        o->results_rows = last / 60;
        o->results_changed = last >= 60 ? AT(last / 60 * 60) : 0;
}

static void hung_probe_ok(long t, struct gw_job_obs *o, struct gw_reclaim_gpu *g) {
        hung(t, o, g);
        o->probe = GW_PROBE_PASS;
}

/* Hangs at 600, gets going again at 920: after the warning, before the SIGTERM. */
static void resumes(long t, struct gw_job_obs *o, struct gw_reclaim_gpu *g) {
        hung(t < 920 ? t : 0, o, g);
        if (t >= 920) {
                util(g, 90);
                o->log_changed = AT(t);
        }
}

/* --slow-io: 1% and silent, but an epoch (a log line and a row) every 2 min. */
static void slow_io(long t, struct gw_job_obs *o, struct gw_reclaim_gpu *g) {
        util(g, 1);
        o->log_changed = AT(t / 120 * 120);
        o->results_rows = t / 120;
        o->results_changed = t >= 120 ? AT(t / 120 * 120) : 0;
        o->phase = GW_PHASE_TRAINING;
        o->phase_line = "3/50  2.6G  1.1  1.3  1.2  100%|##########| 8/8";
}

/* --long-validation: trains until 300 s, then validates at 2% printing nothing more. */
static void long_validation(long t, struct gw_job_obs *o, struct gw_reclaim_gpu *g) {
        util(g, t < 300 ? 95 : 2);
        o->log_changed = AT(t < 300 ? t : 300);
        o->phase = t < 300 ? GW_PHASE_TRAINING : GW_PHASE_VALIDATING;
        o->phase_line = t < 300 ? "1/3 ..." : val_line;
}

/* Hung at 60 s but writes weights/last.pt every 20 s. */
static void checkpointing(long t, struct gw_job_obs *o, struct gw_reclaim_gpu *g) {
        hung(t < 60 ? t : 60, o, g);
        util(g, 0);
        o->ckpt_mtime = AT(t / 20 * 20);
}

/* Hung at 60 s; someone's hand-started python keeps GPU 1 busy. */
static void rogue(long t, struct gw_job_obs *o, struct gw_reclaim_gpu *g) {
        hung(t < 60 ? t : 60, o, g);
        util(g, 0);
        g[1].other_busy = true;
}

/* No progress after 60 s; a busy burst every 250 s (one sample resets the window). */
static void flapping(long t, struct gw_job_obs *o, struct gw_reclaim_gpu *g) {
        hung(t < 60 ? t : 60, o, g);
        util(g, t % 250 == 0 ? 80 : 0);
}

/* CPU-bound preprocessing: GPU idle, health probe failing, log advancing. */
static void cpu_bound(long t, struct gw_job_obs *o, struct gw_reclaim_gpu *g) {
        util(g, 0);
        o->log_changed = AT(t);
        o->probe = GW_PROBE_FAIL;
        o->probe_detail = "connection refused";
}

struct life {
        const char *name;
        const char *policy;
        trainer_fn fn;
        long duration;
        long warn, term, kill; /* seconds after start, NONE = never */
        int cleared; /* warnings withdrawn */
        enum gw_reclaim_why last_why; /* at the end, when never killed */
};

static const struct life lives[] = {
        /* Last busy sample 595: warn 595+300, SIGTERM 60 s later, SIGKILL after grace. */
        { "hung", "default", hung, 3600, 895, 955, 985, 0, GW_RECLAIM_WHY_NONE },
        { "hung, hpo", "hpo", hung, 3600, 775, 835, 865, 0, GW_RECLAIM_WHY_NONE },
        { "hung, probe passing", "default", hung_probe_ok, 3600, 895, 955, 985, 0, GW_RECLAIM_WHY_NONE },
        { "hung, finetune", "finetune", hung, 3 * 3600, NONE, NONE, NONE, 0, GW_RECLAIM_WHY_DISABLED },
        { "resumes after the warning", "default", resumes, 3600, 895, NONE, NONE, 1, GW_RECLAIM_WHY_BUSY },
        { "slow io", "default", slow_io, 3 * 3600, NONE, NONE, NONE, 0, GW_RECLAIM_WHY_RECENT },
        { "long validation", "default", long_validation, 3000, NONE, NONE, NONE, 0, GW_RECLAIM_WHY_PROTECTED },
        /* protect_max (1 h) after the last progress at 300: protected through 3895. */
        { "validation that never ends", "default", long_validation, 5000, 4195, 4255, 4285, 0, GW_RECLAIM_WHY_NONE },
        { "checkpointing", "default", checkpointing, 3 * 3600, NONE, NONE, NONE, 0, GW_RECLAIM_WHY_PROTECTED },
        { "rogue on its GPU", "default", rogue, 3 * 3600, NONE, NONE, NONE, 0, GW_RECLAIM_WHY_BUSY },
        { "flapping", "default", flapping, 3 * 3600, NONE, NONE, NONE, 0, GW_RECLAIM_WHY_RECENT },
        { "cpu bound, probe failing", "default", cpu_bound, 3 * 3600, NONE, NONE, NONE, 0, GW_RECLAIM_WHY_RECENT },
};

static void whole_lives(void **state) {
        for (size_t i = 0; i < N_ELEMS(lives); i++) {
                const struct life *l = &lives[i];
                struct gw_reclaim_state st = { 0 };
                long warn = NONE, term = NONE, kill = NONE;
                int cleared = 0;
                struct gw_reclaim_decision d = { 0 };

                for (long t = 0; t <= l->duration && kill == NONE; t += 5) {
                        struct gw_reclaim_gpu g[2] = { GPU(0, true, 0, false), GPU(1, true, 0, false) };
                        struct gw_job_obs o = { .started_at = T0,
                                                .gpus = g,
                                                .n_gpus = 2,
                                                .results_rows = -1,
                                                .loss = NAN };

                        l->fn(t, &o, g);
                        o.state = st;
                        assert_int_equal(gw_reclaim_decide(&o, profile(l->policy), AT(t), &d), 0);
                        if (d.action == GW_RECLAIM_WARN && warn == NONE)
                                warn = t;
                        else if (d.action == GW_RECLAIM_WARN)
                                fail_msg("%s: warned twice (%ld, %ld)", l->name, warn, t);
                        if (d.action == GW_RECLAIM_TERMINATE)
                                term = t;
                        if (d.action == GW_RECLAIM_KILL)
                                kill = t;
                        cleared += d.warning_cleared;
                        st = d.next; /* the caller's whole duty */
                }
                if (warn != l->warn || term != l->term || kill != l->kill || cleared != l->cleared)
                        fail_msg("%s: warn %ld term %ld kill %ld cleared %d, want %ld %ld %ld %d", l->name, warn, term,
                                 kill, cleared, l->warn, l->term, l->kill, l->cleared);
                if (kill == NONE && d.why != l->last_why)
                        fail_msg("%s: ends kept for %d, want %d: %s", l->name, d.why, l->last_why, d.evidence);
        }
}

/* The evidence along the hung job's life, as a user reads it in `gpuward show`. */
static void hung_evidence(void **state) {
        struct gw_reclaim_state st = { 0 };
        struct gw_reclaim_decision d;
        char warn[GW_RECLAIM_EVIDENCE_MAX] = "", term[GW_RECLAIM_EVIDENCE_MAX] = "";

        for (long t = 0; t <= 985; t += 5) {
                struct gw_reclaim_gpu g[2] = { GPU(0, true, 0, false), GPU(1, true, 0, false) };
                struct gw_job_obs o = { .started_at = T0, .gpus = g, .n_gpus = 2, .loss = NAN };

                hung(t, &o, g);
                o.state = st;
                assert_int_equal(gw_reclaim_decide(&o, profile("default"), AT(t), &d), 0);
                if (d.action == GW_RECLAIM_WARN)
                        (void) snprintf(warn, sizeof(warn), "%s", d.evidence);
                if (d.action == GW_RECLAIM_TERMINATE)
                        (void) snprintf(term, sizeof(term), "%s", d.evidence);
                st = d.next;
        }
        assert_string_equal(warn, "WARNING idle for 5m: GPU 0,1 util 0%/0% (threshold 5%), no "
                                  "progress for 5m (log unchanged since 13:59:55, results.csv 9 "
                                  "rows since 13:59:00), not validating, not saving; SIGTERM in "
                                  "1m unless it resumes");
        assert_string_equal(term, "idle for 6m: GPU 0,1 util 0%/0% (threshold 5%), "
                                  "no progress for 6m (log unchanged since 13:59:55, results.csv "
                                  "9 rows since 13:59:00), not validating, not saving; warned "
                                  "14:04:55");
        assert_int_equal(d.action, GW_RECLAIM_KILL);
        assert_string_equal(d.evidence, "KILL: still running 30s after SIGTERM 14:05:55 (grace 30s)");
}

static bool utf8_valid(const char *s) {
        const unsigned char *p = (const unsigned char *) s;

        while (*p) {
                size_t len = *p < 0x80             ? 1
                             : (*p & 0xe0) == 0xc0 ? 2
                             : (*p & 0xf0) == 0xe0 ? 3
                             : (*p & 0xf8) == 0xf0 ? 4
                                                   : 0;
                if (len == 0)
                        return false;
                for (size_t i = 1; i < len; i++)
                        if ((p[i] & 0xc0) != 0x80)
                                return false;
                p += len;
        }
        return true;
}

/* The evidence goes out as JSON: whatever cuts it (the 80-byte quote of a log line, the
 * buffer's end), it stays valid UTF-8. */
static void evidence_stays_utf8(void **state) {
        struct gw_reclaim_gpu g[64];
        char line[3 * 60 + 1] = "";
        bool cut = false;
        struct gw_reclaim_decision d;

        for (size_t i = 0; i < 60; i++)
                memcpy(line + 3 * i, "\xe2\x96\x88", 4); /* tqdm's full block, NUL last */
        for (size_t n = 1; n <= N_ELEMS(g); n++) {
                struct gw_job_obs o = { .started_at = T0,
                                        .gpus = g,
                                        .n_gpus = n,
                                        .log_changed = AT(1),
                                        .results_rows = 1234567,
                                        .results_changed = AT(1),
                                        .loss = NAN,
                                        .phase = GW_PHASE_TRAINING,
                                        .phase_line = line };

                for (size_t i = 0; i < n; i++)
                        g[i] = (struct gw_reclaim_gpu) GPU((int) i + 100, true, 0, false);
                assert_int_equal(gw_reclaim_decide(&o, profile("default"), AT(4000), &d), 0);
                assert_int_equal(d.action, GW_RECLAIM_WARN);
                if (!utf8_valid(d.evidence))
                        fail_msg("%zu GPUs: not UTF-8: %s", n, d.evidence);
                if (n == 1)
                        assert_contains(d.evidence, "last log line \""
                                                    "\xe2\x96\x88\xe2\x96\x88"); /* 26 whole blocks */
                cut |= strlen(d.evidence) >= sizeof(d.evidence) - 3;
        }
        assert_true(cut); /* some of them did fill the buffer */
}

/* ---- validation: over when its results line is last, or far beyond the job's own ---- */

static const char all_line[] = "all        128        929      0.646      0.539      0.617      0.455";

/* GPUs at 2% (below the threshold), started an hour ago under "default" (idle 5m, warn 1m,
 * protect_max 1h), results.csv 9 rows; ages in seconds before now, NONE = absent.  The log
 * stands still since val_since unless log_age says otherwise. */
struct val_row {
        const char *name;
        enum gw_phase phase;
        long log_age, ckpt_age, val_since_ago, val_longest, last_active_ago;
        /* expected */
        enum gw_reclaim_action action;
        enum gw_reclaim_why why;
        const char *ev1, *ev2;
};

static const struct val_row val_rows[] = {
        /* The results line is the last word: the pass is over, the job is simply hung. */
        { "results line last, hung 6m40s", GW_PHASE_VALIDATED, 400, NONE, NONE, 60, NONE, GW_RECLAIM_WARN,
          GW_RECLAIM_WHY_NONE, "not validating (validation finished: \"all        128        929",
          "no progress for 6m40s" },
        { "results line last, 1m40s", GW_PHASE_VALIDATED, 100, NONE, NONE, NONE, NONE, GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_RECENT, "kept: idle for 1m40s of 5m", "validation finished" },
        /* After the results line Ultralytics writes results.csv and the checkpoints. */
        { "results line last, checkpoint 10s ago", GW_PHASE_VALIDATED, 400, 10, NONE, 60, NONE, GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_PROTECTED, "kept: checkpoint written 14:49:50", NULL },
        { "first validation of the job, 20m", GW_PHASE_VALIDATING, 1200, NONE, 1200, NONE, NONE, GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_PROTECTED, "kept: validating per the log (for 20m; no earlier validation seen)", NULL },
        { "within 3x the longest", GW_PHASE_VALIDATING, 500, NONE, 500, 200, NONE, GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_PROTECTED, "(for 8m20s; the longest earlier validation took 3m20s)", "validating (\"Class" },
        { "exactly 3x the longest", GW_PHASE_VALIDATING, 600, NONE, 600, 200, NONE, GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_PROTECTED, "validating per the log", NULL },
        /* Short passes: 3x is not much, so the idle timeout bounds it from below too. */
        { "over 3x but within idle_timeout", GW_PHASE_VALIDATING, 250, NONE, 250, 60, NONE, GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_PROTECTED, "validating per the log", NULL },
        /* Overrun: the protection ends; the last protected sample was 5 s ago. */
        { "overrun, window just started", GW_PHASE_VALIDATING, 700, NONE, 700, 200, 5, GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_RECENT, "kept: idle for 5s of 5m",
          "validating for 11m40s, over 3x the longest earlier validation (3m20s), no longer "
          "protecting (\"Class" },
        { "overrun, window run out", GW_PHASE_VALIDATING, 1000, NONE, 1000, 200, 305, GW_RECLAIM_WARN,
          GW_RECLAIM_WHY_NONE, "WARNING idle for 5m5s", "no longer protecting" },
        /* The log still moves (a tqdm bar redrawing): progress, whatever the duration. */
        { "overrun but the bar moves", GW_PHASE_VALIDATING, 2, NONE, 1000, 200, 5, GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_RECENT, "kept: idle for 2s of 5m", "over 3x" },
        /* Start unknown (the daemon restarted mid-pass): only protect_max bounds it. */
        { "start unknown", GW_PHASE_VALIDATING, 1200, NONE, NONE, 200, NONE, GW_RECLAIM_KEEP, GW_RECLAIM_WHY_PROTECTED,
          "kept: validating per the log", NULL },
        { "start in the future", GW_PHASE_VALIDATING, 1200, NONE, -60, 200, NONE, GW_RECLAIM_KEEP,
          GW_RECLAIM_WHY_PROTECTED, "kept: validating per the log", NULL },
        /* protect_max still wins over a pass that is not (yet) an overrun. */
        { "protect_max over a first validation", GW_PHASE_VALIDATING, 7200, NONE, 7200, NONE, NONE, GW_RECLAIM_WARN,
          GW_RECLAIM_WHY_NONE, "validating line but no progress for 1h", "no longer protecting" },
        /* The timing is about validation: a saving line is protected as before. */
        { "saving line, long", GW_PHASE_SAVING, 1000, NONE, 1000, 10, NONE, GW_RECLAIM_KEEP, GW_RECLAIM_WHY_PROTECTED,
          "kept: saving per the log", NULL },
};

static void validation_table(void **state) {
        const gw_usec_t now = AT(3600); /* 14:50:00 */

        for (size_t i = 0; i < N_ELEMS(val_rows); i++) {
                const struct val_row *r = &val_rows[i];
                struct gw_reclaim_gpu g[2] = { GPU(0, true, 2, false), GPU(1, true, 2, false) };
                struct gw_job_obs o = {
                        .started_at = T0,
                        .gpus = g,
                        .n_gpus = 2,
                        .log_changed = ago(r->log_age, now),
                        .results_rows = 9,
                        /* the row before this pass, or older */
                        .results_changed = ago(r->log_age > 1500 ? r->log_age : 1500, now),
                        .loss = NAN,
                        .ckpt_mtime = ago(r->ckpt_age, now),
                        .phase = r->phase,
                        .phase_line = r->phase == GW_PHASE_VALIDATED ? all_line
                                      : r->phase == GW_PHASE_SAVING  ? "Saving model"
                                                                     : val_line,
                        .val_since = ago(r->val_since_ago, now),
                        .val_longest = r->val_longest == NONE ? 0 : r->val_longest * SEC,
                        .state = { .last_active = ago(r->last_active_ago, now) },
                };
                struct gw_reclaim_decision d;

                assert_int_equal(gw_reclaim_decide(&o, profile("default"), now, &d), 0);
                if (d.action != r->action || d.why != r->why)
                        fail_msg("%s: %s/%d, want %s/%d: %s", r->name, gw_reclaim_action_name(d.action), d.why,
                                 gw_reclaim_action_name(r->action), r->why, d.evidence);
                assert_contains(d.evidence, r->ev1);
                assert_contains(d.evidence, r->ev2);
        }
}

static void val_track(void **state) {
        struct gw_val_track t = { 0 };

        gw_val_track_step(&t, GW_PHASE_TRAINING, AT(10));
        assert_int_equal(t.since, 0);
        assert_int_equal(t.longest, 0);
        gw_val_track_step(&t, GW_PHASE_VALIDATING, AT(20)); /* first seen */
        gw_val_track_step(&t, GW_PHASE_VALIDATING, AT(25));
        assert_int_equal(t.since, AT(20));
        gw_val_track_step(&t, GW_PHASE_VALIDATED, AT(60)); /* results line: 40 s */
        assert_int_equal(t.since, 0);
        assert_int_equal(t.longest, 40 * SEC);
        gw_val_track_step(&t, GW_PHASE_VALIDATING, AT(100));
        gw_val_track_step(&t, GW_PHASE_TRAINING, AT(110)); /* shorter: longest stays */
        assert_int_equal(t.longest, 40 * SEC);
        gw_val_track_step(&t, GW_PHASE_VALIDATING, AT(200));
        gw_val_track_step(&t, GW_PHASE_UNKNOWN, AT(270));
        assert_int_equal(t.longest, 70 * SEC);
        gw_val_track_step(&t, GW_PHASE_SAVING, AT(300));
        assert_int_equal(t.since, 0);
        gw_val_track_step(NULL, GW_PHASE_VALIDATING, AT(1)); /* no crash */
}

/* An epoch every 600 s: train at 90% until :540, validate at 60% until :600 (its bar, then
 * the results line), the results.csv row at :600.  Hangs at hang_at (util 0, nothing more
 * written), in the middle of a pass or right after one. */
static void epochs_then_hang(long t, long hang_at, struct gw_job_obs *o, struct gw_reclaim_gpu *g) {
        long s = t < hang_at ? t : hang_at, in = s % 600;

        util(g, t >= hang_at ? 0 : in < 540 ? 90 : 60);
        o->log_changed = AT(s);
        o->results_rows = s / 600;
        o->results_changed = s >= 600 ? AT(s / 600 * 600) : 0;
        o->phase = in >= 540 ? GW_PHASE_VALIDATING : s >= 600 && in == 0 ? GW_PHASE_VALIDATED : GW_PHASE_TRAINING;
        o->phase_line = o->phase == GW_PHASE_VALIDATING  ? val_line
                        : o->phase == GW_PHASE_VALIDATED ? all_line
                                                         : "5/50 ...";
}

static void validation_lives(void **state) {
        static const struct {
                const char *name;
                long hang_at, warn, term, kill;
        } cases[] = {
                /* Right after epoch 5's results line (before its results.csv row): the last
                 * busy sample is 2995; warned 300 s after the hang, not an hour later. */
                { "hung after the results line", 3000, 3300, 3360, 3390 },
                /* Halfway through epoch 5's pass (began 2940, earlier ones 60 s): protected
                 * until it has lasted > 300 s (3245), then the usual window from 3240. */
                { "hung mid-validation", 2970, 3540, 3600, 3630 },
        };

        for (size_t i = 0; i < N_ELEMS(cases); i++) {
                struct gw_reclaim_state st = { 0 };
                struct gw_val_track vt = { 0 };
                struct gw_reclaim_decision d = { 0 };
                long warn = NONE, term = NONE, kill = NONE;

                for (long t = 0; t <= 8000 && kill == NONE; t += 5) {
                        struct gw_reclaim_gpu g[2] = { GPU(0, true, 0, false), GPU(1, true, 0, false) };
                        struct gw_job_obs o = { .started_at = T0, .gpus = g, .n_gpus = 2, .loss = NAN };

                        epochs_then_hang(t, cases[i].hang_at, &o, g);
                        gw_val_track_step(&vt, o.phase, AT(t));
                        o.val_since = vt.since;
                        o.val_longest = vt.longest;
                        o.state = st;
                        assert_int_equal(gw_reclaim_decide(&o, profile("default"), AT(t), &d), 0);
                        if (d.action == GW_RECLAIM_WARN)
                                warn = t;
                        if (d.action == GW_RECLAIM_TERMINATE)
                                term = t;
                        if (d.action == GW_RECLAIM_KILL)
                                kill = t;
                        st = d.next;
                }
                if (warn != cases[i].warn || term != cases[i].term || kill != cases[i].kill)
                        fail_msg("%s: warn %ld term %ld kill %ld, want %ld %ld %ld", cases[i].name, warn, term, kill,
                                 cases[i].warn, cases[i].term, cases[i].kill);
                assert_int_equal(vt.longest, 60 * SEC);
        }
}

/* ---- policies and arguments ---- */

static void profiles(void **state) {
        const struct gw_reclaim_policy *p = profile("default");
        struct gw_reclaim_policy table[2] = { *profile("hpo"), *p };

        assert_int_equal(gw_reclaim_profiles_n, 3);
        assert_true(p->enabled);
        assert_int_equal(p->util_threshold, 5);
        assert_int_equal(p->idle_timeout, 300 * SEC);
        assert_int_equal(p->warn, 60 * SEC);
        assert_int_equal(p->grace, 30 * SEC);
        assert_int_equal(profile("hpo")->idle_timeout, 180 * SEC);
        assert_false(profile("finetune")->enabled);
        assert_null(gw_reclaim_policy_find(NULL, 0, "Default")); /* exact names */
        assert_null(gw_reclaim_policy_find(NULL, 0, NULL));
        for (size_t i = 0; i < gw_reclaim_profiles_n; i++)
                assert_int_equal(gw_reclaim_policy_check(&gw_reclaim_profiles[i]), 0);

        /* A config's table: its own values, found by name. */
        snprintf(table[0].name, sizeof(table[0].name), "night");
        table[0].idle_timeout = 60 * SEC;
        assert_ptr_equal(gw_reclaim_policy_find(table, 2, "night"), &table[0]);
        assert_ptr_equal(gw_reclaim_policy_find(table, 2, "default"), &table[1]);
        assert_null(gw_reclaim_policy_find(table, 2, "hpo"));
        assert_null(gw_reclaim_policy_find(table, 1, "default"));

        struct gw_reclaim_policy bad = *p;
        bad.util_threshold = 101;
        assert_int_equal(gw_reclaim_policy_check(&bad), -EINVAL);
        bad = *p;
        bad.idle_timeout = 0;
        assert_int_equal(gw_reclaim_policy_check(&bad), -EINVAL);
        bad.enabled = false; /* a disabled policy needs no timeout */
        assert_int_equal(gw_reclaim_policy_check(&bad), 0);
        bad = *p;
        bad.grace = -1;
        assert_int_equal(gw_reclaim_policy_check(&bad), -EINVAL);
        bad = *p;
        bad.name[0] = '\0';
        assert_int_equal(gw_reclaim_policy_check(&bad), -EINVAL);
        assert_int_equal(gw_reclaim_policy_check(NULL), -EINVAL);

        assert_string_equal(gw_reclaim_action_name(GW_RECLAIM_TERMINATE), "terminate");
        assert_null(gw_reclaim_action_name(_GW_RECLAIM_ACTION_MAX));
        assert_null(gw_reclaim_action_name(_GW_RECLAIM_ACTION_INVALID));
}

static void bad_arguments(void **state) {
        struct gw_reclaim_gpu g[1] = { GPU(0, true, 0, false) };
        struct gw_job_obs o = { .started_at = T0, .gpus = g, .n_gpus = 1, .loss = NAN };
        struct gw_reclaim_policy bad = *profile("default");
        struct gw_reclaim_decision d;

        memset(&d, 0x5a, sizeof(d));
        bad.util_threshold = 200;
        assert_int_equal(gw_reclaim_decide(NULL, profile("default"), AT(1), &d), -EINVAL);
        assert_int_equal(gw_reclaim_decide(&o, NULL, AT(1), &d), -EINVAL);
        assert_int_equal(gw_reclaim_decide(&o, profile("default"), AT(1), NULL), -EINVAL);
        assert_int_equal(gw_reclaim_decide(&o, &bad, AT(1), &d), -EINVAL);
        o.gpus = NULL;
        assert_int_equal(gw_reclaim_decide(&o, profile("default"), AT(1), &d), -EINVAL);
        o.gpus = g;
        o.started_at = 0;
        assert_int_equal(gw_reclaim_decide(&o, profile("default"), AT(1), &d), -EINVAL);
        assert_int_equal(d.evidence[0], 0x5a); /* out untouched on failure */

        /* No GPUs at all (nothing to hold): the other signals still decide. */
        o.started_at = T0;
        o.n_gpus = 0;
        o.results_rows = -1;
        assert_int_equal(gw_reclaim_decide(&o, profile("default"), AT(400), &d), 0);
        assert_int_equal(d.action, GW_RECLAIM_WARN);
        assert_contains(d.evidence, "no GPUs, no progress for 6m40s (no log output)");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(decision_table),
                cmocka_unit_test(issue_example),
                cmocka_unit_test(whole_lives),
                cmocka_unit_test(hung_evidence),
                cmocka_unit_test(evidence_stays_utf8),
                cmocka_unit_test(validation_table),
                cmocka_unit_test(val_track),
                cmocka_unit_test(validation_lives),
                cmocka_unit_test(profiles),
                cmocka_unit_test(bad_arguments),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
