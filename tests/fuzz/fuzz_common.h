/* Shared by the libFuzzer targets: turning the fuzzer's bytes into what a parser takes. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A NUL-terminated copy of data (embedded NULs cut the string short, as they would for a
 * C caller).  Malloc'ed so that ASan sees reads one past the terminator. */
static inline char *fuzz_strndup(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);
        if (!s)
                abort();
        if (size)
                memcpy(s, data, size);
        s[size] = '\0';
        return s;
}

/* An exact-size heap copy of data (not NUL-terminated), so that ASan catches a read one
 * past its end. */
static inline char *fuzz_memdup(const uint8_t *data, size_t size) {
        char *s = malloc(size ? size : 1);
        if (!s)
                abort();
        if (size)
                memcpy(s, data, size);
        return s;
}

/* An invariant the fuzzer broke: report it the way a sanitizer would, so libFuzzer saves
 * the input. */
#define FUZZ_CHECK(cond)                                                                             \
        do {                                                                                         \
                if (!(cond)) {                                                                       \
                        fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
                        abort();                                                                     \
                }                                                                                    \
        } while (0)
