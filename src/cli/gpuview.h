/* How the CLI shows the GPU list (GET /api/v1/gpus, docs/API.md) to a human; `gpus` and
 * `top` print the same rows. */
#pragma once
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

/* Writes the GPU table of reply to f: per GPU one row (index, name, utilisation, memory
 * used/total, temperature, power, health, the job on it with its user, name and running
 * time, ETA), each followed by indented lines: why it was drained, and one per rogue
 * process on it (a process that belongs to no job); then a footer counting rogue processes when there are any.  Values
 * the daemon sends as null print "-".  now: for running times.  Borrows everything.
 * width: the terminal's columns, 0 for no limit (a pipe); when the full table is wider it
 * shortens the GPU names, then compacts memory and headers, then leaves out temperature and
 * power (and HEALTH while every GPU is ok), then cuts names with an ellipsis.
 * Returns 0, -EBADMSG when reply holds no "gpus" array, -ENOMEM. */
int cli_gpus_print(const json_t *reply, time_t now, size_t width, FILE *f);

/* Rogue processes in reply: its "rogue_processes" when it says, else those listed. */
long long cli_gpus_rogue_count(const json_t *reply);
