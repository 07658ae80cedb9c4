/* A FILE that writes into memory, as open_memstream does, for long texts (the job list of a
 * long queue, ~2 MB): open_memstream grows its buffer by copying it into one twice as large
 * and zeroing the new half, which was half of the time spent writing that list.  This one lets
 * realloc grow the buffer (a large block is remapped, not copied) and zeroes nothing. */
#pragma once
#include <stddef.h>
#include <stdio.h>

/* A FILE open for writing; NULL when out of memory.  Once it is closed (fclose), *ret_buf is
 * what was written, NUL-terminated and malloc'ed (the caller frees it), and *ret_len its
 * length; before that they are not to be read.  A write that finds no memory fails (ENOMEM),
 * and so does the fclose: *ret_buf is then to be freed, not read (it may be NULL). */
FILE *gw_memfile_open(char **ret_buf, size_t *ret_len);
