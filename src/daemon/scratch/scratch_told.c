/* On a Slurm cluster, a --scratch job's copies as its step tells them in the job's output
 * (scratch_int.h).  The output is the user's to write, so a line only says which file to look
 * at: a copy is told from the file found in the shared folder, read by this daemon as the
 * user's (daemon/base/userfile.h), and what only the step knows (its sync's counts) is told as
 * the step's word. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/parse.h"
#include "core/jobrec.h"
#include "core/scratch.h"
#include "daemon/base/userfile.h"
#include "daemon/daemon.h"
#include "daemon/scratch/scratch_int.h"
#include "daemon/training/resume.h"
#include "store/store.h"

#define READ_MAX (64u << 10)
#define PREFIX "gpuward: scratch: "
#define REL_MAX 1024

static void event(struct gw_daemon *d, const struct gw_job *j, struct gw_scratch_told *t, const char *msg) {
        if (t->n_told >= GW_SCRATCH_TOLD_MAX)
                return;
        t->n_told++;
        if (gw_store_job_event(d->store, j->id, j->state, "scratch", msg) < 0)
                log_warn("job %lld: cannot record a scratch event: %s", (long long) j->id, gw_store_errmsg(d->store));
}

/* "copied REL (...) back to CWD": REL, checked to be a checkpoint's path below the shared
 * folder, into rel (n bytes): 0, or -1. */
static int copied_rel(const struct gw_job *j, const char *text, char *rel, size_t n) {
        char tail[4400];
        int w = snprintf(tail, sizeof tail, ") back to %s", j->cwd);
        size_t tl = strlen(text), l;
        if (w < 0 || (size_t) w >= sizeof tail || tl < (size_t) w || strcmp(text + tl - (size_t) w, tail))
                return -1;
        const char *open = NULL;
        for (const char *p = text; (p = strstr(p, " (")) && p < text + tl - (size_t) w; p++)
                open = p; /* the last " (" before the tail: REL may hold one */
        l = open ? (size_t) (open - text) : 0;
        if (l == 0 || l >= n || text[0] == '/')
                return -1;
        memcpy(rel, text, l);
        rel[l] = '\0';
        if (strstr(rel, "..") || gw_scratch_kind_of(rel) == GW_SCRATCH_OTHER)
                return -1;
        return 0;
}

static void tell_copied(struct gw_daemon *d, const struct gw_job *j, struct gw_scratch_told *t, const char *text) {
        char rel[REL_MAX], path[4400 + REL_MAX], why[256], what[64], msg[4400 + REL_MAX + 128], size[32];
        if (copied_rel(j, text, rel, sizeof rel) < 0)
                return;
        snprintf(path, sizeof path, "%s/%s", j->cwd, rel);
        struct stat st;
        long done;
        if (!gw_user_file_stat(j, path, &st))
                return; /* not there (any more), or not the user's: nothing to tell */
        if (gw_scratch_kind_of(rel) == GW_SCRATCH_PT) {
                if (gw_resume_ckpt_epoch(j, path, &done, why, sizeof why) < 0)
                        return;
                snprintf(what, sizeof what, "epoch %ld", done);
        } else
                snprintf(what, sizeof what, "%s", gw_format_size((uint64_t) st.st_size, size, sizeof size));
        char key[sizeof t->last];
        snprintf(key, sizeof key, "%.100s %s", rel, what);
        if (!strcmp(key, t->last))
                return;
        snprintf(t->last, sizeof t->last, "%s", key);
        snprintf(msg, sizeof msg, "copied %s (%s) back to %s", rel, what, j->cwd);
        event(d, j, t, msg);
}

/* One line of the output: the step's, where it says so (a trainer's progress bar may come
 * before it on the same line: its carriage returns end no line). */
static void take_line(struct gw_daemon *d, const struct gw_job *j, struct gw_scratch_told *t, const char *line) {
        const char *p = strstr(line, PREFIX);
        if (!p)
                return;
        p += strlen(PREFIX);
        char msg[1200];
        if (!strncmp(p, "copied ", 7))
                tell_copied(d, j, t, p + 7);
        else if (!strncmp(p, "synced back to ", 15) || !strncmp(p, "restored ", 9) ||
                 !strncmp(p, "could not restore ", 18) || !strncmp(p, "the sync back from ", 19)) {
                snprintf(msg, sizeof msg, "its step on the node says: %.1000s", p);
                event(d, j, t, msg);
        }
}

void gw_scratch_told_read(struct gw_daemon *d, const struct gw_job *j, struct gw_scratch_told *t) {
        struct stat st;
        if (!j->log_path || !j->cwd)
                return;
        _cleanup_close_ int fd = gw_user_file_open(j, j->log_path, j->output != NULL, O_RDONLY, &st);
        if (fd < 0)
                return;
        uint64_t size = (uint64_t) st.st_size;
        if (size < t->off) /* cut by log_max: its newest output is at its end now */
                t->off = size;
        size_t want = size - t->off < READ_MAX ? (size_t) (size - t->off) : READ_MAX;
        if (want == 0)
                return;
        _cleanup_free_ char *buf = gw_xmalloc(want + 1);
        ssize_t n = pread(fd, buf, want, (off_t) t->off);
        if (n <= 0)
                return;
        buf[n] = '\0';
        char *end = memrchr(buf, '\n', (size_t) n);
        if (!end) { /* a line longer than a read: skipped */
                t->off += (size_t) n == READ_MAX ? (uint64_t) n : 0;
                return;
        }
        size_t len = (size_t) (end + 1 - buf);
        t->off += len;
        /* By lengths, not strings: a NUL byte in the output ends nothing but its line. */
        for (size_t at = 0; at < len;) {
                char *line = buf + at, *nl = memchr(line, '\n', len - at);
                *nl = '\0';
                at = (size_t) (nl - buf) + 1;
                take_line(d, j, t, line);
        }
}

void gw_scratch_told_skip(const struct gw_job *j, struct gw_scratch_told *t) {
        struct stat st;
        if (!j->log_path)
                return;
        _cleanup_close_ int fd = gw_user_file_open(j, j->log_path, j->output != NULL, O_RDONLY, &st);
        if (fd >= 0)
                t->off = (uint64_t) st.st_size;
}
