/* A JSON value as compact text, byte for byte what jansson's json_dumps writes with
 * JSON_COMPACT | JSON_ENCODE_ANY (and JSON_REAL_PRECISION(precision)), in a fraction of its
 * time: jansson hands its writer a few bytes at a time and checks every object and array
 * for a loop through a table keyed by its address printed as text, which made dumping the
 * job in each event of the stream the larger part of a submission's cost.
 * unit_test_jsonout checks the sameness against jansson on random values. */
#pragma once
#include <jansson.h>
#include <stddef.h>

/* A number as jansson writes it, into buf (GW_JSON_NUMBER_SIZE bytes, NUL-terminated);
 * returns its length.  A real: "%.17g" (or the precision asked for, 1..31; 0 = 17), ".0" when
 * that reads as an integer, the exponent without '+' or leading zeros ("1e20", "1e-7"); v
 * must be finite (jansson holds no other). */
#define GW_JSON_NUMBER_SIZE 64
size_t gw_json_int_text(long long v, char *buf);
size_t gw_json_real_text(double v, int precision, char *buf);

/* The text of v, NUL-terminated, malloc'd; its length in *ret_len (may be NULL).
 * precision: significant digits of reals, 1..31; 0 = jansson's default, 17.  NULL when
 * v is NULL or nests deeper than jansson writes (2048). */
char *gw_json_compact(const json_t *v, int precision, size_t *ret_len);
