#!/usr/bin/env bash
# Runs every test of the build in ${XR_BUILD_DIR:-build}, then says which were skipped and why.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${XR_BUILD_DIR:-build}
ctest --test-dir "$build" --output-on-failure "$@"
status=$?
grep -h '^SKIP ' "$build/Testing/Temporary/LastTest.log" 2>/dev/null | sort -u
exit $status
