#include "api/route.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

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

/* Matches path against pattern; {id} takes 1-18 digits, no leading zero; {index} also 0. */
static bool path_match(const char *pattern, const char *path, int64_t *ret_id) {
        int64_t id = 0;
        while (*pattern) {
                if (strncmp(pattern, "{index}", 7) == 0) {
                        if (!take_number(&path, true, 4, &id))
                                return false;
                        pattern += 7;
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
