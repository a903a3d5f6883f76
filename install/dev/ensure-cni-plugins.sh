#!/usr/bin/env bash
# Builds the reference CNI plugins the tests drive herald-ipam with (bridge,
# loopback, host-local from github.com/containernetworking/plugins) into
#   ${HERALD_CACHE:-$HOME/.cache/herald}/cni-plugins-<version>/
# from the tools module install/dev/tools-cni, whose go.mod pins the version.
# Called by ensure-tools.sh; idempotent, and does nothing slow when the
# directory is already there (delete it to force a rebuild).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${HERALD_CACHE:-${HOME}/.cache/herald}"
tools_dir="${here}/tools-cni"
# Everything the suites need; test/cnitest looks for these names.
plugins=(bridge loopback host-local)
pkgs=(
	github.com/containernetworking/plugins/plugins/main/bridge
	github.com/containernetworking/plugins/plugins/main/loopback
	github.com/containernetworking/plugins/plugins/ipam/host-local
)

log() { echo "ensure-cni-plugins: $*"; }
die() { echo "ensure-cni-plugins: ERROR: $*" >&2; exit 1; }

# The version is the one go.mod requires: one place to bump it (test/cnitest
# checks that its PluginsVersion agrees).
version="$(sed -n 's|^require github.com/containernetworking/plugins \(v[0-9][^ ]*\)$|\1|p' "${tools_dir}/go.mod")"
[[ -n "$version" ]] || die "${tools_dir}/go.mod has no 'require github.com/containernetworking/plugins vX.Y.Z' line"
dest="${cache}/cni-plugins-${version}"

complete=1
for p in "${plugins[@]}"; do
	[[ -x "${dest}/${p}" ]] || complete=0
done
if ((complete)); then
	log "CNI plugins ok (${dest})"
	exit 0
fi

command -v go >/dev/null || die "go not found in PATH (needed to build the CNI plugins)"
mkdir -p "$cache"
# Build into a temporary directory and rename it into place: an interrupted
# build never leaves a directory that looks complete.
tmp="$(mktemp -d "${dest}.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

log "building CNI plugins ${version} (${plugins[*]}) from ${tools_dir#"${here}/"} ..."
start=$SECONDS
# GOWORK=off: never let a go.work pull this module into the project's build.
# CGO_ENABLED=0: static binaries, as the upstream release builds them.
(
	cd "$tools_dir"
	GOWORK=off CGO_ENABLED=0 go build \
		-mod=readonly -buildvcs=false -trimpath \
		-ldflags "-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=${version}" \
		-o "$tmp/" "${pkgs[@]}"
)
for p in "${plugins[@]}"; do
	[[ -x "${tmp}/${p}" ]] || die "go build wrote no ${p}"
done
chmod 755 "$tmp"
rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
log "CNI plugins ${version} built in $((SECONDS - start))s (${dest})"
