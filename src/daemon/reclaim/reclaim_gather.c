/* The file signals of idle reclamation: the job's log (size, mtime, the phase from its tail),
 * Ultralytics' results.csv (rows, last losses), a declared progress file and checkpoint
 * mtimes.  The log is looked at every sample (an fstat; its 16 KiB tail only when it grew), to
 * time validation passes; the other files only for a job whose GPUs look idle
 * (reclaim_watch.c), since every "changed" instant is the file's mtime and skipping samples
 * loses nothing.
 *
 * The daemon runs as root and reads what the job's user controls: no symlink as the last
 * component, regular files only, size caps, and files in the user's domain must belong to the
 * job's user (another user's run directory is not this job's progress). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/phase.h"
#include "core/progress.h"
#include "core/yolo_run.h"
#include "daemon/reclaim/reclaim_watch.h"
#include "daemon/training/training.h"
#include "daemon/base/userfile.h"

#define TAIL_BYTES (16 * 1024)
#define RESULTS_MAX (16u << 20) /* a results.csv beyond this is not re-parsed */
#define SCAN_MAX 512 /* directory entries looked at per directory */
#define GLOB_MAX 1000
#define EXTRA_PATTERNS 16

static void join(char *buf, size_t n, const char *dir, const char *p) {
        if (p[0] == '/' || !dir)
                snprintf(buf, n, "%s", p);
        else
                snprintf(buf, n, "%s/%s", dir, p);
}

/* Reads up to max bytes from offset max bytes before the end of an open regular file. */
/* ---- the log and its phase ---- */

/* The built-in patterns plus the config's '|'-separated substrings (the defaults cover
 * Ultralytics; other trainers' lines are the config's to add). */
struct rules_buf {
        struct gw_phase_pattern pats[32 + 2 * EXTRA_PATTERNS];
        char text[2 * 1024];
        struct gw_phase_rules rules;
};

static void add_patterns(struct rules_buf *b, size_t *n, size_t *used, const char *list, enum gw_phase ph) {
        for (const char *p = list; p && *p;) {
                size_t l = strcspn(p, "|");
                if (l && *n < ELEMENTSOF(b->pats) && *used + l + 1 <= sizeof b->text) {
                        memcpy(b->text + *used, p, l);
                        b->text[*used + l] = '\0';
                        b->pats[(*n)++] = (struct gw_phase_pattern){ ph, GW_MATCH_SUBSTR, b->text + *used, false };
                        *used += l + 1;
                }
                p += l + (p[l] == '|');
        }
}

static const struct gw_phase_rules *phase_rules(const struct gw_config *c, struct rules_buf *b) {
        if (!c->validating_patterns && !c->saving_patterns)
                return NULL; /* the defaults */
        size_t n = 0, used = 0;
        for (size_t i = 0; i < gw_phase_patterns_default_n && n < 32; i++)
                b->pats[n++] = gw_phase_patterns_default[i];
        add_patterns(b, &n, &used, c->validating_patterns, GW_PHASE_VALIDATING);
        add_patterns(b, &n, &used, c->saving_patterns, GW_PHASE_SAVING);
        b->rules = (struct gw_phase_rules){ .patterns = b->pats, .n_patterns = n };
        return &b->rules;
}

/* Whether the last line of a tail is one of gpuward's own. */
static bool ends_with_own_line(const char *buf, size_t len) {
        while (len > 0 && buf[len - 1] == '\n')
                len--;
        size_t start = len;
        while (start > 0 && buf[start - 1] != '\n')
                start--;
        return len - start >= 9 && !memcmp(buf + start, "gpuward: ", 9);
}

/* Drops gpuward's own lines ("gpuward: WARNING ...") from a tail in place: they quote the job
 * and must not become its phase (a quoted "val: " would protect the job it warns). */
static size_t drop_own_lines(char *buf, size_t len) {
        size_t out = 0;
        for (size_t i = 0; i < len;) {
                const char *nl = memchr(buf + i, '\n', len - i);
                size_t l = nl ? (size_t) (nl - (buf + i)) + 1 : len - i;
                if (!(l >= 9 && !memcmp(buf + i, "gpuward: ", 9))) {
                        memmove(buf + out, buf + i, l);
                        out += l;
                }
                i += l;
        }
        return out;
}

/* When a file seen changed was changed, on the job's clock (reclaim_watch.h): its mtime, but
 * not before the last look that saw it unchanged. */
static gw_usec_t changed_at(const struct gw_rwatch *w, gw_usec_t mtime, bool seen, gw_usec_t looked) {
        gw_usec_t t = mtime + w->shift;
        return seen && t < looked ? looked : t;
}

void gw_rwatch_gather_log(const struct gw_daemon *d, const struct gw_job *j, struct gw_rwatch *w) {
        if (!j->log_path)
                return;
        struct stat st;
        /* The daemon's own log files need no owner check; a user-chosen --output does. */
        _cleanup_close_ int fd = gw_user_file_open(j, j->log_path, j->output != NULL, O_RDONLY, &st);
        if (fd < 0)
                return;
        if (w->log_seen && (uint64_t) st.st_size == w->log_size)
                return;
        bool first = !w->log_seen;
        w->log_changed = changed_at(w, gw_file_mtime_us(&st), w->log_seen, w->last_sample);
        w->log_seen = true;
        w->log_size = (uint64_t) st.st_size;
        size_t len;
        _cleanup_free_ char *tail = gw_user_file_read_end(fd, &st, TAIL_BYTES, &len);
        /* A window taken up after a restart (reclaim_watch.c), its log last written by the
         * previous daemon (its warning): that write is not the job's progress, and the size
         * after it, which would have said so, went with that daemon.  The job wrote nothing
         * since; when it last did is not known, and a restored warning keeps the stop after
         * its full warn period anyway. */
        if (first && w->restored && tail && ends_with_own_line(tail, len))
                w->log_changed = 0;
        len = drop_own_lines(tail, len);
        struct rules_buf rb;
        struct gw_phase_result pr;
        if (gw_phase_from_log(tail, len, phase_rules(d->cfg, &rb), &pr) < 0)
                pr = (struct gw_phase_result){ .phase = GW_PHASE_UNKNOWN };
        w->phase = pr.phase;
        snprintf(w->phase_line, sizeof w->phase_line, "%s", pr.line);
}

int gw_rwatch_log_append(const struct gw_job *j, struct gw_rwatch *w, const char *line) {
        if (!j->log_path)
                return -ENOENT;
        struct stat st;
        _cleanup_close_ int fd = gw_user_file_open(j, j->log_path, j->output != NULL, O_RDWR | O_APPEND, &st);
        if (fd < 0)
                return fd == -EINVAL ? -EPERM : fd;
        uint64_t before = (uint64_t) st.st_size;
        /* A tqdm bar ends without '\n': start on a line of our own, or the user would not see
         * it and the tail reader could not tell it from the bar. */
        char last = '\n', buf[1024];
        if (before > 0 && pread(fd, &last, 1, st.st_size - 1) != 1)
                last = '\n';
        int n = snprintf(buf, sizeof buf, "%s%s", last == '\n' ? "" : "\n", line);
        if (n < 0 || (size_t) n >= sizeof buf)
                return -E2BIG;
        if (write(fd, buf, (size_t) n) != n)
                return -EIO;
        /* Only when the job wrote nothing since the last look: otherwise its bytes would be
         * hidden too, and the next sample should see them as progress. */
        if (w->log_seen && before == w->log_size && fstat(fd, &st) == 0)
                w->log_size = (uint64_t) st.st_size;
        return 0;
}

/* ---- results.csv ---- */

static uint64_t hash_row(const struct gw_results *r, size_t row) {
        uint64_t h = 1469598103934665603ULL;
        for (size_t c = 0; c < r->n_cols; c++) {
                double v = gw_results_value(r, row, c);
                unsigned char b[sizeof v];
                memcpy(b, &v, sizeof v);
                for (size_t i = 0; i < sizeof b; i++)
                        h = (h ^ b[i]) * 1099511628211ULL;
        }
        return h;
}

static void gather_results(const struct gw_daemon *d, const struct gw_job *j, struct gw_rwatch *w) {
        if (!w->results_path)
                w->results_path = gw_train_find_results(d, j);
        if (!w->results_path)
                return;
        struct stat st;
        _cleanup_close_ int fd = gw_user_file_open(j, w->results_path, true, O_RDONLY, &st);
        if (fd < 0)
                return;
        gw_usec_t mt = gw_file_mtime_us(&st);
        if (w->results_seen && st.st_size == w->results_size && mt == w->results_mtime)
                return;
        bool first = !w->results_seen;
        gw_usec_t at = changed_at(w, mt, !first, w->last_look);
        w->results_seen = true;
        w->results_size = st.st_size;
        w->results_mtime = mt;
        if ((uint64_t) st.st_size > RESULTS_MAX) {
                w->results_changed = at; /* too big to re-read each epoch: its growth still counts */
                return;
        }
        size_t len;
        _cleanup_free_ char *text = gw_user_file_read_end(fd, &st, RESULTS_MAX, &len);
        struct gw_results r;
        int rc = gw_results_parse(text, len, &r);
        if (rc < 0) {
                /* No complete header yet (-ENODATA), or not a results file. */
                if (first || w->results_rows < 0)
                        w->results_rows = 0;
                w->results_changed = at;
                return;
        }
        double losses[GW_RWATCH_LOSSES];
        size_t nl = r.n_rows ? gw_results_losses(&r, r.n_rows - 1, losses, GW_RWATCH_LOSSES) : 0;
        uint64_t last = r.n_rows ? hash_row(&r, r.n_rows - 1) : 0;
        if (first || r.n_lines != w->results_lines || last != w->results_last)
                w->results_changed = at;
        if (nl && (first || nl != w->n_losses || memcmp(losses, w->losses, nl * sizeof *losses)))
                w->loss_changed = at;
        memcpy(w->losses, losses, nl * sizeof *losses);
        w->n_losses = nl;
        w->results_rows = (long) r.n_rows;
        w->results_lines = r.n_lines;
        w->results_last = last;
        gw_results_free(&r);
}

/* ---- the progress file and checkpoints ---- */

static void gather_progress(const struct gw_job *j, struct gw_rwatch *w) {
        char path[4400];
        struct stat st;
        if (!j->progress_file)
                return;
        join(path, sizeof path, j->cwd, j->progress_file);
        if (!gw_user_file_stat(j, path, &st))
                return;
        gw_usec_t mt = gw_file_mtime_us(&st);
        if (w->progress_seen && st.st_size == w->progress_size && mt == w->progress_mtime)
                return;
        w->progress_changed = changed_at(w, mt, w->progress_seen, w->last_look);
        w->progress_seen = true;
        w->progress_size = st.st_size;
        w->progress_mtime = mt;
}

static void newer(gw_usec_t *best, const struct stat *st) {
        if (gw_file_mtime_us(st) > *best)
                *best = gw_file_mtime_us(st);
}

/* Ultralytics logs nothing when it saves a checkpoint (docs/ULTRALYTICS-FORMATS.md): a
 * save is seen from the newest RUN/weights/ *.pt, or the newest --checkpoint match for other jobs. */
static void gather_ckpt(const struct gw_job *j, struct gw_rwatch *w) {
        gw_usec_t best = 0;
        if (w->results_path) {
                char dir[4400];
                snprintf(dir, sizeof dir, "%s", w->results_path);
                char *slash = strrchr(dir, '/');
                if (slash)
                        snprintf(slash, sizeof dir - (size_t) (slash - dir), "/weights");
                DIR *dd = opendir(dir);
                struct dirent *de;
                for (size_t k = 0; dd && k < SCAN_MAX && (de = readdir(dd)); k++) {
                        size_t l = strlen(de->d_name);
                        char path[4700];
                        struct stat st;
                        if (l < 4 || strcmp(de->d_name + l - 3, ".pt"))
                                continue;
                        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
                        if (gw_user_file_stat(j, path, &st))
                                newer(&best, &st);
                }
                if (dd)
                        closedir(dd);
        }
        if (j->checkpoint && j->cwd) {
                char pattern[4400];
                glob_t g;
                join(pattern, sizeof pattern, j->cwd, j->checkpoint);
                if (glob(pattern, GLOB_NOSORT, NULL, &g) == 0) {
                        for (size_t i = 0; i < g.gl_pathc && i < GLOB_MAX; i++) {
                                struct stat st;
                                if (gw_user_file_stat(j, g.gl_pathv[i], &st))
                                        newer(&best, &st);
                        }
                        globfree(&g);
                }
        }
        w->ckpt_mtime = best ? best + w->shift : 0;
}

void gw_rwatch_gather(const struct gw_daemon *d, const struct gw_job *j, struct gw_rwatch *w) {
        gather_results(d, j, w);
        gather_progress(j, w);
        gather_ckpt(j, w);
}

void gw_rwatch_files_free(struct gw_rwatch *w) {
        free(w->results_path);
        w->results_path = NULL;
}

/* ---- for the job page: the same rule as training's (training_runs.c) ---- */

char *gw_rwatch_find_results(const struct gw_job *j) { return gw_train_find_results(NULL, j); }
