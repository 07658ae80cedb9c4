/* The model store's copy beside a database backup (models_copy.c). */
#pragma once
#include <stddef.h>
#include <stdint.h>

struct gw_models_copy {
        /* what the loop hands over */
        char *store; /* model_store (owned) */
        int dir_fd; /* the backup's folder, as checked when it started (owned) */
        char *name; /* the copy's name in it: the database copy's name + ".models" (owned) */
        /* what the thread says */
        int r; /* 0 or -errno with why */
        long versions, files;
        uint64_t bytes;
        char why[700];
};

/* Copies every whole version of the store (vN folders; not the .tmp-* folders of copies under
 * way) into a new folder name of dir_fd, made private (0700, gpuwardd's) and renamed into
 * place at the end, never replacing one; each file keeps its mode and is checked against its
 * manifest's sha256.  Blocking file work: call it off the loop. */
void gw_models_copy_run(struct gw_models_copy *c);
