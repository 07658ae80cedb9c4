/* An Ultralytics data YAML, as far as staging it needs: the dataset's root (`path:`) and the
 * train/val/test entries, which must lie under it.  Not a YAML parser: the top-level keys
 * path, train, val and test, each a plain or quoted scalar or a block list of them; every
 * other line is copied as it is.  Pure, no I/O. */
#pragma once
#include <stddef.h>

#define GW_DATAYAML_MAX_SIZE 65536 /* bytes of the file: a data YAML is a page of text */
#define GW_DATAYAML_MAX_PATH 4096

/* The value of the top-level `path:` key into root (n bytes).  0; -EINVAL with why for a file
 * over GW_DATAYAML_MAX_SIZE, a NUL byte, no `path:`, or a path that is not absolute (the
 * trainer would resolve it against its own datasets folder, which the daemon cannot know). */
int gw_datayaml_root(const char *text, size_t len, char *root, size_t n, char *why, size_t nwhy);

/* text with `path:` set to local and each absolute train/val/test entry under the old root
 * made to point under local; relative entries are left as they are (they resolve against
 * path).  *ret: malloc'ed, NUL-terminated, the caller frees it.  0; -EINVAL with why as
 * gw_datayaml_root, or for an absolute entry outside the root (it would not be staged). */
int gw_datayaml_rewrite(const char *text, size_t len, const char *local, char **ret, char *why, size_t nwhy);
