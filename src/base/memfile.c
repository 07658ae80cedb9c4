/* The growing memory FILE (see memfile.h), a stdio cookie over a realloc'ed buffer. */
#include "base/memfile.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The first buffer; then each is twice the last. */
#define FIRST_BYTES ((size_t) 64 * 1024)

struct memfile {
        char **ret_buf;
        size_t *ret_len;
        char *buf;
        size_t len, cap;
        bool failed;
};

/* Room for more bytes and the final NUL. */
static int reserve(struct memfile *m, size_t more) {
        if (m->cap - m->len > more)
                return 0;
        size_t cap = m->cap ? m->cap : FIRST_BYTES;
        while (cap - m->len <= more) {
                if (cap > SIZE_MAX / 2)
                        return -ENOMEM;
                cap *= 2;
        }
        char *p = realloc(m->buf, cap);
        if (!p)
                return -ENOMEM;
        m->buf = p;
        m->cap = cap;
        return 0;
}

static ssize_t memfile_write(void *cookie, const char *data, size_t n) {
        struct memfile *m = cookie;
        if (reserve(m, n) < 0) {
                m->failed = true;
                errno = ENOMEM;
                return -1;
        }
        memcpy(m->buf + m->len, data, n);
        m->len += n;
        return (ssize_t) n;
}

static int memfile_close(void *cookie) {
        struct memfile *m = cookie;
        bool ok = !m->failed && reserve(m, 0) == 0;
        if (m->buf && m->cap > m->len)
                m->buf[m->len] = '\0';
        *m->ret_buf = m->buf;
        *m->ret_len = m->len;
        free(m);
        if (ok)
                return 0;
        errno = ENOMEM;
        return -1;
}

FILE *gw_memfile_open(char **ret_buf, size_t *ret_len) {
        struct memfile *m = calloc(1, sizeof *m);
        if (!m)
                return NULL;
        *m = (struct memfile){ .ret_buf = ret_buf, .ret_len = ret_len };
        FILE *f = fopencookie(m, "w", (cookie_io_functions_t){ .write = memfile_write, .close = memfile_close });
        if (!f) {
                free(m);
                return NULL;
        }
        return f;
}
