/* Parsers for what users type: durations, sizes.  Pure, no allocation, fuzzed. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"

/* "90m", "30min", "2h", "1.5h", "1d", "45s", "90sec", "1h30m", "HH:MM:SS", "MM:SS",
 * "D-HH:MM:SS", bare number = minutes (as sbatch), "2.5" = 2 minutes 30 seconds.  Rejects
 * negatives, zero, unknown units ("30mins", "1hr", "5M", "1w"), blanks, a fraction with more
 * than one unit or that is not whole seconds ("1.5h30m", "1.5s"), overflow.  Returns 0 and
 * writes *ret_usec, or -EINVAL. */
int gw_parse_duration(const char *s, gw_usec_t *ret_usec);
/* What every "is not a duration" message ends with, so that all the places a duration is
 * typed teach the same forms. */
#define GW_DURATION_FORMS "use 30m, 1.5h, 1h30m, 90s, 2d or H:MM:SS"

/* "512", "512M", "16G", "16GiB", "1.5G", "80GB", "1T"; bare number = MiB.  Binary units
 * (G = GiB).  Returns 0 and writes *ret_bytes, or -EINVAL / -ERANGE. */
int gw_parse_size(const char *s, uint64_t *ret_bytes);

/* Decimal integer in [min, max], whole string.  0 or -EINVAL / -ERANGE. */
int gw_parse_int(const char *s, long long min, long long max, long long *ret);

/* "1h30m", "45s", "2d3h", "-" for negative or unknown.  Writes at most n bytes. */
char *gw_format_duration(gw_usec_t d, char *buf, size_t n);

/* t in local time for messages: "13:00" on ref's day (ref 0: none), else "Sat 13:00".  The
 * shape of a calendar's formatter (core/calendar.h); userdata is not used. */
void gw_format_local_time(gw_usec_t t, gw_usec_t ref, char *buf, size_t n, void *userdata);

/* "16.0 GiB", "512 MiB". */
char *gw_format_size(uint64_t bytes, char *buf, size_t n);

/* The signals a job may ask for ahead of its end (submit --signal): "USR1", "SIGUSR1" or
 * "usr1".  Returns the signal number, or -EINVAL for any other (KILL, STOP, numbers: a
 * signal that cannot be handled is no warning). */
int gw_signal_parse(const char *s);
/* "USR1" for SIGUSR1; NULL for a signal gw_signal_parse does not take. */
const char *gw_signal_name(int sig);
