#!/usr/bin/env bash
# metallb-controller.sh: builds MetalLB's controller, the one MetalLB's
# Deployment runs, from its Go module (go.universe.tf/metallb, through the Go
# module proxy, with MetalLB's own go.mod and go.sum), for bench-e2e to run
# side by side with Herald. Caches it with MetalLB's CRDs under
#   ${HERALD_CACHE:-$HOME/.cache/herald}/metallb-<version>/{controller,crds/}
# and prints that directory. Idempotent; delete the directory to rebuild.
#
# The version is the newest release whose dependencies the module proxy
# serves: v0.16.x needs github.com/metallb/frr-k8s v0.0.27, which it does not.
set -euo pipefail

version="${METALLB_VERSION:-v0.15.2}"
cache="${HERALD_CACHE:-${HOME}/.cache/herald}"
dest="${cache}/metallb-${version}"

log() { echo "metallb-controller: $*" >&2; }
die() { echo "metallb-controller: ERROR: $*" >&2; exit 1; }

if [[ -x "${dest}/controller" && -d "${dest}/crds" ]]; then
	echo "${dest}"
	exit 0
fi
command -v go >/dev/null || die "go not found in PATH"
mkdir -p "${cache}"
src="$(cd "${cache}" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "go.universe.tf/metallb@${version}" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[[ -d "${src}" ]] || die "go mod download go.universe.tf/metallb@${version} gave no directory"
tmp="$(mktemp -d "${dest}.tmp.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
log "building MetalLB ${version} controller from ${src} ..."
start=$SECONDS
(
	cd "${src}"
	GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=mod go build -buildvcs=false -trimpath -o "${tmp}/controller" ./controller
)
mkdir "${tmp}/crds"
cp "${src}"/config/crd/bases/*.yaml "${tmp}/crds/"
chmod -R u+w "${tmp}"
rm -rf "${dest}"
mv "${tmp}" "${dest}"
trap - EXIT
log "built in $((SECONDS - start))s"
echo "${dest}"
