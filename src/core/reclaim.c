#include "core/reclaim.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "base/text.h"

#define SEC GW_USEC_PER_SEC

const struct gw_reclaim_policy gw_reclaim_profiles[] = {
        { "default", true, 5, 300 * SEC, 60 * SEC, 30 * SEC, 3600 * SEC },
        { "hpo", true, 5, 180 * SEC, 60 * SEC, 30 * SEC, 3600 * SEC },
        /* Fine-tuning runs sit at low utilisation for long stretches by design (small data,
         * frozen layers, human-in-the-loop evaluation): admins decide who may opt out. */
        { "finetune", false, 5, 300 * SEC, 60 * SEC, 30 * SEC, 3600 * SEC },
};
const size_t gw_reclaim_profiles_n = ELEMENTSOF(gw_reclaim_profiles);

const struct gw_reclaim_policy *gw_reclaim_policy_find(const struct gw_reclaim_policy *table, size_t n,
                                                       const char *name) {
        if (!table) {
                table = gw_reclaim_profiles;
                n = gw_reclaim_profiles_n;
        }
        if (!name)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (strcmp(table[i].name, name) == 0)
                        return &table[i];
        return NULL;
}

int gw_reclaim_policy_check(const struct gw_reclaim_policy *p) {
        if (!p || p->name[0] == '\0' || !memchr(p->name, '\0', sizeof(p->name)))
                return -EINVAL;
        if (p->util_threshold > 100 || p->warn < 0 || p->grace < 0 || p->protect_max < 0 || p->idle_timeout < 0)
                return -EINVAL;
        if (p->enabled && p->idle_timeout == 0)
                return -EINVAL;
        return 0;
}

const char *gw_reclaim_action_name(enum gw_reclaim_action a) {
        static const char *const names[_GW_RECLAIM_ACTION_MAX] = {
                [GW_RECLAIM_KEEP] = "keep",
                [GW_RECLAIM_WARN] = "warn",
                [GW_RECLAIM_TERMINATE] = "terminate",
                [GW_RECLAIM_KILL] = "kill",
        };
        if ((int) a < 0 || a >= _GW_RECLAIM_ACTION_MAX)
                return NULL;
        return names[a];
}

/* ---- evidence text ---- */

struct text {
        char *p;
        size_t cap, len;
};

__attribute__((format(printf, 2, 3))) static void add(struct text *t, const char *fmt, ...) {
        va_list ap;
        int r;

        if (t->len + 1 >= t->cap)
                return;
        va_start(ap, fmt);
        r = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        /* Truncated evidence is still evidence: keep what fits. */
        if (r > 0)
                t->len = t->len + (size_t) r < t->cap ? t->len + (size_t) r : t->cap - 1;
}

/* After vsnprintf cut the whole text short, drop a character it cut in two. */
static void utf8_fix_tail(struct text *t) {
        size_t i = t->len, need;

        while (i > 0 && t->len - i < 4 && ((unsigned char) t->p[i - 1] & 0xc0) == 0x80)
                i--;
        if (i == 0 || ((unsigned char) t->p[i - 1] & 0x80) == 0)
                return;
        unsigned char lead = (unsigned char) t->p[i - 1];
        need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
        if (t->len - (i - 1) < need) {
                t->len = i - 1;
                t->p[t->len] = '\0';
        }
}

/* Wall-clock instant as HH:MM:SS at utc_offset seconds east of UTC.  Plain arithmetic, no
 * localtime(): the core reads no time zone database, and tests get the same text anywhere. */
static const char *clock_str(gw_usec_t t, long utc_offset, char buf[static 9]) {
        long long s = (long long) (t / SEC) + utc_offset;

        s %= 86400;
        if (s < 0)
                s += 86400;
        (void) snprintf(buf, 9, "%02lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
        return buf;
}

static const char *dur_str(gw_usec_t d, char buf[static 24]) { return gw_format_duration(d < 0 ? 0 : d, buf, 24); }

/* ---- the facts derived from one observation ---- */

struct facts {
        gw_usec_t now;
        gw_usec_t last_progress; /* newest progress instant, at least started_at */
        bool gpu_busy;
        const struct gw_reclaim_gpu *busy_gpu; /* the first busy one, for the reason */
        bool log_protected; /* validating/saving line still within protect_max */
        bool log_protect_expired; /* a protected line, but too old to protect */
        bool val_overrun; /* validating far longer than the job's earlier passes */
        bool ckpt_protected;
        bool active; /* gpu_busy || log_protected || ckpt_protected */
        gw_usec_t idle_since; /* 0 when active */
};

/* Instants from files or other clocks may lie in the future: take them as now. */
static gw_usec_t clamp(gw_usec_t t, gw_usec_t now) { return t > now ? now : t; }

static gw_usec_t max_t(gw_usec_t a, gw_usec_t b) { return a > b ? a : b; }

/* Whether the job has shown any progress of its own since it started.  Not log_changed alone:
 * the log file is made at the start, so its first mtime says nothing about the job. */
static bool has_progressed(const struct gw_job_obs *o) {
        return (o->log_size > 0 && o->log_changed > 0) || o->results_rows > 0 || o->progress_changed > 0 ||
               o->loss_changed > 0;
}

static bool gpu_is_busy(const struct gw_reclaim_gpu *g, unsigned threshold, bool progressed) {
        /* A slice has no utilisation to read: its processes stand in, but a job that has not
         * progressed yet (loading data, compiling) gives no way to tell work from a hang. */
        if (g->mig && g->util_valid) /* GPM's SM activity: a utilisation, as on a whole GPU */
                return !g->procs_valid || g->other_busy || g->util >= threshold;
        if (g->mig)
                return !g->procs_valid || g->other_busy || (g->n_procs > 0 && !progressed);
        /* No reading is not "0%": never reclaim on missing data. */
        return !g->util_valid || g->other_busy || g->util >= threshold;
}

static bool any_mig_proc(const struct gw_job_obs *o) {
        for (size_t i = 0; i < o->n_gpus; i++)
                if (o->gpus[i].mig && o->gpus[i].n_procs > 0)
                        return true;
        return false;
}

/* How long the validation now shown has lasted; 0 when its start is unknown. */
static gw_usec_t val_age(const struct gw_job_obs *o, gw_usec_t now) {
        return o->val_since > 0 ? now - clamp(o->val_since, now) : 0;
}

static bool val_overrun(const struct gw_job_obs *o, const struct gw_reclaim_policy *p, gw_usec_t now) {
        gw_usec_t age = val_age(o, now);

        /* No earlier pass seen (the first validation, a daemon restart): nothing to compare
         * with, only protect_max applies. */
        if (o->val_longest <= 0 || age == 0)
                return false;
        return age > GW_RECLAIM_VAL_OVERRUN * o->val_longest && age > p->idle_timeout;
}

void gw_val_track_step(struct gw_val_track *t, enum gw_phase phase, gw_usec_t now) {
        if (!t)
                return;
        if (phase == GW_PHASE_VALIDATING) {
                if (t->since == 0)
                        t->since = now;
                return;
        }
        if (t->since > 0 && now - t->since > t->longest)
                t->longest = now - t->since;
        t->since = 0;
}

static void derive(const struct gw_job_obs *o, const struct gw_reclaim_policy *p, gw_usec_t now, struct facts *f) {
        bool phase_protects = o->phase == GW_PHASE_VALIDATING || o->phase == GW_PHASE_SAVING;

        *f = (struct facts){ .now = now };
        f->last_progress = clamp(o->started_at, now);
        f->last_progress = max_t(f->last_progress, clamp(o->log_changed, now));
        f->last_progress = max_t(f->last_progress, clamp(o->results_changed, now));
        f->last_progress = max_t(f->last_progress, clamp(o->progress_changed, now));
        f->last_progress = max_t(f->last_progress, clamp(o->loss_changed, now));

        bool progressed = has_progressed(o);

        for (size_t i = 0; i < o->n_gpus; i++)
                if (gpu_is_busy(&o->gpus[i], p->util_threshold, progressed)) {
                        f->gpu_busy = true;
                        f->busy_gpu = &o->gpus[i];
                        break;
                }
        if (phase_protects) {
                if (p->protect_max > 0 && now - f->last_progress >= p->protect_max)
                        f->log_protect_expired = true;
                else if (o->phase == GW_PHASE_VALIDATING && val_overrun(o, p, now))
                        f->val_overrun = true;
                else
                        f->log_protected = true;
        }
        f->ckpt_protected = o->ckpt_mtime > 0 && now - clamp(o->ckpt_mtime, now) < p->grace;
        f->active = f->gpu_busy || f->log_protected || f->ckpt_protected;
        if (!f->active)
                f->idle_since = max_t(clamp(o->state.last_active, now), f->last_progress);
}

#define GIB 1073741824.0

static const char *slice_name(const struct gw_reclaim_gpu *g) { return g->uuid && *g->uuid ? g->uuid : "a MIG slice"; }

/* "no process on MIG-... for 5m12s" or "1 process of the job on MIG-...", each slice; a
 * slice with a GPM figure leads with it: "GPM SM activity 0% on MIG-... (threshold 5%)". */
static void add_slices(struct text *t, const struct gw_job_obs *o, const struct gw_reclaim_policy *p, gw_usec_t now) {
        gw_usec_t seen = max_t(clamp(o->started_at, now), clamp(o->state.last_proc, now));
        const char *sep = "";
        char d[24];
        bool unmeasured = false;

        for (size_t i = 0; i < o->n_gpus; i++)
                unmeasured |= o->gpus[i].mig && !o->gpus[i].util_valid;
        if (unmeasured)
                add(t, "no utilisation on a MIG slice: judged by its processes and training progress; ");
        for (size_t i = 0; i < o->n_gpus; i++, sep = ", ") {
                const struct gw_reclaim_gpu *g = &o->gpus[i];

                if (!g->mig)
                        continue;
                if (g->util_valid) {
                        add(t, "%sGPM SM activity %u%% on %s (threshold %u%%), ", sep, g->util, slice_name(g),
                            p->util_threshold);
                        sep = "";
                }
                if (!g->procs_valid)
                        add(t, "%sprocesses on %s unknown (counted as busy)", sep, slice_name(g));
                else if (g->n_procs == 0)
                        add(t, "%sno process on %s for %s", sep, slice_name(g), dur_str(now - seen, d));
                else
                        add(t, "%s%u process%s of the job on %s", sep, g->n_procs, g->n_procs == 1 ? "" : "es",
                            slice_name(g));
                if (g->procs_valid && g->mem_valid)
                        add(t, " (memory %.1f of %.1f GiB)", (double) g->mem_used / GIB, (double) g->mem_total / GIB);
                if (g->other_busy)
                        add(t, ", %s used by another process (counted as busy)", slice_name(g));
        }
}

/* "GPU 0,1 util 0%/0% (threshold 5%)" and who else uses them; MIG slices by their own
 * signals, with no utilisation figure. */
static void add_gpus(struct text *t, const struct gw_job_obs *o, const struct gw_reclaim_policy *p, gw_usec_t now) {
        bool other = false, any_mig = false;
        size_t whole = 0;

        for (size_t i = 0; i < o->n_gpus; i++) {
                any_mig |= o->gpus[i].mig;
                whole += !o->gpus[i].mig;
        }
        if (o->n_gpus == 0) {
                add(t, "no GPUs");
                return;
        }
        if (any_mig) {
                add_slices(t, o, p, now);
                if (whole == 0)
                        return;
                add(t, ", ");
        }
        add(t, "GPU ");
        for (size_t i = 0, k = 0; i < o->n_gpus; i++)
                if (!o->gpus[i].mig)
                        add(t, "%s%d", k++ ? "," : "", o->gpus[i].index);
        add(t, " util ");
        for (size_t i = 0, k = 0; i < o->n_gpus; i++) {
                if (o->gpus[i].mig)
                        continue;
                if (o->gpus[i].util_valid)
                        add(t, "%s%u%%", k++ ? "/" : "", o->gpus[i].util);
                else
                        add(t, "%s?", k++ ? "/" : "");
                other |= o->gpus[i].other_busy;
        }
        add(t, " (threshold %u%%)", p->util_threshold);
        if (!other)
                return;
        add(t, ", GPU ");
        for (size_t i = 0, k = 0; i < o->n_gpus; i++)
                if (o->gpus[i].other_busy && !o->gpus[i].mig)
                        add(t, "%s%d", k++ ? "," : "", o->gpus[i].index);
        add(t, " used by another process (counted as busy)");
}

/* "no progress for 5m12s (log unchanged since 14:02:11, results.csv 37 rows since 13:58:40)" */
static void add_progress(struct text *t, const struct gw_job_obs *o, const struct facts *f) {
        char d[24], c[9];
        const char *sep = "";

        add(t, "no progress for %s (", dur_str(f->now - f->last_progress, d));
        if (o->log_changed > 0)
                add(t, "log unchanged since %s", clock_str(o->log_changed, o->utc_offset, c));
        else
                add(t, "no log output");
        sep = ", ";
        if (o->results_rows >= 0) {
                add(t, "%sresults.csv %ld rows", sep, o->results_rows);
                if (o->results_changed > 0)
                        add(t, " since %s", clock_str(o->results_changed, o->utc_offset, c));
        }
        if (o->progress_changed > 0)
                add(t, "%sprogress file unchanged since %s", sep, clock_str(o->progress_changed, o->utc_offset, c));
        if (isfinite(o->loss) && o->loss_changed > 0)
                add(t, "%sloss %.4g since %s", sep, o->loss, clock_str(o->loss_changed, o->utc_offset, c));
        add(t, ")");
        if (o->probe == GW_PROBE_FAIL)
                add(t, ", health probe failing%s%s%s", o->probe_detail ? " (" : "",
                    o->probe_detail ? o->probe_detail : "", o->probe_detail ? ")" : "");
        else if (o->probe == GW_PROBE_PASS)
                add(t, ", health probe passing (not enough to keep a job)");
}

/* "not validating, not saving", or the protecting evidence. */
static void add_phase(struct text *t, const struct gw_job_obs *o, const struct facts *f) {
        const char *line = o->phase_line ? o->phase_line : "";
        bool done = o->phase == GW_PHASE_VALIDATED;
        char c[9], d[24], d2[24], q[80 + 3];

        /* A log line is as private as the log: marked, so that only those who may read the
         * log are shown it (the job's events and its reason reach every user). */
        gw_text_private_wrap(q, sizeof q, line);
        if (f->log_protected)
                add(t, "%s (\"%s\")", gw_phase_name(o->phase), q);
        else if (f->log_protect_expired)
                add(t, "%s line but no progress for %s, no longer protecting (\"%s\")", gw_phase_name(o->phase),
                    dur_str(f->now - f->last_progress, d), q);
        else if (f->val_overrun)
                add(t,
                    "validating for %s, over %dx the longest earlier validation (%s), no "
                    "longer protecting (\"%s\")",
                    dur_str(val_age(o, f->now), d), GW_RECLAIM_VAL_OVERRUN, dur_str(o->val_longest, d2), q);
        else if (done)
                add(t, "not validating (validation finished: \"%s\")", q);
        else
                add(t, "not validating");
        if (f->ckpt_protected)
                add(t, ", saving (checkpoint written %s)", clock_str(o->ckpt_mtime, o->utc_offset, c));
        else if (!f->log_protected || o->phase != GW_PHASE_SAVING)
                add(t, ", not saving");
        if (!f->log_protected && !f->log_protect_expired && !f->val_overrun && !done && *line)
                add(t, ", last log line \"%s\"", q);
}

static void add_signals(struct text *t, const struct gw_job_obs *o, const struct gw_reclaim_policy *p,
                        const struct facts *f) {
        add_gpus(t, o, p, f->now);
        add(t, ", ");
        add_progress(t, o, f);
        add(t, ", ");
        add_phase(t, o, f);
}

/* "validating per the log (for 1m10s; the longest earlier validation took 40s)" */
static void add_protected_reason(struct text *t, const struct gw_job_obs *o, const struct facts *f) {
        gw_usec_t age = val_age(o, f->now);
        char d[24], d2[24];

        add(t, "%s per the log", gw_phase_name(o->phase));
        if (o->phase != GW_PHASE_VALIDATING || age == 0)
                return;
        if (o->val_longest > 0)
                add(t, " (for %s; the longest earlier validation took %s)", dur_str(age, d),
                    dur_str(o->val_longest, d2));
        else
                add(t, " (for %s; no earlier validation seen)", dur_str(age, d));
}

/* The reason an active job is kept, first signal first. */
static void add_active_reason(struct text *t, const struct gw_job_obs *o, const struct gw_reclaim_policy *p,
                              const struct facts *f) {
        char c[9];
        const struct gw_reclaim_gpu *g = f->busy_gpu;

        if (g && g->mig && !g->procs_valid)
                add(t, "processes on %s unknown (%scounted as busy)", slice_name(g),
                    g->util_valid ? "" : "no utilisation on a MIG slice; ");
        else if (g && g->mig && g->other_busy)
                add(t, "%s used by another process (counted as busy)", slice_name(g));
        else if (g && g->mig && g->util_valid)
                add(t, "GPM SM activity %u%% on %s (>= %u%%)", g->util, slice_name(g), p->util_threshold);
        else if (g && g->mig)
                add(t,
                    "%u process%s of the job on %s and no training progress yet (no "
                    "utilisation on a MIG slice; counted as busy)",
                    g->n_procs, g->n_procs == 1 ? "" : "es", slice_name(g));
        else if (g && !g->util_valid)
                add(t, "GPU %d utilisation unknown (counted as busy)", g->index);
        else if (g && g->util >= p->util_threshold)
                add(t, "GPU %d busy (%u%% >= %u%%)", g->index, g->util, p->util_threshold);
        else if (g)
                add(t, "GPU %d used by another process (counted as busy)", g->index);
        else if (f->log_protected)
                add_protected_reason(t, o, f);
        else
                add(t, "checkpoint written %s (within grace %llds)", clock_str(o->ckpt_mtime, o->utc_offset, c),
                    (long long) (p->grace / SEC));
}

/* ---- the decision ---- */

/* After SIGTERM: only the clock matters (see reclaim.h). */
static void decide_terminating(const struct gw_job_obs *o, const struct gw_reclaim_policy *p, gw_usec_t now,
                               struct gw_reclaim_decision *d, struct text *t) {
        char c[9], c2[9], dd[24], dg[24];
        gw_usec_t since = now - clamp(o->state.term_at, now);

        if (since >= p->grace) {
                d->action = GW_RECLAIM_KILL;
                add(t, "KILL: still running %s after SIGTERM %s (grace %s)", dur_str(since, dd),
                    clock_str(o->state.term_at, o->utc_offset, c), dur_str(p->grace, dg));
        } else {
                d->why = GW_RECLAIM_WHY_TERMINATING;
                add(t, "terminating: SIGTERM %s, SIGKILL at %s if still running",
                    clock_str(o->state.term_at, o->utc_offset, c),
                    clock_str(o->state.term_at + p->grace, o->utc_offset, c2));
        }
}

int gw_reclaim_decide(const struct gw_job_obs *obs, const struct gw_reclaim_policy *p, gw_usec_t now,
                      struct gw_reclaim_decision *out) {
        struct gw_reclaim_decision d = { .action = GW_RECLAIM_KEEP };
        struct text t = { .p = d.evidence, .cap = sizeof(d.evidence) };
        struct facts f;
        char c[9], c2[9], dd[24], dt[24];

        if (!obs || !out || gw_reclaim_policy_check(p) < 0 || (!obs->gpus && obs->n_gpus) || obs->started_at <= 0)
                return -EINVAL;

        d.next = obs->state;
        if (obs->state.term_at > 0) {
                decide_terminating(obs, p, now, &d, &t);
                *out = d;
                return 0;
        }
        derive(obs, p, now, &f);
        d.idle_since = f.idle_since;
        d.idle_for = f.active ? 0 : now - f.idle_since;
        d.next.last_active = f.active ? now : obs->state.last_active;
        if (any_mig_proc(obs))
                d.next.last_proc = now;

        if (!p->enabled) {
                /* Fresh window and no warning, should an admin switch the policy back on. */
                d.why = GW_RECLAIM_WHY_DISABLED;
                d.warning_cleared = obs->state.warned_at > 0;
                d.next = (struct gw_reclaim_state){ .last_active = now, .last_proc = d.next.last_proc };
                add(&t, "kept: reclamation off (policy %s); ", p->name);
        } else if (now - clamp(obs->started_at, now) < p->idle_timeout) {
                d.why = GW_RECLAIM_WHY_YOUNG;
                add(&t, "kept: young, started %s ago (idle timeout %s); ", dur_str(now - obs->started_at, dd),
                    dur_str(p->idle_timeout, dt));
        } else if (f.active || d.idle_for < p->idle_timeout) {
                d.why = f.active ? (f.gpu_busy ? GW_RECLAIM_WHY_BUSY : GW_RECLAIM_WHY_PROTECTED)
                                 : GW_RECLAIM_WHY_RECENT;
                add(&t, "kept: ");
                if (f.active)
                        add_active_reason(&t, obs, p, &f);
                else
                        add(&t, "idle for %s of %s", dur_str(d.idle_for, dd), dur_str(p->idle_timeout, dt));
                if (obs->state.warned_at > 0)
                        add(&t, ", activity resumed after the warning at %s",
                            clock_str(obs->state.warned_at, obs->utc_offset, c));
                add(&t, "; ");
        } else if (obs->state.warned_at == 0) {
                d.action = GW_RECLAIM_WARN;
                d.next.warned_at = now;
                add(&t, "WARNING idle for %s: ", dur_str(d.idle_for, dd));
        } else if (now - clamp(obs->state.warned_at, now) >= p->warn && d.idle_for >= p->idle_timeout + p->warn) {
                d.action = GW_RECLAIM_TERMINATE;
                d.next.term_at = now;
                add(&t, "idle for %s: ", dur_str(d.idle_for, dd));
        } else {
                d.why = GW_RECLAIM_WHY_WARNED;
                add(&t, "kept: warned %s, SIGTERM at %s unless it resumes; idle %s: ",
                    clock_str(obs->state.warned_at, obs->utc_offset, c),
                    clock_str(max_t(obs->state.warned_at + p->warn, f.idle_since + p->idle_timeout + p->warn),
                              obs->utc_offset, c2),
                    dur_str(d.idle_for, dd));
        }
        /* Any KEEP other than "warned, waiting" means the job was not idle long enough: an
         * outstanding warning no longer applies. */
        if (d.action == GW_RECLAIM_KEEP && d.why != GW_RECLAIM_WHY_WARNED && d.next.warned_at) {
                d.warning_cleared = true;
                d.next.warned_at = 0;
        }
        add_signals(&t, obs, p, &f);
        if (d.action == GW_RECLAIM_WARN)
                add(&t, "; SIGTERM in %s unless it resumes", dur_str(p->warn, dt));
        else if (d.action == GW_RECLAIM_TERMINATE)
                add(&t, "; warned %s", clock_str(obs->state.warned_at, obs->utc_offset, c));
        utf8_fix_tail(&t);
        *out = d;
        return 0;
}
