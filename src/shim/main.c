/* gpuward-shim's entry: the resident launcher or one job's supervisor (see shim.h). */
#include <string.h>

#include "base/latency.h"
#include "shim/shim.h"

int main(int argc, char **argv) {
        (void) gw_latency_short_slice(); /* a job it starts gets the default back */
        if (argc > 1 && !strcmp(argv[1], "--server"))
                return shim_serve(argc, argv);
        return shim_supervise(argc, argv);
}
