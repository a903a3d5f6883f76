#!/usr/bin/env bash
# Regenerates everything derived from the Go types in api/:
#   api/cilium.io/*/zz_generated.deepcopy.go   controller-gen object
#   api/client/clientset/versioned/            client-gen (typed clientset + fake)
#   install/crds/*.yaml                        controller-gen crd + hack/crd-versions
#   bpf/*_bpfel.go, bpf/*_bpfel.o              bpf2go (go generate ./bpf/...), from
#                                              the C sources in bpf/; needs clang,
#                                              llvm and libbpf-dev (make tools)
# The generators are built from the pinned tools module hack/tools, so their
# versions never depend on the machine. hack/verify-generate.sh checks that the
# checked-in files are what this script writes.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
GO=${GO:-go}
MODULE=github.com/heraldlb/herald
HEADER=hack/boilerplate.go.txt

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo ">> building generators (hack/tools)"
"$GO" build -C hack/tools -o "$tmp/bin/" \
	sigs.k8s.io/controller-tools/cmd/controller-gen \
	k8s.io/code-generator/cmd/client-gen

echo ">> deepcopy"
"$tmp/bin/controller-gen" object:headerFile="$HEADER" paths=./api/cilium.io/...

echo ">> clientset"
# Generated aside and then swapped in, so that files of removed types do not
# linger and a failed run leaves the old clientset in place. One --input per
# API version: the clientset gets CiliumV2alpha1() and CiliumV2().
"$tmp/bin/client-gen" \
	--clientset-name versioned \
	--input-base "$MODULE/api" \
	--input cilium.io/v2alpha1 \
	--input cilium.io/v2 \
	--output-dir "$tmp/clientset" \
	--output-pkg "$MODULE/api/client/clientset" \
	--go-header-file "$HEADER"
rm -rf api/client/clientset/versioned
mkdir -p api/client/clientset
mv "$tmp/clientset/versioned" api/client/clientset/versioned

echo ">> CRDs"
"$tmp/bin/controller-gen" crd:crdVersions=v1 paths=./api/cilium.io/... output:crd:dir="$tmp/crds"
mkdir -p install/crds
"$GO" run ./hack/crd-versions "$tmp/crds" install/crds

echo ">> BPF objects"
# bpf2go (pinned by go.mod) compiles bpf/*.c with clang. The output does not
# depend on the checkout's path, but does on the clang version: the checked-in
# objects come from Debian 12's clang 14, which install/dev/ensure-tools.sh
# installs.
"$GO" generate ./bpf/...

gofmt -w api/client api/cilium.io/*/zz_generated.deepcopy.go bpf/*_bpfel.go
echo ">> done"
