#include "core/sbatch_words.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/directive.h"
#include "core/slurm.h"

/* What gpuward does with an sbatch option. */
enum sb_kind {
        SB_GRES, /* --gres=gpu[:TYPE]:N */
        SB_GPUS, /* --gpus=[TYPE:]N */
        SB_PASS, /* the same value under gpuward's name */
        SB_FLAG, /* no value: gpuward's flag */
        SB_DEPEND, /* afterok:ID, afterany:ID */
        SB_SIGNAL, /* [B:]SIG[@SECONDS] */
        SB_NOTE, /* not taken, for the reason given */
};

struct sb_opt {
        const char *name; /* sbatch's long name */
        char letter; /* its short one, or 0 */
        enum sb_kind kind;
        const char *to; /* gpuward's option (SB_PASS, SB_FLAG), or the reason (SB_NOTE) */
        bool value; /* takes a value */
};

static const struct sb_opt sb_opts[] = {
        { "gres", 0, SB_GRES, "--gpus", true },
        { "gpus", 'G', SB_GPUS, "--gpus", true },
        { "gpus-per-node", 0, SB_GPUS, "--gpus", true },
        { "time", 't', SB_PASS, "--time", true },
        { "job-name", 'J', SB_PASS, "--name", true },
        { "output", 'o', SB_PASS, "--output", true },
        { "array", 'a', SB_PASS, "--array", true },
        { "chdir", 'D', SB_PASS, "--cwd", true },
        { "dependency", 'd', SB_DEPEND, "--after", true },
        { "signal", 0, SB_SIGNAL, "--signal", true },
        { "hold", 'H', SB_FLAG, "--hold", false },
        { "error", 'e', SB_NOTE, "gpuward writes stderr with stdout, to --output", true },
        { "partition", 'p', SB_NOTE, "gpuward has no partitions", true },
        { "account", 'A', SB_NOTE, "gpuward has no accounts", true },
        { "qos", 'q', SB_NOTE, "gpuward has no QOS", true },
        { "nodes", 'N', SB_NOTE, "a gpuward job runs on one host", true },
        { "mail-type", 0, SB_NOTE, "gpuward sends no mail; the admin's webhooks may report job ends", true },
        { "mail-user", 0, SB_NOTE, "gpuward sends no mail; the admin's webhooks may report job ends", true },
        { "export", 0, SB_NOTE,
          "a job gets the environment of the shell that submits it, "
          "or a minimal one with --clean-env; --env K=V adds to it",
          true },
};

#define GENERIC_REASON "gpuward has no such option"

static const struct sb_opt *find_long(const char *name, size_t len) {
        for (size_t i = 0; i < ELEMENTSOF(sb_opts); i++)
                if (strlen(sb_opts[i].name) == len && !strncmp(sb_opts[i].name, name, len))
                        return &sb_opts[i];
        return NULL;
}

static const struct sb_opt *find_short(char c) {
        for (size_t i = 0; i < ELEMENTSOF(sb_opts); i++)
                if (sb_opts[i].letter == c)
                        return &sb_opts[i];
        return NULL;
}

static void push(char ***v, int *n, char *s) {
        *v = gw_xrealloc(*v, (size_t) (*n + 2) * sizeof(char *));
        (*v)[(*n)++] = s;
        (*v)[*n] = NULL;
}

static void push_opt(struct gw_sbatch_words *out, const char *opt, const char *value) {
        push(&out->argv, &out->argc, gw_xstrdup(opt));
        if (value)
                push(&out->argv, &out->argc, gw_xstrdup(value));
}

static void note(struct gw_sbatch_words *out, const char *shown, const char *reason) {
        char *s = gw_xmalloc(GW_SBATCH_NOTE_SIZE);
        snprintf(s, GW_SBATCH_NOTE_SIZE, "#SBATCH %s ignored (%s)", shown, reason);
        push(&out->notes, &out->nnotes, s);
}

/* The MIG profile a type names ("1g.10gb", "a100_1g.10gb": Slurm's AutoDetect=nvml name,
 * core/slurm.h) into buf, with count when there is one; the type is spec[0..n-1]. */
static bool mig_ask(const char *spec, size_t n, const char *count, char *buf, size_t size) {
        char type[GW_SLURM_TYPE_MAX];
        if (n == 0 || n >= sizeof type)
                return false;
        memcpy(type, spec, n);
        type[n] = '\0';
        const char *profile = gw_slurm_type_profile(type);
        if (!profile)
                return false;
        snprintf(buf, size, "%s%s%s", profile, count ? ":" : "", count ? count : "");
        return true;
}

/* gpuward's --gpus for "2", "a100:2", "a100" (one of them): the count, a type aside; for a
 * type that names a MIG slice ("1g.10gb:2", "a100_1g.10gb:2"), "PROFILE:COUNT", the slices
 * of that profile, as gpuward submit --gpus 1g.10gb:2 asks for them. */
static bool gpu_count(const char *spec, char *buf, size_t size) {
        const char *colon = strrchr(spec, ':');
        const char *count = colon ? colon + 1 : spec;
        size_t digits = strspn(count, "0123456789");
        if (digits > 0 && !count[digits]) {
                if (colon) {
                        const char *type = colon;
                        while (type > spec && type[-1] != ':')
                                type--;
                        if (mig_ask(type, (size_t) (colon - type), count, buf, size))
                                return true;
                }
                snprintf(buf, size, "%s", count);
                return true;
        }
        if (colon || !*spec)
                return false;
        if (mig_ask(spec, strlen(spec), NULL, buf, size))
                return true;
        snprintf(buf, size, "1"); /* "--gpus=a100": one of them */
        return true;
}

/* "--gres=gpu:2,shard:1": the gpu item's count. */
static bool gres_gpus(const char *gres, char *buf, size_t size) {
        for (const char *p = gres; *p;) {
                size_t n = strcspn(p, ",");
                if (n >= 3 && !strncmp(p, "gpu", 3) && (n == 3 || p[3] == ':')) {
                        char item[64];
                        if (n >= sizeof item)
                                return false;
                        snprintf(item, sizeof item, "%.*s", (int) n, p);
                        return n == 3 ? (snprintf(buf, size, "1"), true) : gpu_count(item + 4, buf, size);
                }
                p += n + (p[n] == ',');
        }
        return false;
}

/* One job, completed or ended: what --after can wait on. */
int gw_sbatch_dependency(const char *v, char *buf, size_t size) {
        static const struct { const char *slurm, *kind; } kinds[] = { { "afterok:", "ok" }, { "afterany:", "any" } };
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
                size_t k = strlen(kinds[i].slurm);
                if (strncmp(v, kinds[i].slurm, k) != 0)
                        continue;
                size_t digits = strspn(v + k, "0123456789");
                if (digits == 0 || digits > 18 || v[k + digits])
                        return -EINVAL;
                snprintf(buf, size, "%s:%s", v + k, kinds[i].kind);
                return 0;
        }
        return -EINVAL;
}

/* Slurm's @T is in seconds; gpuward reads a bare number as minutes. */
static void signal_value(const char *v, char *buf, size_t size) {
        const char *at = strchr(v, '@');
        bool secs = at && at[1] && !at[1 + strspn(at + 1, "0123456789")];
        snprintf(buf, size, "%s%s", v, secs ? "s" : "");
}

static int apply(const struct sb_opt *o, const char *typed, const char *value, struct gw_sbatch_words *out, char *why,
                 size_t why_len) {
        char buf[128];
        switch (o->kind) {
        case SB_GRES:
                if (!gres_gpus(value, buf, sizeof buf)) {
                        note(out, typed, "no GPU count in it: gpuward reads gpu:N or gpu:TYPE:N");
                        return 0;
                }
                push_opt(out, o->to, buf);
                return 0;
        case SB_GPUS:
                if (!gpu_count(value, buf, sizeof buf)) {
                        note(out, typed, "not a GPU count: gpuward reads N or TYPE:N");
                        return 0;
                }
                push_opt(out, o->to, buf);
                return 0;
        case SB_PASS:
                push_opt(out, o->to, value);
                return 0;
        case SB_FLAG:
                push_opt(out, o->to, NULL);
                return 0;
        case SB_DEPEND:
                if (gw_sbatch_dependency(value, buf, sizeof buf) < 0) {
                        snprintf(why, why_len,
                                 "#SBATCH %s: gpuward waits on one job, completed (afterok:ID) or ended "
                                 "(afterany:ID)",
                                 typed);
                        return -EINVAL;
                }
                push_opt(out, o->to, buf);
                return 0;
        case SB_SIGNAL:
                signal_value(value, buf, sizeof buf);
                push_opt(out, o->to, buf);
                return 0;
        case SB_NOTE:
                note(out, typed, o->to);
                return 0;
        }
        return 0;
}

int gw_sbatch_translate(char *const *words, int n, struct gw_sbatch_words *out, char *why, size_t why_len) {
        for (int i = 0; i < n; i++) {
                const char *w = words[i], *value = NULL;
                const struct sb_opt *o = NULL;

                if (w[0] == '-' && w[1] == '-' && w[2]) {
                        const char *eq = strchr(w, '=');
                        o = find_long(w + 2, eq ? (size_t) (eq - w - 2) : strlen(w + 2));
                        value = eq ? eq + 1 : NULL;
                } else if (w[0] == '-' && w[1] && w[1] != '-') {
                        o = find_short(w[1]);
                        value = w[2] ? w + 2 : NULL;
                } else {
                        note(out, w, "not an option");
                        continue;
                }
                /* An option we do not know takes the next word when it is no option itself. */
                bool wants = o ? o->value : (i + 1 < n && words[i + 1][0] != '-');
                const char *next = NULL;
                if (!value && wants && i + 1 < n)
                        value = next = words[++i];
                /* Notes and errors quote the directive as written: "--time=30" or "-t 30". */
                char shown[256];
                snprintf(shown, sizeof shown, "%s%s%s", w, next ? " " : "", next ? next : "");
                if (o && o->value && !value) {
                        snprintf(why, why_len, "#SBATCH %s: needs a value", shown);
                        return -EINVAL;
                }
                if (!o) {
                        note(out, shown, GENERIC_REASON);
                        continue;
                }
                int r = apply(o, shown, value, out, why, why_len);
                if (r < 0)
                        return r;
        }
        return 0;
}

void gw_sbatch_words_done(struct gw_sbatch_words *w) {
        gw_strv_free(w->argv);
        gw_strv_free(w->notes);
        *w = (struct gw_sbatch_words){ 0 };
}

const char *gw_slurm_verb(const char *cmd) {
        static const char *const map[][2] = {
                { "sbatch", "submit" },  { "squeue", "queue" }, { "scancel", "cancel" }, { "sacct", "history" },
                { "sinfo", "gpus" },     { "srun", "run" },     { "salloc", "run" },     { "scontrol", "show" },
                { "sreport", "report" }, { "sshare", "quota" },
        };
        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                if (!strcmp(cmd, map[i][0]))
                        return map[i][1];
        return NULL;
}

const char *gw_sbatch_option_hint(const char *name) {
        static const char *const map[][2] = {
                { "gres", "--gpus N (or -G N)" },
                { "job-name", "--name NAME (or -J NAME)" },
                { "dependency", "--after JOB[:ok|:any] (or -d afterok:JOB)" },
                { "error", "--output FILE: stderr goes with stdout" },
                { "chdir", "--cwd DIR" },
                { "partition", "nothing: gpuward has no partitions" },
                { "account", "nothing: gpuward has no accounts" },
                { "mail-type", "nothing: gpuward sends no mail" },
                { "mail-user", "nothing: gpuward sends no mail" },
                { "nodes", "nothing: a gpuward job runs on one host" },
                { "ntasks", "nothing: a gpuward job is one command" },
                { "gpus-per-node", "--gpus N" },
        };
        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                if (!strcmp(name, map[i][0]))
                        return map[i][1];
        return NULL;
}

int gw_edit_distance(const char *a, const char *b, int cap) {
        size_t la = strlen(a), lb = strlen(b);
        /* Options and verbs are short; a long word is no near miss of any. */
        if (la > 64 || lb > 64)
                return cap;
        int row[65];
        for (size_t j = 0; j <= lb; j++)
                row[j] = (int) j;
        for (size_t i = 1; i <= la; i++) {
                int diag = row[0];
                row[0] = (int) i;
                for (size_t j = 1; j <= lb; j++) {
                        int up = row[j];
                        int best = diag + (a[i - 1] != b[j - 1]);
                        if (up + 1 < best)
                                best = up + 1;
                        if (row[j - 1] + 1 < best)
                                best = row[j - 1] + 1;
                        row[j] = best;
                        diag = up;
                }
        }
        return row[lb] < cap ? row[lb] : cap;
}
