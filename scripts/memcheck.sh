#!/bin/sh
# make memcheck: the end-to-end tests with every gpuwardd they start under valgrind memcheck,
# then scripts/memcheck-verdict.sh over the logs (BUILD_DIR/memcheck/memcheck.TEST.PID.log).
# Fails when a test fails or when any daemon (or the launcher and supervisors it forks before
# they exec) has a definite leak or a memory error.  Usage: memcheck.sh BUILD_DIR [TEST...]
# (TEST: a name under tests/e2e without .py; by default every one).
build=$(cd "${1:?usage: memcheck.sh BUILD_DIR [TEST...]}" && pwd) || exit 2
shift
src=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
command -v valgrind >/dev/null || { echo "memcheck needs valgrind (apt-get install valgrind)" >&2; exit 2; }

if [ $# -eq 0 ]; then
        for f in "$src"/tests/e2e/test_*.py; do
                set -- "$@" "$(basename "$f" .py)"
        done
fi

logs=$build/memcheck
rm -rf "$logs" && mkdir -p "$logs" || exit 2
failed=
start=$(date +%s)
for t in "$@"; do
        echo "== memcheck: $t"
        # test_durability kills the daemon 5 times instead of 50: a killed daemon has no exit
        # for valgrind to report leaks at, and each start under valgrind costs seconds.
        GW_BUILD_DIR=$build GW_SOURCE_DIR=$src GW_DURABILITY_KILLS=${GW_DURABILITY_KILLS:-5} \
        GW_DAEMON_WRAPPER="valgrind --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite --error-exitcode=99 --log-file=$logs/memcheck.$t.%p.log" \
                "$python" "$src/tests/e2e/$t.py" || failed="$failed $t"
done
echo "memcheck: $# tests in $(($(date +%s) - start)) s"
rc=0
"$src/scripts/memcheck-verdict.sh" "$logs" || rc=1
if [ -n "$failed" ]; then
        echo "memcheck: tests that failed under valgrind:$failed" >&2
        rc=1
fi
exit $rc
