/* What the store's files share beyond store.h: the database handle and the errno mapping.
 * Only src/store/ includes this. */
#pragma once
#include <sqlite3.h>

#include "store/store.h"

sqlite3 *gw_store_db(struct gw_store *s);
/* The last SQLite error as -errno (-ENOSPC, -EROFS, -EBUSY, -ENOMEM, -EEXIST, -EIO). */
int gw_store_sql_err(struct gw_store *s);
