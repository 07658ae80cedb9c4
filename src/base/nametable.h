/* An enum's names kept in a table indexed by the enum (`[GW_X] = "x"`): the two lookups each
 * such table needs, so that a bounds check or a case rule is written once.  Pure, no I/O. */
#pragma once
#include <stddef.h>

#include "base/cleanup.h"

/* names[i], or NULL when i is outside the table.  The name is the table's; nothing copied. */
const char *gw_nametable_name(const char *const *names, size_t n, int i);
/* The index of name in names, ASCII case ignored; -EINVAL for NULL or a name not there. */
int gw_nametable_index(const char *const *names, size_t n, const char *name);

#define GW_NAMETABLE_NAME(names, i) gw_nametable_name((names), ELEMENTSOF(names), (int) (i))
#define GW_NAMETABLE_INDEX(names, name) gw_nametable_index((names), ELEMENTSOF(names), (name))
