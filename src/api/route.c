#include "api/route.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* Matches path against pattern; {id} takes 1-18 digits, no leading zero; {index} also 0. */
static bool path_match(const char *pattern, const char *path, int64_t *ret_id) {
        int64_t id = 0;
        while (*pattern) {
                if (strncmp(pattern, "{index}", 7) == 0) {
                        int digits = 0;
                        if (*path < '0' || *path > '9' || (path[0] == '0' && path[1] >= '0' && path[1] <= '9'))
                                return false;
                        while (*path >= '0' && *path <= '9') {
                                if (++digits > 4)
                                        return false;
                                id = id * 10 + (*path++ - '0');
                        }
                        pattern += 7;
                        continue;
                }
                if (strncmp(pattern, "{id}", 4) == 0) {
                        int digits = 0;
                        if (*path < '1' || *path > '9')
                                return false;
                        while (*path >= '0' && *path <= '9') {
                                if (++digits > 18)
                                        return false;
                                id = id * 10 + (*path++ - '0');
                        }
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
