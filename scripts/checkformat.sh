#!/bin/sh
# The house style (.clang-format, written from the conventions: 8-space indents, K&R braces,
# 120 columns): every C file of the tree must be as clang-format writes it.  Fix with
#   clang-format -i FILE...
set -e
cd "${1:-.}"
cf=$(command -v clang-format || command -v clang-format-14) || {
        echo "format check: clang-format is not installed (apt-get install clang-format)" >&2
        exit 1
}
find src tests bench -name node_modules -prune -o -type f \( -name '*.c' -o -name '*.h' \) -print |
        LC_ALL=C sort | xargs "$cf" --dry-run -Werror
echo "format check: ok"
