#!/usr/bin/env bash
# Installs what the local control plane needs (tests, demo, CI):
#   - Debian packages: etcd-server (/usr/bin/etcd), iproute2, openssl, curl, jq;
#     for the eBPF datapath (bpf/): clang, llvm, libbpf-dev (to regenerate the
#     BPF objects), iputils-arping, tcpdump, bpftool (to test and inspect it)
#   - kube-apiserver v1.34.2, built from install/dev/tools into
#     ${HERALD_CACHE:-$HOME/.cache/herald}/kube-apiserver-v1.34.2
# Idempotent; does nothing slow when everything is already there.
set -euo pipefail

KUBE_VERSION=v1.34.2
KUBE_MAJOR=1
KUBE_MINOR=34

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools_dir="${here}/tools"
cache="${HERALD_CACHE:-${HOME}/.cache/herald}"
apiserver="${cache}/kube-apiserver-${KUBE_VERSION}"

log() { echo "ensure-tools: $*"; }
die() { echo "ensure-tools: ERROR: $*" >&2; exit 1; }

# ---------------------------------------------------------------------------
# Debian packages
# ---------------------------------------------------------------------------
packages=(etcd-server iproute2 openssl curl jq clang llvm libbpf-dev iputils-arping tcpdump bpftool)
missing=()
for p in "${packages[@]}"; do
	status="$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)"
	[[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
	log "packages ok (${packages[*]})"
else
	log "installing packages: ${missing[*]}"
	sudo=()
	if ((EUID != 0)); then
		command -v sudo >/dev/null || die "need root (or sudo) to install: ${missing[*]}"
		sudo=(sudo)
	fi

	# The etcd-server package ships its own etcd service (systemd unit and
	# init script) listening on 127.0.0.1:2379. The dev clusters run their own
	# etcd, so keep the package's service from starting: a policy-rc.d that
	# denies service starts during the install (only if none exists), and the
	# unit disabled afterwards on machines that run systemd.
	policy=/usr/sbin/policy-rc.d
	own_policy=0
	if [[ ! -e "$policy" ]]; then
		printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
		"${sudo[@]}" chmod 755 "$policy"
		own_policy=1
	fi
	cleanup_policy() { if ((own_policy)); then "${sudo[@]}" rm -f "$policy"; fi; }
	trap cleanup_policy EXIT

	apt_log="$(mktemp)"
	apt() {
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "$@" >>"$apt_log" 2>&1 || {
			tail -n 30 "$apt_log" >&2
			rm -f "$apt_log"
			die "apt-get $1 failed"
		}
	}
	log "apt-get update"
	apt update
	log "apt-get install -y ${missing[*]}"
	apt install -y --no-install-recommends "${missing[@]}"
	rm -f "$apt_log"

	cleanup_policy
	own_policy=0
	trap - EXIT

	if [[ " ${missing[*]} " == *" etcd-server "* ]]; then
		log "disabling the etcd-server package's own etcd service"
		if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null; then
			"${sudo[@]}" systemctl disable --now etcd.service >/dev/null 2>&1 || true
		elif command -v update-rc.d >/dev/null; then
			# No systemd: the init script was not started (policy-rc.d);
			# keep it from starting at boot too.
			"${sudo[@]}" update-rc.d etcd disable >/dev/null 2>&1 || true
		fi
	fi
	log "packages installed"
fi
[[ -x /usr/bin/etcd ]] || die "/usr/bin/etcd missing after installing etcd-server"

# ---------------------------------------------------------------------------
# kube-apiserver
# ---------------------------------------------------------------------------
if [[ -x "$apiserver" ]]; then
	log "kube-apiserver ok (${apiserver})"
	exit 0
fi

command -v go >/dev/null || die "go not found in PATH (needed to build kube-apiserver)"
mkdir -p "$cache"
tmp="$(mktemp "${apiserver}.tmp.XXXXXX")"
trap 'rm -f "$tmp"' EXIT

log "building kube-apiserver ${KUBE_VERSION} (takes several minutes on a cold cache) ..."
start=$SECONDS
# GONOSUMDB=k8s.io: the checksum database does not answer for some k8s.io
# modules; go.sum in install/dev/tools pins them instead. Scoped to this build.
# GOWORK=off: never let a go.work in the tree pull this module into the
# project's build (or vice versa).
(
	cd "$tools_dir"
	GOWORK=off GONOSUMDB=k8s.io go build \
		-mod=readonly -buildvcs=false -trimpath \
		-ldflags "-X k8s.io/component-base/version.gitVersion=${KUBE_VERSION} -X k8s.io/component-base/version.gitMajor=${KUBE_MAJOR} -X k8s.io/component-base/version.gitMinor=${KUBE_MINOR}" \
		-o "$tmp" k8s.io/kubernetes/cmd/kube-apiserver
)
chmod 755 "$tmp"
mv -f "$tmp" "$apiserver"
trap - EXIT
log "kube-apiserver built in $((SECONDS - start))s (${apiserver})"
