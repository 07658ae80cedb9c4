/* SHA-256 (FIPS 180-4), written for token hashing.  Pure: no allocation, no I/O.
 *
 * Streaming use: gw_sha256_init(&c); gw_sha256_update(&c, p, n)...; gw_sha256_final(&c, d).
 * One-shot: gw_sha256(p, n, d) or gw_sha256_hex(p, n, hex). */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define GW_SHA256_DIGEST_SIZE 32
#define GW_SHA256_HEX_SIZE 65 /* 64 lowercase hex digits and a NUL */

struct gw_sha256 {
        uint32_t h[8];
        uint64_t nbytes; /* message length so far */
        uint8_t block[64];
        size_t nblock; /* bytes waiting in block */
};

void gw_sha256_init(struct gw_sha256 *c);
void gw_sha256_update(struct gw_sha256 *c, const void *data, size_t n);
/* Writes the digest and wipes the context; re-init before reuse. */
void gw_sha256_final(struct gw_sha256 *c, uint8_t digest[GW_SHA256_DIGEST_SIZE]);

void gw_sha256(const void *data, size_t n, uint8_t digest[GW_SHA256_DIGEST_SIZE]);
/* Digest as 64 lowercase hex digits, NUL-terminated. */
void gw_sha256_hex(const void *data, size_t n, char hex[GW_SHA256_HEX_SIZE]);

/* Lowercase hex of n bytes into out (2n + 1 bytes, NUL-terminated). */
void gw_hex_encode(const uint8_t *bytes, size_t n, char *out);
