/* The store's SQLite VFS: the default one, but a WAL file's writes are gathered and written
 * once per transaction, when its commit frame is (walbatch.c says why that keeps SQLite's
 * guarantees).  Only src/store/ includes this. */
#pragma once
#include <sqlite3.h>

#define GW_WALBATCH_VFS "gw-walbatch"

/* Its name for sqlite3_open_v2, registered at the first call; NULL when it could not be
 * (then the default VFS serves). */
const char *gw_walbatch_vfs(void);
