#!/usr/bin/env bash
# Fails, listing the stale files, when the generated files in the work tree
# differ from what hack/generate.sh writes. It regenerates into a temporary copy
# of the tree, so it works before the first commit and never edits the tree.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Where generate.sh writes; everything else in these dirs is copied unchanged
# and so compares equal. In bpf/ that is the bpf2go output, *_bpfel.go and
# *_bpfel.o (compared byte for byte).
PATHS=(api install/crds bpf)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkdir "$tmp/tree"
tar -C "$ROOT" --exclude=./.git --exclude=./_output -cf - . | tar -C "$tmp/tree" -xf -
"$tmp/tree/hack/generate.sh" >"$tmp/generate.log" 2>&1 || {
	cat "$tmp/generate.log" >&2
	echo "verify-generate: hack/generate.sh failed" >&2
	exit 1
}

files() { (cd "$1" && find "${PATHS[@]}" -type f 2>/dev/null || true); }
stale=$({ files "$ROOT"; files "$tmp/tree"; } | sort -u | while read -r f; do
	cmp -s "$ROOT/$f" "$tmp/tree/$f" || echo "  $f"
done)

if [ -n "$stale" ]; then
	echo "verify-generate: generated files are stale or missing; run 'make generate':" >&2
	echo "$stale" >&2
	exit 1
fi
echo "verify-generate: generated files are up to date"
