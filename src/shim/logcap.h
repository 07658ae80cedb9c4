/* The cap on a job's log under the state dir (log_max) and the free space kept for the store
 * (state_reserve): the supervisor copies the job's output from a pipe into the log through
 * these.  Past max the log keeps its first max/4 bytes, a marker line (LOGCAP_MARKER, the
 * size, the bytes dropped so far, of a fixed length, at offset max/4, where the daemon looks
 * for it) and its newest bytes; while the log's file system has less than reserve free the
 * log does not grow.  max 0: no cap; reserve 0: none. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOGCAP_MARKER "\n[gpuward: log capped at "
#define LOGCAP_MARKER_MAX 128

struct logcap {
        int fd; /* the log, O_APPEND */
        uint64_t max, reserve, head;
        uint64_t dropped; /* bytes of output dropped so far */
        uint64_t gap; /* of those, dropped with no marker yet to count them */
        uint64_t since_check; /* output since free space was last looked at */
        bool low; /* under the reserve when last looked at */
        bool marked; /* the marker is in the file */
        char size_text[32]; /* max as the marker says it: 64M */
};

void logcap_init(struct logcap *c, int fd, uint64_t max, uint64_t reserve);
/* Output of the job: into the log, or dropped. */
void logcap_write(struct logcap *c, const char *buf, size_t n);
/* The job's output ended: the marker's count made final. */
void logcap_done(struct logcap *c);
