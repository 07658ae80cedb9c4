/* A deliberate breach, for the layer_check_catches_private test: the idle watch reading
 * training's state through its private header. Never compiled. */
#include "daemon/training/training_int.h"
