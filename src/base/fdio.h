/* Whole writes to a descriptor: no buffering, no allocation. */
#pragma once
#include <stddef.h>

/* Writes all n bytes of buf to fd, resuming after EINTR and short writes: 0, or -errno
 * (-EIO when the descriptor takes nothing). */
int gw_write_all(int fd, const void *buf, size_t n);
