/* Instants as people type them, for bookings: "now", "now+2h", "+90m", "14:00",
 * "tomorrow 09:00", "today 18:30", "2026-11-22 09:00", ISO 8601 "2026-11-22T09:00:00Z" or with
 * an offset, "@1763769600" (Unix seconds).  Local times use the process's time zone.  A bare
 * "HH:MM" that has passed today means tomorrow. */
#pragma once
#include "base/time.h"

/* 0 and *ret (wall clock, microseconds), or -EINVAL. */
int gw_parse_when(const char *s, gw_usec_t now, gw_usec_t *ret);
