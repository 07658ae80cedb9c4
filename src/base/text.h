/* Text that users wrote, on its way to a terminal or to other users.  Pure, no I/O. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* fmt's text in buf (n bytes, cut to fit) for a caller that asked for one: nothing when buf
 * is NULL or n is 0.  The "why" and message buffers of pure functions. */
void gw_say(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Rewrites s in place so that it cannot drive a terminal or reorder what it shows: C0
 * controls (ESC, CR, tabs too), DEL, C1 controls (U+0080-U+009F), the bidirectional
 * controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) and bytes that are not
 * UTF-8 each become one '?'.  Never longer than before; returns the new length. */
size_t gw_text_neutralize(char *s);

/* A part of a stored text (a job's end reason, an event) that quotes the job's own log is
 * kept between these two bytes, so that each reader is given the text its rights allow:
 * they never come out of gw_text_private_render, and gw_text_private_wrap keeps them out
 * of the quoted part. */
#define GW_TEXT_PRIVATE_OPEN '\x1e'
#define GW_TEXT_PRIVATE_CLOSE '\x1f'

/* Writes s into dst (n bytes) between the markers, cut on a UTF-8 boundary to fit, the
 * marker bytes inside s replaced by '?'.  dst is "" when n is under 3.  Returns dst. */
char *gw_text_private_wrap(char *dst, size_t n, const char *s);
/* s for a reader: with show, the private parts as they are; without, each replaced by
 * instead (NULL: dropped).  An unterminated part runs to the end of s.  Malloc'ed (NULL s
 * reads ""); aborts when out of memory. */
char *gw_text_private_render(const char *s, bool show, const char *instead);
/* Whether s has a private part, or a stray marker byte: whether it needs rendering. */
bool gw_text_has_private(const char *s);

/* text into HTML or XML (SVG) character data or a quoted attribute: & < > " ' escaped, control
 * characters but tab and newline dropped.  NULL writes nothing. */
void gw_text_put_markup(FILE *f, const char *text);
