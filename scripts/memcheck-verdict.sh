#!/bin/sh
# Fails when any valgrind log in DIR reports a definite leak or an error (make memcheck).
# Logs without a leak summary are those of processes that exec'd (the launcher, supervisors)
# or were killed on purpose (kill -9 tests): they count for errors only.
dir=${1:?usage: memcheck-verdict.sh DIR}
set -- "$dir"/memcheck.*.log
[ -e "$1" ] || { echo "no valgrind logs in $dir" >&2; exit 1; }
bad=$(grep -lE 'definitely lost: [1-9]|ERROR SUMMARY: [1-9]' "$@")
if [ -n "$bad" ]; then
        echo "valgrind found leaks or errors in: $bad" >&2
        exit 1
fi
exits=$(grep -l 'LEAK SUMMARY\|All heap blocks were freed' "$@" | wc -l)
echo "memcheck: $# valgrind logs, $exits daemon exits with a leak check; no definite leak, no error"
