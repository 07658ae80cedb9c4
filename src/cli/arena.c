/* The JSON arena (see arena.h). */
#include <errno.h>
#include <jansson.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "cli/arena.h"

#define BLOCK_BYTES ((size_t) 1 << 20)

/* Under AddressSanitizer, what is not handed out is poisoned: a value still used after its
 * row's memory was released (cli_json_arena_release) is reported, not read made again. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENA_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ARENA_ASAN 1
#endif
#ifdef ARENA_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void) (p), (void) (n))
#define UNPOISON(p, n) ((void) (p), (void) (n))
#endif

struct block {
        struct block *prev;
        size_t size, used;
        alignas(max_align_t) unsigned char data[];
};

static struct block *top;
static struct block *spare; /* given back by cli_json_arena_release, for the next rows */

/* mmap with MAP_POPULATE: the pages are made in one call, not one page fault each. */
static struct block *block_new(size_t need) {
        for (struct block **p = &spare; *p; p = &(*p)->prev)
                if ((*p)->size >= need) {
                        struct block *b = *p;
                        *p = b->prev;
                        b->prev = top;
                        b->used = 0;
                        POISON(b->data, b->size);
                        return b;
                }
        size_t size = need + sizeof(struct block) > BLOCK_BYTES ? need + sizeof(struct block) : BLOCK_BYTES;
        struct block *b = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (b == MAP_FAILED)
                return NULL;
        b->prev = top;
        b->size = size - sizeof(struct block);
        b->used = 0;
        POISON(b->data, b->size);
        return b;
}

static void *arena_malloc(size_t n) {
        n = (n + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1);
        if (!top || top->size - top->used < n) {
                struct block *b = block_new(n);
                if (!b)
                        return NULL;
                top = b;
        }
        void *p = top->data + top->used;
        top->used += n;
        UNPOISON(p, n);
        return p;
}

static bool in_blocks(const struct block *b, const void *p) {
        for (; b; b = b->prev)
                if ((const unsigned char *) p >= b->data && (const unsigned char *) p < b->data + b->size)
                        return true;
        return false;
}

static bool in_arena(const void *p) { return in_blocks(top, p) || in_blocks(spare, p); }

static void arena_free(void *p) {
        if (p && !in_arena(p))
                free(p);
}

void cli_json_arena_begin(void) { json_set_alloc_funcs(arena_malloc, arena_free); }

static void unmap_all(struct block **list) {
        while (*list) {
                struct block *b = *list;
                *list = b->prev;
                UNPOISON(b->data, b->size); /* the next mapping there is not the arena's */
                (void) munmap(b, b->size + sizeof(struct block));
        }
}

void cli_json_arena_end(void) {
        json_set_alloc_funcs(malloc, free);
        unmap_all(&top);
        unmap_all(&spare);
}

int cli_json_arena_mark(struct cli_json_arena_mark *ret) {
        if (!top && !(top = block_new(0)))
                return -ENOMEM;
        *ret = (struct cli_json_arena_mark){ top, top->used };
        return 0;
}

void cli_json_arena_release(const struct cli_json_arena_mark *m) {
        while (top && top != m->block) {
                struct block *b = top;
                top = b->prev;
                b->prev = spare;
                spare = b;
                POISON(b->data, b->size);
        }
        if (top) {
                top->used = m->used;
                POISON(top->data + top->used, top->size - top->used);
        }
}
