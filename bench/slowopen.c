/* An LD_PRELOAD library for bench/cache.py: each open()/openat() of a path under
 * SLOWOPEN_PREFIX sleeps SLOWOPEN_USEC microseconds first, standing in for a network
 * filesystem's per-file round trip (NFS's LOOKUP + OPEN).  It models per-file latency only:
 * reads after the open run at local speed, so bandwidth is not modelled.
 *
 * Opens made inside libc (opendir's, fopen's) do not pass through these symbols and are not
 * delayed; the cache's reader and the benchmark's job open each file with open(). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *prefix;
static size_t prefix_len;
static struct timespec delay;

__attribute__((constructor)) static void slowopen_init(void) {
        const char *p = getenv("SLOWOPEN_PREFIX"), *u = getenv("SLOWOPEN_USEC");
        long usec = u ? strtol(u, NULL, 10) : 0;
        if (!p || !*p || usec <= 0)
                return;
        prefix = p;
        prefix_len = strlen(p);
        delay.tv_sec = usec / 1000000;
        delay.tv_nsec = (usec % 1000000) * 1000;
}

static int under_prefix(const char *path) {
        /* The prefix itself, or a name below it: /nfs matches /nfs/a, not /nfsx. */
        return strncmp(path, prefix, prefix_len) == 0 &&
               (path[prefix_len] == '\0' || path[prefix_len] == '/' || prefix[prefix_len - 1] == '/');
}

static void maybe_wait(int dirfd, const char *path) {
        if (!prefix || !path)
                return;
        if (path[0] != '/') {
                /* Relative: the directory it is relative to decides. */
                char link[64], dir[PATH_MAX];
                if (dirfd == AT_FDCWD)
                        snprintf(link, sizeof link, "/proc/self/cwd");
                else
                        snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
                ssize_t n = readlink(link, dir, sizeof dir - 1);
                if (n <= 0)
                        return;
                dir[n] = '\0';
                if (!under_prefix(dir))
                        return;
        } else if (!under_prefix(path)) {
                return;
        }
        while (nanosleep(&delay, NULL) < 0)
                ;
}

static mode_t mode_arg(int flags, va_list ap) {
        return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t) va_arg(ap, int) : 0;
}

#define SLOW_OPEN(name)                                                                   \
        int name(const char *path, int flags, ...) {                                      \
                static int (*real)(const char *, int, ...);                               \
                va_list ap;                                                               \
                va_start(ap, flags);                                                      \
                mode_t mode = mode_arg(flags, ap);                                        \
                va_end(ap);                                                               \
                if (!real)                                                                \
                        real = (int (*)(const char *, int, ...)) dlsym(RTLD_NEXT, #name); \
                maybe_wait(AT_FDCWD, path);                                               \
                return real(path, flags, mode);                                           \
        }

#define SLOW_OPENAT(name)                                                                      \
        int name(int dirfd, const char *path, int flags, ...) {                                \
                static int (*real)(int, const char *, int, ...);                               \
                va_list ap;                                                                    \
                va_start(ap, flags);                                                           \
                mode_t mode = mode_arg(flags, ap);                                             \
                va_end(ap);                                                                    \
                if (!real)                                                                     \
                        real = (int (*)(int, const char *, int, ...)) dlsym(RTLD_NEXT, #name); \
                maybe_wait(dirfd, path);                                                       \
                return real(dirfd, path, flags, mode);                                         \
        }

SLOW_OPEN(open)
SLOW_OPEN(open64)
SLOW_OPENAT(openat)
SLOW_OPENAT(openat64)
