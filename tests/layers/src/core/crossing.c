/* A deliberate breach of the layers, for the layer_check_catches test: the pure core
 * reaching into the store and into SQLite. Never compiled. */
#include "base/log.h"
#include "store/store.h"
#include <sqlite3.h>
