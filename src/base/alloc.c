#include "base/cleanup.h"

#include <string.h>

static void oom(size_t n) {
        fprintf(stderr, "gpuward: out of memory allocating %zu bytes\n", n);
        abort();
}

void *gw_xmalloc(size_t n) {
        void *p = malloc(n ? n : 1);
        if (!p)
                oom(n);
        return p;
}

void *gw_xcalloc(size_t n, size_t size) {
        void *p = calloc(n ? n : 1, size ? size : 1);
        if (!p)
                oom(n * size);
        return p;
}

void *gw_xrealloc(void *p, size_t n) {
        void *q = realloc(p, n ? n : 1);
        if (!q)
                oom(n);
        return q;
}

char *gw_xstrdup(const char *s) {
        char *p = strdup(s ? s : "");
        if (!p)
                oom(strlen(s));
        return p;
}
