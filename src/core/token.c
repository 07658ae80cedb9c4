#include "core/token.h"

#include <errno.h>
#include <string.h>

static bool is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

void gw_token_format(const uint8_t random[GW_TOKEN_RANDOM_BYTES], char out[GW_TOKEN_SIZE]) {
        memcpy(out, GW_TOKEN_PREFIX, GW_TOKEN_PREFIX_LEN);
        gw_hex_encode(random, GW_TOKEN_RANDOM_BYTES, out + GW_TOKEN_PREFIX_LEN);
}

/* Checks n bytes of s; s need not be NUL-terminated after them. */
static bool wellformed_n(const char *s, size_t n) {
        if (n != GW_TOKEN_LEN || memcmp(s, GW_TOKEN_PREFIX, GW_TOKEN_PREFIX_LEN) != 0)
                return false;
        for (size_t i = GW_TOKEN_PREFIX_LEN; i < n; i++)
                if (!is_lower_hex(s[i]))
                        return false;
        return true;
}

bool gw_token_is_wellformed(const char *s) {
        return s && wellformed_n(s, strnlen(s, GW_TOKEN_LEN + 1));
}

int gw_token_hash(const char *token, char out[GW_TOKEN_HASH_SIZE]) {
        if (!gw_token_is_wellformed(token) || !out)
                return -EINVAL;
        gw_sha256_hex(token, GW_TOKEN_LEN, out);
        return 0;
}

bool gw_memeq_ct(const void *a, const void *b, size_t n) {
        const volatile uint8_t *x = a, *y = b;
        uint8_t diff = 0;

        for (size_t i = 0; i < n; i++)
                diff |= (uint8_t) (x[i] ^ y[i]);
        return diff == 0;
}

bool gw_token_matches(const char *token, const char *stored_hash) {
        char h[GW_TOKEN_HASH_SIZE];
        bool ok;

        if (!stored_hash || strnlen(stored_hash, GW_TOKEN_HASH_SIZE) != GW_TOKEN_HASH_SIZE - 1)
                return false;
        for (size_t i = 0; i < GW_TOKEN_HASH_SIZE - 1; i++)
                if (!is_lower_hex(stored_hash[i]))
                        return false;
        if (gw_token_hash(token, h) < 0)
                return false;
        ok = gw_memeq_ct(h, stored_hash, GW_TOKEN_HASH_SIZE - 1);
        memset(h, 0, sizeof(h));
        return ok;
}

static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char) (c - 'A' + 'a') : c; }

int gw_token_from_bearer(const char *value, const char **ret_token, size_t *ret_len) {
        static const char scheme[] = "bearer";
        const char *p = value, *end;

        if (!value || !ret_token || !ret_len)
                return -EINVAL;
        while (*p == ' ' || *p == '\t')
                p++;
        for (size_t i = 0; i < sizeof(scheme) - 1; i++, p++)
                if (lower(*p) != scheme[i])
                        return -ENOENT;
        if (*p != ' ' && *p != '\t')
                return -ENOENT;
        while (*p == ' ' || *p == '\t')
                p++;
        end = p;
        while (*end && *end != ' ' && *end != '\t')
                end++;
        for (const char *q = end; *q; q++)
                if (*q != ' ' && *q != '\t')
                        return -EINVAL;
        if (!wellformed_n(p, (size_t) (end - p)))
                return -EINVAL;
        *ret_token = p;
        *ret_len = (size_t) (end - p);
        return 0;
}
