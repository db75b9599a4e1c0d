#!/usr/bin/env bash
# `npm run test:stress`: the whole suite while stress-ng keeps two busy processes per core, as on a
# shared, loaded CI machine. A test that fails here and passes on a quiet machine is a defect: it waits
# for time instead of a condition, or gives a child process too small a margin.
set -euo pipefail
cd "$(dirname "$0")/.."

bash test/debian-packages.sh stress-ng:stress-ng

workers=$((2 * $(nproc)))
stress-ng --cpu "$workers" --quiet &
load=$!
trap 'kill "$load" 2>/dev/null || true; wait "$load" 2>/dev/null || true' EXIT
echo "test:stress: $workers stress-ng CPU workers on $(nproc) cores"

started=$SECONDS
status=0
bash .ci/node vitest run "$@" || status=$?
echo "test:stress: exit $status after $((SECONDS - started)) s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$status"
