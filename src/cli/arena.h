/* JSON in a bump allocator, for one long listing: `gpuward queue` with 10,000 jobs parses
 * ~130,000 JSON values, and a malloc and a free for each were a third of its time.  Between
 * begin and end, jansson allocates from large blocks and frees nothing; end drops the blocks.
 * Every JSON value made in between must be released before end (and none made before may be
 * released in between: such frees are passed on to free).  What json_dumps returns in
 * between is arena memory too: never free() it. */
#pragma once
#include <stddef.h>

void cli_json_arena_begin(void);
void cli_json_arena_end(void);

/* A place in the arena (cli_json_arena_mark) to go back to (cli_json_arena_release): what was
 * made after it is made again in the same memory.  A listing read a row at a time so takes
 * the memory of one row, which stays in the cache, not of all rows (megabytes, each value's
 * first write a cache miss). */
struct cli_json_arena_mark {
        void *block;
        size_t used;
};
/* Where the arena is now: 0, or -ENOMEM. */
int cli_json_arena_mark(struct cli_json_arena_mark *ret);
/* Makes everything made after m free to be made again.  None of it may be in use any more:
 * no value made after m may be held (or released) by anything made before it. */
void cli_json_arena_release(const struct cli_json_arena_mark *m);
