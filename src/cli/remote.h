/* A daemon reached over TCP instead of its Unix socket: GPUWARD_URL, with a bearer token from
 * GPUWARD_TOKEN or --token-file.  What a CI runner on another machine uses. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#define CLI_URL_MAX 512
#define CLI_URL_HOST_MAX 255

struct cli_remote {
        char url[CLI_URL_MAX]; /* as given, for messages */
        char host[CLI_URL_HOST_MAX + 1]; /* a name or an address, IPv6 without brackets */
        char hostport[CLI_URL_HOST_MAX + 9]; /* what the Host header says: as in the URL */
        char port[6]; /* "8470" when the URL names none */
        char token[80]; /* "" none: the daemon takes the caller for a guest */
        bool insecure; /* GPUWARD_INSECURE=1: a token may go to a host
                                            * off loopback over plain http */
};

/* Parses url, "http://HOST[:PORT][/]" (HOST a name, an IPv4 address or [IPv6]; PORT
 * 1-65535, default 8470), into ret's host, hostport, port and url.  Pure.  Returns 0;
 * -EPROTONOSUPPORT for "https://" (this build has no TLS library: put a TLS proxy in front
 * and point the URL at its end on this host); -EINVAL for anything else, with one line in
 * why. */
int cli_url_parse(const char *url, struct cli_remote *ret, char *why, size_t why_size);

/* Puts the token in text (the contents of GPUWARD_TOKEN or of a token file: surrounding
 * white space is dropped) into ret->token.  Pure.  0, or -EINVAL when it is not one (a token
 * is "gw_" and 64 hex digits). */
int cli_remote_set_token(struct cli_remote *ret, const char *text);

/* Reads the token file at path (at most 4 KiB) into ret->token.  0, or -errno (-EINVAL: its
 * contents are not a token). */
int cli_remote_token_file(struct cli_remote *ret, const char *path);

/* Whether the numeric address host (IPv4 or IPv6, no brackets) or the name "localhost" is
 * this machine's loopback.  A name is not resolved here: false. */
bool cli_host_is_loopback_literal(const char *host);
