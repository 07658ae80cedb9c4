/* Bookings in the CLI: how their times read, and the calls that change one (release,
 * approve, deny) shared by `unreserve` and `admin approve|deny`. */
#pragma once
#include <jansson.h>
#include <stddef.h>
#include <time.h>

#include "cli/cli.h"

/* An instant (Unix seconds) as a booking's start or end: "Sat 09:00" within the coming
 * week, "Sat 11-28 09:00" further off or past, "2027-01-05 09:00" in another year; "-"
 * when absent.  Writes at most n bytes into buf and returns buf. */
char *cli_format_when(double unix_s, time_t now, char *buf, size_t n);

/* A booking's window as one phrase: "Sat 09:00-13:00", "Sat 22:00-Sun 02:00". */
char *cli_booking_span(const json_t *booking, time_t now, char *buf, size_t n);

/* A booking id as typed: a positive decimal.  Prints a usage error naming verb on failure. */
int cli_parse_booking_id(const char *verb, const char *s, long long *ret_id);

enum cli_booking_change {
        CLI_BOOKING_RELEASE, /* DELETE /api/v1/bookings/{id}: its owner or an admin */
        CLI_BOOKING_APPROVE, /* POST .../approve: admins */
        CLI_BOOKING_DENY, /* POST .../deny: admins */
};

/* `VERB [--json] ID...` for one of the changes: parses argv (argv[0] is the command),
 * prints help for --help, checks every id before changing any, and reports each. */
int cli_booking_change_run(struct cli_ctx *ctx, enum cli_booking_change change, const char *verb, const char *help,
                           int argc, char **argv);
