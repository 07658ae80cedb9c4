/* A JSON reader for long replies (the job list): the same values jansson's json_loadb makes,
 * in a fraction of its time, for the JSON the daemon writes. */
#pragma once

#include <jansson.h>
#include <stddef.h>

/* The value in buf[0..len), or NULL when buf is not JSON or uses what this reader leaves to
 * jansson (\u escapes, numbers jansson would refuse): the caller then asks json_loadb, which
 * also says what is wrong. */
json_t *cli_json_load_fast(const char *buf, size_t len);
