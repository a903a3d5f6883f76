#!/usr/bin/env bash
# Runs every fuzz target of the module for a short time (default 10s each).
# The checked-in seed corpora (testdata/fuzz/) also run in plain `go test`.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-10s}
# Find "func FuzzXxx(" in _test.go files; run each target on its own.
grep -rl --include='*_test.go' '^func Fuzz' cells tables daemon cmd api hack 2>/dev/null | while read -r file; do
  pkg=./$(dirname "$file")
  for target in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //'); do
    echo "fuzz: $pkg $target for $fuzztime"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
  done
done
