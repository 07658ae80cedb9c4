/* JSON in a bump allocator, for one long listing: `gpuward queue` with 10,000 jobs parses
 * ~130,000 JSON values, and a malloc and a free for each were a third of its time.  Between
 * begin and end, jansson allocates from large blocks and frees nothing; end drops the blocks.
 * Every JSON value made in between must be released before end (and none made before may be
 * released in between: such frees are passed on to free).  What json_dumps returns in
 * between is arena memory too: never free() it. */
#pragma once

void cli_json_arena_begin(void);
void cli_json_arena_end(void);
