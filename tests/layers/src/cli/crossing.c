/* A deliberate breach of the layers, for the layer_check_catches test: the CLI using a core
 * header that is not among the shared vocabulary it may use. Never compiled. */
#include "core/job.h"
#include "core/sched.h"
