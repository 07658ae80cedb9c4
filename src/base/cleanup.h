/* __attribute__((cleanup)) helpers for locals, systemd style. */
#pragma once
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <errno.h>

#define TAKE_PTR(p)                     \
        ({                              \
                __typeof__(p) _p = (p); \
                (p) = NULL;             \
                _p;                     \
        })
#define TAKE_FD(fd)             \
        ({                      \
                int _fd = (fd); \
                (fd) = -1;      \
                _fd;            \
        })
#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

static inline void gw_freep(void *p) { free(*(void **) p); }
static inline void gw_closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                (void) close(*fd);
                errno = saved;
        }
}
static inline void gw_fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(gw_freep)
#define _cleanup_close_ _cleanup_(gw_closep)
#define _cleanup_fclose_ _cleanup_(gw_fclosep)

/* Allocation failure in the daemon is not recoverable: abort with a message (redis zmalloc). */
void *gw_xmalloc(size_t n);
void *gw_xcalloc(size_t n, size_t size);
void *gw_xrealloc(void *p, size_t n);
char *gw_xstrdup(const char *s);
