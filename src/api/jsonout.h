/* A JSON value as compact text, byte for byte what jansson's json_dumps writes with
 * JSON_COMPACT | JSON_ENCODE_ANY (and JSON_REAL_PRECISION(precision)), in a fraction of its
 * time: jansson hands its writer a few bytes at a time and checks every object and array
 * for a loop through a table keyed by its address printed as text, which made dumping the
 * job in each event of the stream the larger part of a submission's cost.
 * unit_test_jsonout checks the sameness against jansson on random values. */
#pragma once
#include <jansson.h>
#include <stddef.h>

/* The text of v, NUL-terminated, malloc'd; its length in *ret_len (may be NULL).
 * precision: significant digits of reals, 1..31; 0 = jansson's default, 17.  NULL when
 * v is NULL or nests deeper than jansson writes (2048). */
char *gw_json_compact(const json_t *v, int precision, size_t *ret_len);
