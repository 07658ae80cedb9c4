#!/bin/sh
# Fails when any valgrind log in DIR reports a definite leak or an error (make memcheck).
dir=${1:?usage: memcheck-verdict.sh DIR}
set -- "$dir"/memcheck.*.log
[ -e "$1" ] || { echo "no valgrind logs in $dir" >&2; exit 1; }
bad=$(grep -lE 'definitely lost: [1-9]|ERROR SUMMARY: [1-9]' "$@")
if [ -n "$bad" ]; then
        echo "valgrind found leaks or errors in: $bad" >&2
        exit 1
fi
echo "memcheck: $# daemon runs, no definite leak, no error"
