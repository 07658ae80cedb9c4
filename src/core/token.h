/* API tokens for TCP clients: made from random bytes the caller supplies, stored only as
 * a SHA-256 hash.  Pure: the daemon reads the randomness (getrandom) and the store keeps
 * the hash; nothing here does I/O.
 *
 * A token is "gw_" followed by 64 lowercase hex digits (32 random bytes): 67 characters.
 * The prefix lets secret scanners and users recognise one.  The stored form is
 * sha256_hex(token string, prefix included): 64 lowercase hex digits.  Tokens carry 256
 * bits of entropy, so an unsalted fast hash is enough; a stolen database gives no usable
 * token.  The daemon looks the row up by hash (an index on it), then confirms with
 * gw_token_matches() so that the final comparison is constant-time. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sha256.h"
#include "base/time.h"

#define GW_TOKEN_PREFIX "gw_"
#define GW_TOKEN_PREFIX_LEN 3
#define GW_TOKEN_RANDOM_BYTES 32
#define GW_TOKEN_LEN (GW_TOKEN_PREFIX_LEN + 2 * GW_TOKEN_RANDOM_BYTES) /* 67 */
#define GW_TOKEN_SIZE (GW_TOKEN_LEN + 1)
#define GW_TOKEN_HASH_SIZE GW_SHA256_HEX_SIZE /* 64 hex digits and a NUL */
/* A token's scope: a node agent's token may only post node snapshots, so that the token
 * every compute node holds is not one that can do what an admin can.  No scope ("") is the
 * account's whole rights. */
#define GW_TOKEN_SCOPE_AGENT "agent"
/* A CI runner's token: it may submit jobs and read its own jobs, nothing else, so that a
 * token kept in a CI system's secrets cannot cancel, book or read what others run. */
#define GW_TOKEN_SCOPE_CI "ci"
/* A reader of published models (a deployment, a model registry's sync): it may list the
 * models and fetch their files, nothing else. */
#define GW_TOKEN_SCOPE_MODELS "models"

/* A node agent's token is bound to one node: its Slurm name, at most this many bytes. */
#define GW_TOKEN_NODE_MAX 64

/* Whether s can be a node's Slurm name as gpuward takes one from an agent, a token or the
 * command line: 1-GW_TOKEN_NODE_MAX letters, digits, '.', '-' or '_'.  NULL is not. */
bool gw_token_node_name_valid(const char *s);

/* Writes the token made of these random bytes into out (NUL-terminated).  The caller
 * shows it once and keeps only gw_token_hash() of it; it should wipe both buffers. */
void gw_token_format(const uint8_t random[GW_TOKEN_RANDOM_BYTES], char out[GW_TOKEN_SIZE]);

/* Whether s has the token shape: the prefix, then exactly 64 lowercase hex digits. */
bool gw_token_is_wellformed(const char *s);

/* The stored form of a token.  Returns 0, or -EINVAL (out untouched) for a malformed
 * token, so that garbage never reaches the store as a lookup key. */
int gw_token_hash(const char *token, char out[GW_TOKEN_HASH_SIZE]);

/* Whether token hashes to stored_hash (64 hex digits).  Compares in constant time; false
 * for a malformed token or hash. */
bool gw_token_matches(const char *token, const char *stored_hash);

/* Constant-time equality of n bytes: the time depends on n only. */
bool gw_memeq_ct(const void *a, const void *b, size_t n);

/* The token in an Authorization header value: "Bearer <token>" (scheme case-insensitive,
 * spaces around allowed).  Returns 0 and points *ret_token into value (ret_len bytes), or
 * -ENOENT when the scheme is not Bearer, -EINVAL when the token is not well-formed. */
int gw_token_from_bearer(const char *value, const char **ret_token, size_t *ret_len);

/* The longest lifetime a token may be given (--expires): ten years.  Longer is a typo. */
#define GW_TOKEN_LIFETIME_MAX ((gw_usec_t) 3650 * 24 * 3600 * GW_USEC_PER_SEC)
#define GW_TOKEN_MSG_SIZE 128

/* A token's lifetime as typed after --expires: a duration with its unit ("30d", "12h",
 * "90m", "1h30m", "45s") or "never".  A bare number is refused (minutes elsewhere in
 * gpuward, but days are what people mean for tokens), as are zero and anything longer than
 * GW_TOKEN_LIFETIME_MAX.  Returns 0 with *ret (0 = never), or -EINVAL with one line in msg. */
int gw_token_parse_lifetime(const char *s, gw_usec_t *ret, char *msg, size_t msg_size);

/* Whether a token that expires at expires (wall clock; 0 = never) is unusable at now.  A
 * token is usable up to, not at, its expiry. */
bool gw_token_expired(gw_usec_t expires, gw_usec_t now);
