/* gpuward-shim's entry: the resident launcher or one job's supervisor (see shim.h). */
#include <string.h>

#include "shim/shim.h"

int main(int argc, char **argv) {
        if (argc > 1 && !strcmp(argv[1], "--server"))
                return shim_serve(argc, argv);
        return shim_supervise(argc, argv);
}
