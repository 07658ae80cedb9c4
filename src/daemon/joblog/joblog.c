/* Telling a job's user, and the admins, that its log was capped (log_max) or stopped growing
 * on a low state disk (state_reserve).  The supervisor writes the marker line (shim/logcap.h)
 * at a quarter of log_max; the daemon reads it there: once while the job runs (a "log_capped"
 * event, the first time it is seen) and when the attempt ends (the final count). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/parse.h"
#include "daemon/daemon.h"
#include "daemon/joblog/joblog.h"
#include "shim/logcap.h"

/* The bytes dropped that the marker in the job's log says; -1 when there is no marker. */
static int64_t dropped_in_log(const struct gw_daemon *d, const struct gw_job *j) {
        if (j->output || !j->log_path || !d->cfg->log_max)
                return -1;
        _cleanup_close_ int fd = open(j->log_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        char buf[LOGCAP_MARKER_MAX + 1];
        ssize_t n = fd < 0 ? -1 : pread(fd, buf, LOGCAP_MARKER_MAX, (off_t) (d->cfg->log_max / 4));
        if (n < (ssize_t) strlen(LOGCAP_MARKER))
                return -1;
        buf[n] = '\0';
        if (strncmp(buf, LOGCAP_MARKER, strlen(LOGCAP_MARKER)))
                return -1;
        const char *colon = strchr(buf + strlen(LOGCAP_MARKER), ':');
        if (!colon)
                return -1;
        char *end;
        unsigned long long v = strtoull(colon + 1, &end, 10);
        return end == colon + 1 ? -1 : (int64_t) v;
}

static void tell(struct gw_daemon *d, const struct gw_job *j, int64_t dropped, bool final) {
        char max[32], head[32], msg[512];
        gw_format_size(d->cfg->log_max, max, sizeof max);
        gw_format_size(d->cfg->log_max / 4, head, sizeof head);
        snprintf(msg, sizeof msg,
                 "log capped at %s (log_max): %" PRId64 " bytes of output dropped%s; its first %s and its newest "
                 "output are kept, a line in the log marks the cut",
                 max, dropped, final ? "" : " so far", head);
        log_info("job %lld: %s (%s)", (long long) j->id, msg, j->log_path);
        if (gw_store_job_event(d->store, j->id, j->state, "log_capped", msg) < 0)
                log_warn("job %lld: cannot record that its log was capped: %s", (long long) j->id,
                         gw_store_errmsg(d->store));
}

/* What was told of a job's log, kept by job id in d->state.joblog from the first telling:
 * the attempt whose capped log was told, and the one told its output is dropped on a low
 * disk (0: none). */
struct joblog_told {
        int cap, low;
};

static const struct joblog_told *told(const struct gw_daemon *d, const struct gw_djob *dj) {
        static const struct joblog_told none = { 0 };
        const struct joblog_told *t = gw_keytab_get(&d->state.joblog, (uint64_t) dj->job->id);
        return t ? t : &none;
}

static struct joblog_told *told_new(struct gw_daemon *d, const struct gw_djob *dj) {
        struct joblog_told *t = gw_keytab_get(&d->state.joblog, (uint64_t) dj->job->id);
        if (!t) {
                t = gw_xcalloc(1, sizeof *t);
                gw_keytab_put(&d->state.joblog, (uint64_t) dj->job->id, t);
        }
        return t;
}

void gw_joblog_forget(struct gw_daemon *d, struct gw_djob *dj) {
        free(gw_keytab_take(&d->state.joblog, (uint64_t) dj->job->id));
}

/* Once per attempt, while the state disk is low, for a job whose log is ours. */
static void tell_low(struct gw_daemon *d, struct gw_djob *dj, uint64_t free_) {
        const struct gw_job *j = dj->job;
        if (told(d, dj)->low == j->attempt || j->output || j->state != GW_JOB_RUNNING)
                return;
        told_new(d, dj)->low = j->attempt;
        char res[32], fr[32], msg[400];
        snprintf(msg, sizeof msg,
                 "the state disk has %s free, under state_reserve %s: this job's output is dropped until there is "
                 "room again (the room is kept for gpuward's database)",
                 gw_format_size(free_, fr, sizeof fr), gw_format_size(d->cfg->state_reserve, res, sizeof res));
        if (gw_store_job_event(d->store, j->id, j->state, "log_stopped", msg) < 0)
                log_debug("job %lld: cannot record that its log stopped: %s", (long long) j->id,
                          gw_store_errmsg(d->store));
}

/* Whether the log reaches past a quarter of the cap, where the marker would be: below it there
 * is none to look for, and a stat costs less than an open and a read. */
static bool past_head(const struct gw_daemon *d, const struct gw_job *j) {
        struct stat st;
        return j->log_path && !j->output && d->cfg->log_max && stat(j->log_path, &st) == 0 &&
               (uint64_t) st.st_size > d->cfg->log_max / 4;
}

static void watch_one(struct gw_daemon *d, struct gw_djob *dj) {
        const struct gw_job *j = dj->job;
        if (told(d, dj)->cap == j->attempt || j->state != GW_JOB_RUNNING || !past_head(d, j))
                return;
        int64_t dropped = dropped_in_log(d, j);
        if (dropped < 0)
                return;
        told_new(d, dj)->cap = j->attempt;
        tell(d, j, dropped, false);
}

void gw_joblog_watch(struct gw_daemon *d) {
        static bool was_low; /* one daemon per process */
        uint64_t free_ = 0;
        bool low = gw_state_disk_low(d, &free_);
        if (low != was_low) {
                char fr[32], res[32];
                if (low)
                        log_warn("state disk low: %s free in %s, under state_reserve %s: job logs stop growing",
                                 gw_format_size(free_, fr, sizeof fr), d->cfg->state_dir,
                                 gw_format_size(d->cfg->state_reserve, res, sizeof res));
                else
                        log_info("state disk: %s free in %s again: job logs grow again",
                                 gw_format_size(free_, fr, sizeof fr), d->cfg->state_dir);
                was_low = low;
        }
        for (size_t i = 0; i < d->jobs.n_running; i++) {
                if (low)
                        tell_low(d, d->jobs.running[i], free_);
                watch_one(d, d->jobs.running[i]);
        }
}

void gw_joblog_attempt_ended(struct gw_daemon *d, struct gw_djob *dj) {
        int64_t dropped = past_head(d, dj->job) ? dropped_in_log(d, dj->job) : -1;
        if (dropped > 0)
                tell(d, dj->job, dropped, true);
}

bool gw_state_disk_low(const struct gw_daemon *d, uint64_t *ret_free) {
        struct statvfs sv;
        if (statvfs(d->cfg->state_dir, &sv) < 0)
                return false;
        uint64_t total = (uint64_t) sv.f_blocks * sv.f_frsize, free_ = (uint64_t) sv.f_bavail * sv.f_frsize;
        uint64_t reserve = d->cfg->state_reserve < total / 4 ? d->cfg->state_reserve : total / 4;
        if (ret_free)
                *ret_free = free_;
        return d->cfg->state_reserve && free_ < reserve;
}
