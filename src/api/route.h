/* One route table: every API call is a row; rights and limits come from its flags. */
#pragma once
#include <stddef.h>
#include <stdint.h>

enum {
        GW_ROUTE_MUTATES = 1u << 0, /* changes state: needs an identified caller, not a guest */
        GW_ROUTE_ADMIN = 1u << 1, /* admins only */
        GW_ROUTE_AGENT = 1u << 2, /* a node agent's token may call it (the only routes it may) */
        GW_ROUTE_CI = 1u << 3, /* a CI runner's token may call it (on its own jobs only) */
        GW_ROUTE_MODELS = 1u << 4, /* a models reader's token may call it (the only routes it may) */
};

struct gw_route_ctx {
        int64_t id; /* the {id} of the path, 0 if none */
        const struct gw_route *route;
};

struct gw_route {
        const char *method;
        const char *pattern; /* "/api/v1/jobs/{id}/log": {id} matches a positive integer,
                                        * {index} a small one from 0 (a GPU), {name} one path
                                        * segment of 1-64 letters, digits, '.', '_' or '-' (the
                                        * handler reads it from the path) */
        unsigned flags;
};

/* Finds the row for method and path.  0 with *ret set; -ENOENT when no pattern matches
 * (404); -EBADRQC when the path matches but not the method (405). */
int gw_route_match(const struct gw_route *table, size_t n, const char *method, const char *path,
                   const struct gw_route **ret, int64_t *ret_id);

/* A job array's task in a job's path: "/api/v1/jobs/17_3/log" (Slurm's name for task 3 of
 * array 17) is written to buf as "/api/v1/jobs/17/log", with 3 in *ret_index.  Returns 0
 * then, -ENOENT for any other path (buf untouched), -ENAMETOOLONG when buf is too small. */
int gw_route_array_task(const char *path, char *buf, size_t size, int64_t *ret_index);
