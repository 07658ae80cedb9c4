#include "core/token.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/parse.h"

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

bool gw_token_is_wellformed(const char *s) { return s && wellformed_n(s, strnlen(s, GW_TOKEN_LEN + 1)); }

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

int gw_token_parse_lifetime(const char *s, gw_usec_t *ret, char *msg, size_t msg_size) {
        gw_usec_t d;
        const char *why = NULL;

        if (!s || !*s)
                why = "give a lifetime such as 30d, 12h, 90m, or never";
        else if (!strcmp(s, "never")) {
                *ret = 0;
                return 0;
        } else if (strspn(s, "0123456789") == strlen(s))
                why = "give a unit: 30d, 12h, 90m (or never)";
        else if (s[0] == '-' || gw_parse_duration(s, &d) < 0)
                why = "not a lifetime (examples: 30d, 12h, 90m, 1h30m, never)";
        else if (d > GW_TOKEN_LIFETIME_MAX)
                why = "at most 3650d (ten years), or never";
        if (why) {
                if (msg && msg_size)
                        (void) snprintf(msg, msg_size, "'%.40s': %s", s ? s : "", why);
                return -EINVAL;
        }
        *ret = d;
        return 0;
}

bool gw_token_node_name_valid(const char *s) {
        static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_";
        size_t n = s ? strnlen(s, GW_TOKEN_NODE_MAX + 1) : 0;
        return n > 0 && n <= GW_TOKEN_NODE_MAX && strspn(s, ok) == n;
}

bool gw_token_expired(gw_usec_t expires, gw_usec_t now) { return expires > 0 && now >= expires; }
