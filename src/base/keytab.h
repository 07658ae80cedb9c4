/* A table from a 64-bit key (a job id) to a pointer, with O(1) lookups: how a feature keeps
 * its own state of each job beside the job rather than in it.  Open addressing with linear
 * probing; a removal shifts the probe run back, so there are no tombstones and a lookup
 * never walks past deleted slots.  The slots are allocated on the first put and given back
 * when the last entry is taken, so an idle feature holds no memory and needs no close.
 * Allocation failure aborts (gw_xcalloc).  Pure: no I/O. */
#pragma once
#include <stddef.h>
#include <stdint.h>

struct gw_keytab_slot {
        uint64_t key;
        void *value; /* NULL: empty */
};

/* Zero-initialised is an empty table. */
struct gw_keytab {
        struct gw_keytab_slot *slots;
        size_t cap, n; /* cap: a power of two, or 0 before the first put */
};

/* The value kept for key, or NULL.  Borrowed: the table does not own its values. */
void *gw_keytab_get(const struct gw_keytab *t, uint64_t key);
/* Keeps value (not NULL) for key, replacing what was there (which the caller frees). */
void gw_keytab_put(struct gw_keytab *t, uint64_t key, void *value);
/* Removes key and returns its value (the caller's now), or NULL when it was not there. */
void *gw_keytab_take(struct gw_keytab *t, uint64_t key);
/* Frees the slots, not the values: for a table given up while it still holds some. */
void gw_keytab_done(struct gw_keytab *t);
