/* For the layer_check_catches_private test: training's own private header, which its module's
 * files may include. Never compiled. */
#include "daemon/training/training_int.h"
