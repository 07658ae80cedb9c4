/* sbatch's file name patterns in a job's --output: %j %x %u %A %a %N, %% for a '%'. */
#pragma once
#include <stddef.h>
#include <stdint.h>

struct gw_outpath_vars {
        int64_t id; /* %j */
        int64_t array_id; /* %A: the array's id, else the job's */
        int64_t array_index; /* %a: the task's index; < 0 for a job that is no task ("0") */
        const char *name; /* %x */
        const char *user; /* %u */
        const char *host; /* %N */
};

/* Writes pattern with its patterns replaced into buf (NUL-terminated).  A '%' before any
 * other character stays as written (sbatch's other patterns mean nothing here).  Returns the
 * length, or -ENAMETOOLONG when it does not fit in size (buf then holds a prefix). */
int gw_outpath_expand(const char *pattern, const struct gw_outpath_vars *v, char *buf, size_t size);
