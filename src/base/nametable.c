#include "base/nametable.h"

#include <errno.h>
#include <strings.h>

const char *gw_nametable_name(const char *const *names, size_t n, int i) {
        return i >= 0 && (size_t) i < n ? names[i] : NULL;
}

int gw_nametable_index(const char *const *names, size_t n, const char *name) {
        if (!name)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (names[i] && strcasecmp(names[i], name) == 0)
                        return (int) i;
        return -EINVAL;
}
