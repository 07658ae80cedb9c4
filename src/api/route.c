#include "api/route.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Takes the number at *path into *id: up to max_digits digits with no leading zero, "0"
 * itself only when zero_ok.  false when there is none. */
static bool take_number(const char **path, bool zero_ok, int max_digits, int64_t *id) {
        const char *p = *path;
        if (!is_digit(*p) || (*p == '0' && (!zero_ok || is_digit(p[1]))))
                return false;
        for (int digits = 0; is_digit(*p); p++) {
                if (++digits > max_digits)
                        return false;
                *id = *id * 10 + (*p - '0');
        }
        *path = p;
        return true;
}

/* Matches path against pattern; {id} takes 1-18 digits, no leading zero; {index} also 0;
 * {name} a segment of 1-64 name characters. */
static bool path_match(const char *pattern, const char *path, int64_t *ret_id) {
        int64_t id = 0;
        while (*pattern) {
                if (strncmp(pattern, "{index}", 7) == 0) {
                        if (!take_number(&path, true, 4, &id))
                                return false;
                        pattern += 7;
                        continue;
                }
                if (strncmp(pattern, "{name}", 6) == 0) {
                        size_t len = strspn(path, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-");
                        if (len == 0 || len > 64)
                                return false;
                        path += len;
                        pattern += 6;
                        continue;
                }
                if (strncmp(pattern, "{id}", 4) == 0) {
                        if (!take_number(&path, false, 18, &id))
                                return false;
                        pattern += 4;
                        continue;
                }
                if (*pattern++ != *path++)
                        return false;
        }
        if (*path == '/' && path[1] == '\0')
                path++;
        if (*path)
                return false;
        *ret_id = id;
        return true;
}

int gw_route_match(const struct gw_route *table, size_t n, const char *method, const char *path,
                   const struct gw_route **ret, int64_t *ret_id) {
        bool path_seen = false;
        for (size_t i = 0; i < n; i++) {
                int64_t id = 0;
                if (!path_match(table[i].pattern, path, &id))
                        continue;
                path_seen = true;
                if (strcmp(table[i].method, method) == 0) {
                        *ret = &table[i];
                        *ret_id = id;
                        return 0;
                }
        }
        return path_seen ? -EBADRQC : -ENOENT;
}

int gw_route_array_task(const char *path, char *buf, size_t size, int64_t *ret_index) {
        static const char prefix[] = "/api/v1/jobs/";
        size_t lp = sizeof prefix - 1;
        if (strncmp(path, prefix, lp))
                return -ENOENT;
        const char *p = path + lp;
        size_t digits = strspn(p, "0123456789");
        if (!digits || p[digits] != '_')
                return -ENOENT;
        const char *q = p + digits + 1;
        size_t idigits = strspn(q, "0123456789");
        if (!idigits || idigits > 6 || (q[idigits] && q[idigits] != '/'))
                return -ENOENT;
        int64_t index = 0;
        for (size_t i = 0; i < idigits; i++)
                index = index * 10 + (q[i] - '0');
        int n = snprintf(buf, size, "%.*s%s", (int) (lp + digits), path, q + idigits);
        if (n < 0 || (size_t) n >= size)
                return -ENAMETOOLONG;
        *ret_index = index;
        return 0;
}
