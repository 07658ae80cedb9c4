/* libFuzzer target: the route matcher (src/api/route.h) over the daemon's table.  The input
 * reads as a request line, "METHOD PATH" (split at the first space; no space = GET). */
#include <errno.h>

#include "api/route.h"
#include "fuzz_common.h"

/* The daemon's route table (src/daemon/http/handlers.c), patterns and flags only. */
static const struct gw_route table[] = {
        { "GET", "/healthz", 0 },
        { "GET", "/api/v1/whoami", 0 },
        { "POST", "/api/v1/jobs", GW_ROUTE_MUTATES },
        { "POST", "/api/v1/jobs/batch", GW_ROUTE_MUTATES },
        { "GET", "/api/v1/jobs", 0 },
        { "GET", "/api/v1/jobs/{id}", 0 },
        { "DELETE", "/api/v1/jobs/{id}", GW_ROUTE_MUTATES },
        { "POST", "/api/v1/jobs/{id}/hold", GW_ROUTE_MUTATES },
        { "POST", "/api/v1/jobs/{id}/release", GW_ROUTE_MUTATES },
        { "GET", "/api/v1/jobs/{id}/log", 0 },
        { "GET", "/api/v1/gpus", 0 },
        { "POST", "/api/v1/gpus/{index}/drain", GW_ROUTE_MUTATES | GW_ROUTE_ADMIN },
        { "POST", "/api/v1/gpus/{index}/undrain", GW_ROUTE_MUTATES | GW_ROUTE_ADMIN },
        { "GET", "/api/v1/jobs/{id}/series", 0 },
        { "GET", "/metrics", 0 },
        { "GET", "/readyz", 0 },
};
#define N_ROUTES (sizeof table / sizeof table[0])

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 8192)
                return 0;
        char *line = fuzz_strndup(data, size);
        char *sp = strchr(line, ' ');
        const char *method = "GET", *path = line;
        if (sp) {
                *sp = '\0';
                method = line;
                path = sp + 1;
        }

        const struct gw_route *r = NULL;
        int64_t id = -1;
        int k = gw_route_match(table, N_ROUTES, method, path, &r, &id);
        FUZZ_CHECK(k == 0 || k == -ENOENT || k == -EBADRQC);
        if (k == 0) {
                FUZZ_CHECK(r >= table && r < table + N_ROUTES);
                FUZZ_CHECK(strcmp(r->method, method) == 0);
                if (strstr(r->pattern, "{id}"))
                        FUZZ_CHECK(id >= 1 && id < INT64_C(1000000000000000000));
                else if (strstr(r->pattern, "{index}"))
                        FUZZ_CHECK(id >= 0 && id <= 9999);
                else
                        FUZZ_CHECK(id == 0);
                /* Nothing that could walk out of the API tree gets through. */
                FUZZ_CHECK(!strstr(path, "..") && !strstr(path, "//") && !strchr(path, '%') && !strchr(path, '?') &&
                           !strchr(path, '\\'));
                /* The path is the pattern with digits for the placeholder and at most one
                 * trailing slash. */
                size_t plen = strlen(path);
                FUZZ_CHECK(plen <= strlen(r->pattern) + 18 + 1);
        } else {
                FUZZ_CHECK(r == NULL && id == -1); /* outputs untouched on failure */
        }
        free(line);
        return 0;
}
