#!/usr/bin/env bash
# metallb.sh: builds MetalLB's controller and speaker, the programs of its
# Deployment and DaemonSet, from its Go module (go.universe.tf/metallb, through
# the Go module proxy, with MetalLB's own go.mod and go.sum), for bench-e2e
# (controller) and the real cluster's takeover test (both, as images). Caches
# them with MetalLB's CRDs and its install manifest under
#   ${HERALD_CACHE:-$HOME/.cache/herald}/metallb-<version>/
#     controller  speaker  crds/  metallb-native.yaml
# and prints that directory. Idempotent; delete the directory to rebuild.
#
# The version is the newest release whose dependencies the module proxy
# serves: v0.16.x needs github.com/metallb/frr-k8s v0.0.27, which it does not.
# The speaker is built as MetalLB's Dockerfile builds it, without its FRR
# helpers (frr-metrics, cp-tool): the native (non-FRR) BGP and L2 modes need
# none of them.
set -euo pipefail

version="${METALLB_VERSION:-v0.15.2}"
cache="${HERALD_CACHE:-${HOME}/.cache/herald}"
dest="${cache}/metallb-${version}"

log() { echo "metallb: $*" >&2; }
die() { echo "metallb: ERROR: $*" >&2; exit 1; }

if [[ -x "${dest}/controller" && -x "${dest}/speaker" && -d "${dest}/crds" && -f "${dest}/metallb-native.yaml" ]]; then
	echo "${dest}"
	exit 0
fi
command -v go >/dev/null || die "go not found in PATH"
mkdir -p "${cache}"
# What a killed build left behind.
rm -rf "${dest}".tmp.*
src="$(cd "${cache}" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "go.universe.tf/metallb@${version}" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[[ -d "${src}" ]] || die "go mod download go.universe.tf/metallb@${version} gave no directory"
tmp="$(mktemp -d "${dest}.tmp.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
log "building MetalLB ${version} controller and speaker from ${src} ..."
start=$SECONDS
(
	cd "${src}"
	for prog in controller speaker; do
		GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=mod go build -buildvcs=false -trimpath -o "${tmp}/${prog}" "./${prog}"
	done
)
mkdir "${tmp}/crds"
cp "${src}"/config/crd/bases/*.yaml "${tmp}/crds/"
cp "${src}/config/manifests/metallb-native.yaml" "${tmp}/"
chmod -R u+w "${tmp}"
rm -rf "${dest}"
mv "${tmp}" "${dest}"
trap - EXIT
log "built in $((SECONDS - start))s"
echo "${dest}"
