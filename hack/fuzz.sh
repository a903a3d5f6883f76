#!/usr/bin/env bash
# Runs every fuzz target of the module briefly: a number of executions each
# (default 200000x; a duration such as 10s works too).
# The checked-in seed corpora (testdata/fuzz/) also run in plain `go test`.
#
# Why a count by default: with a duration, Go before 1.27 can fail a target
# with a bare "context deadline exceeded" when the time is up while a worker
# is busy (golang/go#75804, a race in the fuzzing coordinator), which happens
# on a loaded 2-core CI machine. A count has no deadline to race.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-200000x}
# Targets whose executions are slow run a fraction of a count:
# FuzzTwoSessions simulates a minute or so of two BFD sessions per input,
# thousands of times the work of a decoder's input.
declare -A divisor=([FuzzTwoSessions]=40)
# Find "func FuzzXxx(" in _test.go files; run each target on its own.
grep -rl --include='*_test.go' '^func Fuzz' cells tables daemon cmd api hack 2>/dev/null | while read -r file; do
  pkg=./$(dirname "$file")
  for target in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //'); do
    t=$fuzztime
    if [[ -n ${divisor[$target]:-} && $t =~ ^([0-9]+)x$ ]]; then
      t=$(( (BASH_REMATCH[1] + divisor[$target] - 1) / divisor[$target] ))x
    fi
    echo "fuzz: $pkg $target for $t"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$t" "$pkg"
  done
done
