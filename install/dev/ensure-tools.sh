#!/usr/bin/env bash
# Installs what the local control plane needs (tests, demo, CI):
#   - Debian packages: etcd-server (/usr/bin/etcd), iproute2, openssl, curl, jq;
#     gcc, the C compiler cgo calls: without one on PATH Go turns cgo off,
#     and `go test -race` (the unit and integration tests) refuses to run;
#     for the eBPF datapath (bpf/): clang, llvm, libbpf-dev (to regenerate the
#     BPF objects), iputils-arping, ndisc6, tcpdump, bpftool (to test and inspect it);
#     iptables, nftables, conntrack for kube-proxy; qemu-system-x86, cpio for
#     running the eBPF tests on older kernels (hack/kernel-check.sh);
#     frr (zebra, bgpd, vtysh in /usr/lib/frr, /usr/bin) as the BGP router of
#     the BGP tests (test/frr), which run their own instances: the package's
#     frr service is kept from starting and disabled
#     containerd and runc, the container runtime of the real cluster
#     (test/realcluster), which runs one containerd per node itself: the
#     package's containerd service is kept from starting and disabled;
#     keepalived, the VRRP baseline the control-plane VIP is compared with
#     (test/cpvip), which runs one keepalived per node namespace itself: the
#     package's keepalived service is kept from starting and disabled;
#     systemd, to run the control-plane VIP's unit as users do (test/cpvip boots
#     one systemd per node namespace, in namespaces of its own)
#   - kube-apiserver, the current version (v1.34.2, built from install/dev/tools)
#     and the oldest supported one (v1.31.14, from install/dev/tools-v1.31),
#     into ${HERALD_CACHE:-$HOME/.cache/herald}/kube-apiserver-<version>; of the
#     current version also kube-controller-manager, kube-scheduler, kubelet,
#     kube-proxy and kubectl (.../<name>-<version>); the versions are in
#     kube-versions.sh
#   - the Helm CLI (install/dev/tools-helm) into .../helm-<version>
#   - the reference CNI plugins herald-ipam is tested with (bridge, loopback,
#     host-local), into .../cni-plugins-<version> (ensure-cni-plugins.sh)
# Idempotent; does nothing slow when everything is already there.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=kube-versions.sh
source "${here}/kube-versions.sh"
cache="${HERALD_CACHE:-${HOME}/.cache/herald}"

log() { echo "ensure-tools: $*"; }
die() { echo "ensure-tools: ERROR: $*" >&2; exit 1; }

# ---------------------------------------------------------------------------
# Debian packages
# ---------------------------------------------------------------------------
packages=(etcd-server iproute2 openssl curl jq gcc clang llvm libbpf-dev iputils-arping iputils-ping ndisc6 tcpdump bpftool iptables nftables conntrack qemu-system-x86 cpio frr containerd runc keepalived systemd)
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
	# init script) listening on 127.0.0.1:2379, the frr package its frr
	# service (zebra, bgpd, ... in the root namespace). The dev clusters run
	# their own etcd, the BGP tests their own FRR in test namespaces, so keep
	# the packages' services from starting: a policy-rc.d that denies
	# service starts during the install (only if none exists), and the units
	# disabled afterwards on machines that run systemd.
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
	if [[ " ${missing[*]} " == *" containerd "* ]]; then
		log "disabling the containerd package's own containerd service"
		if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null; then
			"${sudo[@]}" systemctl disable --now containerd.service >/dev/null 2>&1 || true
		elif command -v update-rc.d >/dev/null; then
			"${sudo[@]}" update-rc.d containerd disable >/dev/null 2>&1 || true
		fi
	fi
	if [[ " ${missing[*]} " == *" keepalived "* ]]; then
		log "disabling the keepalived package's own keepalived service"
		if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null; then
			"${sudo[@]}" systemctl disable --now keepalived.service >/dev/null 2>&1 || true
		elif command -v update-rc.d >/dev/null; then
			"${sudo[@]}" update-rc.d keepalived disable >/dev/null 2>&1 || true
		fi
	fi
	if [[ " ${missing[*]} " == *" frr "* ]]; then
		log "disabling the frr package's own frr service"
		if [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null; then
			"${sudo[@]}" systemctl disable --now frr.service >/dev/null 2>&1 || true
		elif command -v update-rc.d >/dev/null; then
			"${sudo[@]}" update-rc.d frr disable >/dev/null 2>&1 || true
		fi
	fi
	log "packages installed"
fi
[[ -x /usr/bin/etcd ]] || die "/usr/bin/etcd missing after installing etcd-server"
[[ -x /usr/lib/frr/bgpd && -x /usr/lib/frr/zebra && -x /usr/bin/vtysh ]] || die "FRR (/usr/lib/frr/bgpd, zebra, /usr/bin/vtysh) missing after installing frr"
[[ -x /usr/bin/containerd && -x /usr/bin/ctr && -x /usr/sbin/runc ]] || die "containerd, ctr or runc missing after installing containerd and runc"
[[ -x /usr/sbin/keepalived ]] || die "/usr/sbin/keepalived missing after installing keepalived"

# ---------------------------------------------------------------------------
# kube-apiserver: the current version and the oldest supported one;
# kube-proxy: the current version
# ---------------------------------------------------------------------------
# build_k8s VERSION NAME...: builds k8s.io/kubernetes/cmd/NAME (kube-apiserver,
# kubelet, ...) of VERSION from its tools module (KUBE_TOOLS) into the cache as
# NAME-VERSION, those that are not there yet, in one go build (they share most
# of their packages).
build_k8s() {
	local version="$1"
	shift
	local tools_dir="${here}/${KUBE_TOOLS[$version]:-}"
	local missing=() name
	for name in "$@"; do
		if [[ -x "${cache}/${name}-${version}" ]]; then
			log "${name} ok (${cache}/${name}-${version})"
		else
			missing+=("$name")
		fi
	done
	((${#missing[@]} > 0)) || return 0

	[[ "$version" =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+$ ]] || die "bad Kubernetes version ${version} in kube-versions.sh"
	local major="${BASH_REMATCH[1]}" minor="${BASH_REMATCH[2]}"
	# A tools module that pins another version would build the wrong
	# binaries under these names.
	grep -qxF "require k8s.io/kubernetes ${version}" "${tools_dir}/go.mod" 2>/dev/null ||
		die "${tools_dir}/go.mod does not require k8s.io/kubernetes ${version} (see KUBE_TOOLS in kube-versions.sh)"
	command -v go >/dev/null || die "go not found in PATH (needed to build ${missing[*]})"
	mkdir -p "$cache"
	tmp="$(mktemp -d "${cache}/build.tmp.XXXXXX")"
	trap 'rm -rf "$tmp"' EXIT

	local pkgs=()
	for name in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/${name}"); done
	log "building ${missing[*]} ${version} from ${tools_dir#"${here}/"} (takes several minutes on a cold cache) ..."
	local start=$SECONDS
	# -s -w: no symbol table and no DWARF (tools we run, never debug):
	# smaller files, shorter links.
	# GONOSUMDB=k8s.io: the checksum database does not answer for some k8s.io
	# modules; go.sum in the tools module pins them instead. Scoped to this
	# build. GOWORK=off: never let a go.work in the tree pull this module
	# into the project's build (or vice versa).
	(
		cd "$tools_dir"
		GOWORK=off GONOSUMDB=k8s.io go build \
			-mod=readonly -buildvcs=false -trimpath \
			-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=${version} -X k8s.io/component-base/version.gitMajor=${major} -X k8s.io/component-base/version.gitMinor=${minor}" \
			-o "$tmp/" "${pkgs[@]}"
	)
	for name in "${missing[@]}"; do
		chmod 755 "$tmp/$name"
		mv -f "$tmp/$name" "${cache}/${name}-${version}"
	done
	rm -rf "$tmp"
	trap - EXIT
	log "${missing[*]} ${version} built in $((SECONDS - start))s (${cache})"
}

# The current version: the control plane, the node components (the tests run
# kube-proxy in network namespaces; the real cluster of test/realcluster runs
# all of them) and kubectl. The oldest supported version: kube-apiserver only,
# for the CRD and install tests.
build_k8s "$KUBE_VERSION" kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl
build_k8s "$KUBE_OLDEST_VERSION" kube-apiserver

# ---------------------------------------------------------------------------
# Helm CLI: the real-cluster tests install Herald with `helm install`
# ---------------------------------------------------------------------------
helm_dir="${here}/tools-helm"
helm_version="$(sed -n 's/^require helm.sh\/helm\/v3 //p' "${helm_dir}/go.mod")"
[[ -n "$helm_version" ]] || die "${helm_dir}/go.mod does not require helm.sh/helm/v3"
helm_bin="${cache}/helm-${helm_version}"
if [[ -x "$helm_bin" ]]; then
	log "helm ok (${helm_bin})"
else
	log "building helm ${helm_version} ..."
	start=$SECONDS
	tmp="$(mktemp "${helm_bin}.tmp.XXXXXX")"
	trap 'rm -f "$tmp"' EXIT
	(
		cd "$helm_dir"
		GOWORK=off go build -mod=readonly -buildvcs=false -trimpath \
			-ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=${helm_version}" \
			-o "$tmp" helm.sh/helm/v3/cmd/helm
	)
	chmod 755 "$tmp"
	mv -f "$tmp" "$helm_bin"
	trap - EXIT
	log "helm ${helm_version} built in $((SECONDS - start))s (${helm_bin})"
fi

# ---------------------------------------------------------------------------
# Reference CNI plugins (bridge, loopback, host-local)
# ---------------------------------------------------------------------------
"${here}/ensure-cni-plugins.sh"
