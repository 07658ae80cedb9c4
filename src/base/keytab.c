/* A key-to-pointer table (keytab.h). */
#include <assert.h>
#include <stdlib.h>

#include "base/cleanup.h"
#include "base/keytab.h"

#define MIN_CAP 16

/* Fibonacci hashing: job ids are consecutive, and the multiply spreads them over the slots. */
static size_t home(const struct gw_keytab *t, uint64_t key) {
        return (size_t) ((key * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & (t->cap - 1);
}

static size_t find(const struct gw_keytab *t, uint64_t key) {
        size_t i = home(t, key);
        while (t->slots[i].value && t->slots[i].key != key)
                i = (i + 1) & (t->cap - 1);
        return i;
}

void *gw_keytab_get(const struct gw_keytab *t, uint64_t key) { return t->cap ? t->slots[find(t, key)].value : NULL; }

static void grow(struct gw_keytab *t) {
        struct gw_keytab old = *t;
        t->cap = old.cap ? old.cap * 2 : MIN_CAP;
        t->slots = gw_xcalloc(t->cap, sizeof *t->slots);
        for (size_t i = 0; i < old.cap; i++)
                if (old.slots[i].value)
                        t->slots[find(t, old.slots[i].key)] = old.slots[i];
        free(old.slots);
}

void gw_keytab_put(struct gw_keytab *t, uint64_t key, void *value) {
        assert(value);
        /* At most half full: probe runs stay short. */
        if ((t->n + 1) * 2 > t->cap)
                grow(t);
        size_t i = find(t, key);
        if (!t->slots[i].value)
                t->n++;
        t->slots[i] = (struct gw_keytab_slot){ .key = key, .value = value };
}

void *gw_keytab_take(struct gw_keytab *t, uint64_t key) {
        if (!t->cap)
                return NULL;
        size_t i = find(t, key);
        void *value = t->slots[i].value;
        if (!value)
                return NULL;
        /* Shift back each later entry of the run whose home is not between the hole and it,
         * so that every entry stays reachable from its home without tombstones. */
        size_t mask = t->cap - 1;
        for (size_t j = (i + 1) & mask; t->slots[j].value; j = (j + 1) & mask) {
                size_t h = home(t, t->slots[j].key);
                if (((j - h) & mask) >= ((j - i) & mask)) {
                        t->slots[i] = t->slots[j];
                        i = j;
                }
        }
        t->slots[i] = (struct gw_keytab_slot){ 0 };
        if (--t->n == 0)
                gw_keytab_done(t);
        return value;
}

void gw_keytab_done(struct gw_keytab *t) {
        free(t->slots);
        *t = (struct gw_keytab){ 0 };
}
