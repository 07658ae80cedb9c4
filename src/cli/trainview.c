/* How the CLI shows training awareness (see trainview.h). */
#include "cli/trainview.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "cli/format.h"

char *cli_format_eta(double eta, time_t now, char *buf, size_t n) {
        if (!isfinite(eta) || eta <= 0)
                return cli_format_secs(NAN, buf, n);
        return cli_format_secs(eta > (double) now ? eta - (double) now : 0, buf, n);
}

char *cli_format_end(double eta, time_t now, char *buf, size_t n) {
        if (!isfinite(eta) || eta <= 0) {
                snprintf(buf, n, "-");
                return buf;
        }
        time_t t = (time_t) eta;
        struct tm a, b;
        char s[32];
        if (!localtime_r(&t, &a) || !localtime_r(&now, &b))
                snprintf(s, sizeof s, "?");
        else
                strftime(s, sizeof s, a.tm_yday == b.tm_yday && a.tm_year == b.tm_year ? "%H:%M" : "%m-%d %H:%M", &a);
        snprintf(buf, n, "~%s", s);
        return buf;
}

char *cli_format_start_cell(const json_t *job, time_t now, char *buf, size_t n) {
        const char *state = cli_jstr(job, "state");
        bool pending = state && !strcmp(state, "PENDING");
        /* Pending: when it is predicted to start; running or ended: when it started, a fact. */
        bool started = state && !pending && strcmp(state, "HELD");
        double t = cli_jnum(job, pending ? "predicted_start" : "start_time");
        /* No future time to give: what it waits for ("after job 12 is released"). */
        const char *words = pending ? cli_jstr(job, "predicted_wait") : NULL;
        if (words && *words && (!isfinite(t) || t <= 0)) {
                snprintf(buf, n, "%s", words);
                return buf;
        }
        if (!state || !isfinite(t) || t <= 0 || (!pending && !started)) {
                snprintf(buf, n, "-");
                return buf;
        }
        cli_format_end(t, now, buf, n);
        if (started && buf[0] == '~')
                memmove(buf, buf + 1, strlen(buf));
        /* Pending: the promise beside the estimate, "~01:03, latest 01:30"; "by 01:30" when
         * they are the same minute (nothing says sooner than the limits). */
        double latest = pending ? cli_jnum(job, "latest_start") : NAN;
        if (isfinite(latest) && latest > 0) {
                char l[40];
                cli_format_end(latest, now, l, sizeof l);
                size_t len = strlen(buf);
                if (!strcmp(l, buf))
                        snprintf(buf, n, "by %s", l + 1);
                else
                        snprintf(buf + len, n - len, ", latest %s", l + (l[0] == '~'));
        }
        return buf;
}

/* The daemon's why_none for a queued job no prediction has covered yet (just submitted). */
#define NOT_YET "not predicted yet: "

/* "predicted start ~14:20 (in 1h12m, an estimate from ETAs), at the latest 14:45 if every job
 * keeps its time limit, runs ~2h: the median of 3 similar past jobs (12, 15, 19)": the
 * estimate may move (a job ends early or late, another backfills), the promise only if a job
 * overruns its limit or one is queued ahead. */
static void prediction_line(const json_t *pr, time_t now) {
        char when[40], in[32], len[32], latest_s[40];
        double start = cli_jnum(pr, "predicted_start"), secs = cli_jnum(pr, "runtime_seconds");
        double latest = cli_jnum(pr, "latest_start");
        const char *why = cli_jstr(pr, "why_none"), *from = cli_jstr(pr, "runtime_from");
        const json_t *ids = json_object_get(pr, "similar_jobs");
        if (isfinite(start)) {
                printf("  predicted start %s (in %s, an estimate from ETAs)",
                       cli_format_end(start, now, when, sizeof when), cli_format_eta(start, now, in, sizeof in));
                cli_format_end(latest, now, latest_s, sizeof latest_s);
                if (isfinite(latest) && !strcmp(latest_s, when))
                        printf(", and at the latest if every job keeps its time limit (nothing says sooner)");
                else if (isfinite(latest))
                        printf(", at the latest %s if every job keeps its time limit", latest_s + (latest_s[0] == '~'));
        } else if (cli_jstr(pr, "predicted_wait"))
                printf("  predicted start: %s", cli_jstr(pr, "predicted_wait")); /* no time to give */
        else if (why && !strncmp(why, NOT_YET, strlen(NOT_YET)))
                printf("  predicted start: not predicted yet (%s)", why + strlen(NOT_YET)); /* no verdict yet */
        else
                printf("  predicted start: none (%s)", why ? why : "unknown");
        printf(", runs ~%s: ", cli_format_secs(secs, len, sizeof len));
        if (from && !strcmp(from, "history")) {
                printf("the median of %zu similar past job%s (", json_array_size(ids),
                       json_array_size(ids) == 1 ? "" : "s");
                size_t i;
                const json_t *id;
                json_array_foreach (ids, i, id) {
                        if (i == 8) {
                                printf(", \xe2\x80\xa6");
                                break;
                        }
                        printf("%s%lld", i ? ", " : "", (long long) json_integer_value(id));
                }
                printf(")\n");
        } else if (json_array_size(ids))
                printf("its time limit (the median of %zu similar past jobs is longer)\n", json_array_size(ids));
        else
                printf("its time limit (no similar past job: same command, epochs=, imgsz=, batch=)\n");
}

/* "epoch 37/100   ETA 2h14m ± 6m (ends ~16:52)   2m08s/epoch" */
/* The section's title, once, before its first line: a finished job may have none to show. */
static void title(bool *shown) {
        if (!*shown)
                printf("\nTraining:\n");
        *shown = true;
}

void cli_print_eta_ends(double eta, double err, time_t now) {
        char left[64], bar[64], end[64];
        printf("%s", cli_format_eta(eta, now, left, sizeof left));
        if (isfinite(err) && err >= 1)
                printf(" \xc2\xb1 %s", cli_format_secs(err, bar, sizeof bar));
        printf(" (ends %s)", cli_format_end(eta, now, end, sizeof end));
}

static void epoch_line(const json_t *tr, time_t now, bool *shown) {
        long long done, total;
        char eta[32], end[40], spe[32];
        bool has_done = cli_jint(tr, "epoch", &done), has_total = cli_jint(tr, "epochs", &total);
        double e = cli_jnum(tr, "eta"), er = cli_jnum(tr, "error_seconds"), s = cli_jnum(tr, "sec_per_epoch");
        if (!has_done && !isfinite(s))
                return;
        title(shown);
        printf("  epoch %lld/", has_done ? done : 0);
        if (has_total)
                printf("%lld", total);
        else
                printf("?");
        double late = cli_jnum(tr, "overdue_seconds");
        if (isfinite(e) && isfinite(late))
                printf("   ETA overdue by %s (the run was due to end %s)", cli_format_secs(late, eta, sizeof eta),
                       cli_format_end(e, now, end, sizeof end));
        else if (isfinite(e)) {
                printf("   ETA ");
                cli_print_eta_ends(e, er, now);
        } else
                printf("   ETA -");
        if (isfinite(s))
                printf("   %s/epoch", cli_format_secs(s, spe, sizeof spe));
        printf("\n");
}

static void leak_line(const json_t *tr, bool *shown) {
        const json_t *leak = json_object_get(tr, "leak");
        if (!json_is_true(json_object_get(leak, "detected")))
                return;
        title(shown);
        _cleanup_free_ char *ev = cli_sanitize(cli_jstr(leak, "evidence") ? cli_jstr(leak, "evidence") : "?");
        const char *policy = cli_jstr(leak, "policy"), *restart = cli_jstr(leak, "restart");
        printf("  LEAK  %s", ev ? ev : "?");
        if (policy && !strcmp(policy, "restart"))
                printf("  [leak_policy restart: %s]", restart && !strcmp(restart, "stopping")
                                                              ? "stopping after its checkpoint"
                                                              : "restart after the next checkpoint");
        printf("\n");
}

/* "best.pt epoch 31 mAP50-95 0.412 (a1f3c2…)" */
static void put_snap(const json_t *s, const char *name, bool first) {
        long long epoch;
        double m = cli_jnum(s, "metric");
        const char *sha = cli_jstr(s, "sha256");
        printf("%s%s", first ? "" : ", ", name);
        if (cli_jint(s, "epoch", &epoch))
                printf(" epoch %lld", epoch);
        if (isfinite(m))
                printf(" mAP50-95 %.3f", m);
        if (sha && strlen(sha) >= 6)
                printf(" (%.6s\xe2\x80\xa6)", sha);
}

static void snapshot_line(const json_t *tr, bool *shown) {
        const json_t *snaps = json_object_get(tr, "snapshots");
        const json_t *best = json_object_get(snaps, "best"), *last = json_object_get(snaps, "last");
        if (!json_is_object(best) && !json_is_object(last))
                return;
        title(shown);
        printf("  snapshots: ");
        if (json_is_object(best))
                put_snap(best, "best.pt", true);
        if (json_is_object(last))
                put_snap(last, "last.pt", !json_is_object(best));
        printf("\n");
}

void cli_show_prediction(const json_t *pr, time_t now) { prediction_line(pr, now); }

void cli_show_training(const json_t *job, time_t now) {
        const json_t *tr = json_object_get(job, "training");
        if (!json_is_object(tr))
                return;
        bool shown = false;
        const json_t *pr = json_object_get(tr, "prediction");
        if (json_is_object(pr)) {
                title(&shown);
                prediction_line(pr, now);
                return;
        }
        epoch_line(tr, now, &shown);
        leak_line(tr, &shown);
        snapshot_line(tr, &shown);
}
