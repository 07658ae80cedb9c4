/* A job's log under the state dir, kept within log_max and out of the store's reserve (see
 * logcap.h).
 *
 * The log is a file opened O_APPEND, which the daemon appends its own lines to as well (a
 * time-limit warning, a leak): its size is taken from the file, never counted here.  Past
 * log_max the middle goes: the file becomes its first quarter (the head: how the run began,
 * its configuration), the marker line, and the newest quarter (the tail: what the daemon
 * reads for failure evidence and what a user looks at first); then it grows again up to
 * log_max and the middle goes again.  Each time that copies a quarter to keep a half of new
 * output: bounded work, no second file, and the tail is always in the file.  While its file
 * system has less than the reserve free the log does not grow: the middle goes at once. */
#include "shim/logcap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* Free space is looked at again after this much output. */
#define CHECK_EVERY (1u << 20)
#define COPY_BUF (64u << 10)

/* All of buf at offset at, or at the file's end when at is -1 (the log is opened O_APPEND);
 * 0, or -1 when the file took less. */
static int write_at(int fd, const char *buf, size_t n, off_t at) {
        while (n) {
                ssize_t w = at < 0 ? write(fd, buf, n) : pwrite(fd, buf, n, at);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return -1;
                buf += w;
                n -= (size_t) w;
                if (at >= 0)
                        at += w;
        }
        return 0;
}

void logcap_init(struct logcap *c, int fd, uint64_t max, uint64_t reserve) {
        *c = (struct logcap){ .fd = fd, .max = max, .reserve = reserve, .since_check = CHECK_EVERY };
        c->head = max / 4;
        char size[32];
        if (max % (1u << 30) == 0)
                snprintf(size, sizeof size, "%lluG", (unsigned long long) (max >> 30));
        else if (max % (1u << 20) == 0)
                snprintf(size, sizeof size, "%lluM", (unsigned long long) (max >> 20));
        else
                snprintf(size, sizeof size, "%llu", (unsigned long long) max);
        snprintf(c->size_text, sizeof c->size_text, "%s", size);
}

/* The marker line, always of the same length (so that it is rewritten in place). */
static size_t marker(const struct logcap *c, char *buf, size_t n) {
        int len = snprintf(buf, n, LOGCAP_MARKER "%s: %20llu bytes of output dropped here]\n", c->size_text,
                           (unsigned long long) c->dropped);
        return len < 0 ? 0 : (size_t) len < n ? (size_t) len : n - 1;
}

static bool disk_low(struct logcap *c, size_t n) {
        if (!c->reserve)
                return false;
        c->since_check += n;
        if (c->since_check < CHECK_EVERY)
                return c->low;
        c->since_check = 0;
        struct statvfs sv;
        if (fstatvfs(c->fd, &sv) < 0)
                return c->low;
        uint64_t total = (uint64_t) sv.f_blocks * sv.f_frsize, free_ = (uint64_t) sv.f_bavail * sv.f_frsize;
        /* On a file system smaller than four reserves, a quarter of it is the reserve. */
        uint64_t reserve = c->reserve < total / 4 ? c->reserve : total / 4;
        c->low = free_ < reserve;
        return c->low;
}

/* The file made head + marker + its newest keep bytes; false when it could not be. */
static bool cut_middle(struct logcap *c, uint64_t size, uint64_t keep) {
        char mark[LOGCAP_MARKER_MAX];
        size_t mlen = marker(c, mark, sizeof mark);
        uint64_t base = c->head + mlen, from = c->marked ? base : c->head;
        if (size < from + keep)
                return false;
        c->dropped += size - from - keep;
        mlen = marker(c, mark, sizeof mark);
        int flags = fcntl(c->fd, F_GETFL);
        /* At offsets: pwrite on an O_APPEND file appends. */
        if (flags < 0 || fcntl(c->fd, F_SETFL, flags & ~O_APPEND) < 0)
                return false;
        static char buf[COPY_BUF];
        bool ok = true;
        /* Forward: the destination is below the source, so nothing is overwritten unread. */
        for (uint64_t done = 0; ok && done < keep;) {
                size_t want = keep - done < COPY_BUF ? (size_t) (keep - done) : COPY_BUF;
                ssize_t r = pread(c->fd, buf, want, (off_t) (size - keep + done));
                ok = r > 0 && write_at(c->fd, buf, (size_t) r, (off_t) (base + done)) == 0;
                done += r > 0 ? (uint64_t) r : 0;
        }
        ok = ok && write_at(c->fd, mark, mlen, (off_t) c->head) == 0 && ftruncate(c->fd, (off_t) (base + keep)) == 0;
        (void) fcntl(c->fd, F_SETFL, flags);
        c->marked = c->marked || ok;
        return ok;
}

/* The marker rewritten with the count so far. */
static void put_marker(struct logcap *c) {
        char mark[LOGCAP_MARKER_MAX];
        int flags = fcntl(c->fd, F_GETFL);
        if (flags >= 0 && fcntl(c->fd, F_SETFL, flags & ~O_APPEND) == 0) {
                (void) write_at(c->fd, mark, marker(c, mark, sizeof mark), (off_t) c->head);
                (void) fcntl(c->fd, F_SETFL, flags);
        }
}

/* Output dropped with no marker to count it (a low disk before the log reached a quarter of
 * the cap): a line where it was, once it can be written. */
static void say_gap(struct logcap *c) {
        if (!c->gap)
                return;
        char line[160];
        int len = snprintf(line, sizeof line,
                           "\n[gpuward: %llu bytes of output dropped here: the state disk had less free than "
                           "state_reserve]\n",
                           (unsigned long long) c->gap);
        if (len > 0 && write_at(c->fd, line, (size_t) len, -1) == 0)
                c->gap = 0;
}

void logcap_write(struct logcap *c, const char *buf, size_t n) {
        if (!c->max && !c->reserve) {
                (void) write_at(c->fd, buf, n, -1);
                return;
        }
        bool low = disk_low(c, n);
        off_t end = lseek(c->fd, 0, SEEK_END);
        uint64_t size = end < 0 ? 0 : (uint64_t) end;
        uint64_t limit = c->max ? c->max : UINT64_MAX;
        if (low && size < limit)
                limit = size;
        if (size + n <= limit) {
                say_gap(c);
                (void) write_at(c->fd, buf, n, -1);
                return;
        }
        char mark[LOGCAP_MARKER_MAX];
        uint64_t base = c->head + marker(c, mark, sizeof mark), keep = c->max / 4;
        /* The newest output that fits, the new bytes included. */
        if (c->max && limit >= base + n) {
                uint64_t room = limit - base - n;
                if (keep > room)
                        keep = room;
                if (cut_middle(c, size, keep)) {
                        (void) write_at(c->fd, buf, n, -1);
                        return;
                }
        }
        c->dropped += n;
        if (c->marked)
                put_marker(c);
        else
                c->gap += n;
}

void logcap_done(struct logcap *c) {
        if (c->marked)
                put_marker(c);
        say_gap(c);
}
