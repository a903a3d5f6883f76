#!/usr/bin/env bash
# Starts a development control plane (etcd + kube-apiserver) with all state
# under DIR, detached, and writes DIR/kubeconfig.
#
#   install/dev/cluster-up.sh DIR
#
# Env knobs:
#   HERALD_APISERVER_ADDR     bind/advertise address of kube-apiserver (127.0.0.1)
#   HERALD_APISERVER_PORT     secure port of kube-apiserver (6443)
#   HERALD_ETCD_PORT          etcd client port on 127.0.0.1 (2379); the peer
#                             port is HERALD_ETCD_PORT+1
#   HERALD_CLUSTER_TIMEOUT    seconds to wait for readiness (60)
#   HERALD_KUBE_VERSION       which kube-apiserver to run: one of the versions
#                             in kube-versions.sh, the current one (v1.34.2) or
#                             the oldest supported one (v1.31.14); default the
#                             current one
#   HERALD_CACHE              where ensure-tools.sh put kube-apiserver
#                             ($HOME/.cache/herald)
# Idempotent: exits 0 when DIR already holds a running cluster.
set -euo pipefail

# shellcheck source=kube-versions.sh
source "$(dirname "${BASH_SOURCE[0]}")/kube-versions.sh"
# shellcheck source=demo-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/demo-lib.sh"
# etcd and kube-apiserver outlive this script: they must not keep its
# caller's descriptors (`flock LOCK make cluster-up` would hold the lock
# until make cluster-down).
close_inherited_fds

usage() { echo "usage: $0 DIR" >&2; exit 2; }
[[ $# -eq 1 && -n "$1" ]] || usage

log() { echo "cluster-up: $*"; }
die() { echo "cluster-up: ERROR: $*" >&2; exit 1; }

version="${HERALD_KUBE_VERSION:-$KUBE_VERSION}"
[[ -n "${KUBE_TOOLS[$version]:-}" ]] ||
	die "HERALD_KUBE_VERSION=${version} is not one ensure-tools.sh builds (${!KUBE_TOOLS[*]})"

mkdir -p "$1"
dir="$(cd "$1" && pwd)"

addr="${HERALD_APISERVER_ADDR:-127.0.0.1}"
port="${HERALD_APISERVER_PORT:-6443}"
etcd_port="${HERALD_ETCD_PORT:-2379}"
timeout="${HERALD_CLUSTER_TIMEOUT:-60}"
cache="${HERALD_CACHE:-${HOME}/.cache/herald}"
valid_port() { [[ "$2" =~ ^[0-9]+$ ]] && ((10#$2 >= 1 && 10#$2 <= 65535)) || die "$1=$2 is not a valid port"; }
valid_port HERALD_APISERVER_PORT "$port"
valid_port HERALD_ETCD_PORT "$etcd_port"
etcd_peer_port=$((etcd_port + 1))
valid_port "HERALD_ETCD_PORT+1 (etcd peer port)" "$etcd_peer_port"
apiserver_bin="${cache}/kube-apiserver-${version}"
etcd_bin="$(command -v etcd || true)"

# URL host part (brackets for IPv6).
url_host="$addr"
[[ "$addr" == *:* ]] && url_host="[$addr]"
server="https://${url_host}:${port}"
kubeconfig="${dir}/kubeconfig"

# alive NAME: true when DIR/NAME.pid names a running NAME process.
alive() {
	local pidfile="${dir}/$1.pid" pid cmdline
	[[ -s "$pidfile" ]] || return 1
	pid="$(<"$pidfile")"
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	cmdline="$(tr '\0' ' ' 2>/dev/null <"/proc/${pid}/cmdline")" || return 1
	[[ "$cmdline" == *"$1"* ]]
}

if alive etcd && alive kube-apiserver; then
	running="$(tr '\0' '\n' 2>/dev/null <"/proc/$(<"${dir}/kube-apiserver.pid")/cmdline" | head -n1)"
	[[ "${running##*/}" == "kube-apiserver-${version}" ]] ||
		die "cluster in ${dir} runs ${running##*/}, not ${version}; run install/dev/cluster-down.sh ${dir} first"
	log "cluster in ${dir} is already running (etcd pid $(<"${dir}/etcd.pid"), kube-apiserver pid $(<"${dir}/kube-apiserver.pid"))"
	echo "export KUBECONFIG=${kubeconfig}"
	exit 0
fi
if alive etcd || alive kube-apiserver; then
	die "cluster in ${dir} is half running; run install/dev/cluster-down.sh ${dir} first"
fi

[[ -n "$etcd_bin" ]] || die "etcd not found in PATH: run make tools (install/dev/ensure-tools.sh)"
[[ -x "$apiserver_bin" ]] || die "${apiserver_bin} not found: run make tools (install/dev/ensure-tools.sh)"
for cmd in openssl curl ss; do
	command -v "$cmd" >/dev/null || die "$cmd not found: run make tools (install/dev/ensure-tools.sh)"
done

# Refuse to start on ports that are taken (clear error instead of a log hunt).
port_busy() { [[ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]]; }
for p in "$etcd_port" "$etcd_peer_port" "$port"; do
	if port_busy "$p"; then
		die "TCP port $p is already in use (HERALD_ETCD_PORT=${etcd_port} uses ${etcd_port} and ${etcd_peer_port}, HERALD_APISERVER_PORT=${port})"
	fi
done

# ---------------------------------------------------------------------------
# Credentials (kept across restarts of the same DIR)
# ---------------------------------------------------------------------------
mkdir -p "${dir}/certs"
chmod 700 "$dir"
if [[ ! -s "${dir}/sa.key" || ! -s "${dir}/sa.crt" ]]; then
	log "generating service-account signing key"
	openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=herald-service-accounts" \
		-keyout "${dir}/sa.key" -out "${dir}/sa.crt" >/dev/null 2>&1 ||
		die "openssl could not generate the service-account key"
fi
if [[ ! -s "${dir}/tokens.csv" ]]; then
	echo "$(openssl rand -hex 24),admin,admin,system:masters" >"${dir}/tokens.csv"
fi
chmod 600 "${dir}/sa.key" "${dir}/tokens.csv"
token="$(cut -d, -f1 "${dir}/tokens.csv" | head -n1)"

# ---------------------------------------------------------------------------
# Start both processes detached; stop them again if we fail before ready.
# ---------------------------------------------------------------------------
started=()
cleanup_on_failure() {
	local rc=$?
	if ((rc != 0)) && ((${#started[@]} > 0)); then
		echo "cluster-up: stopping what was started" >&2
		"$(dirname "${BASH_SOURCE[0]}")/cluster-down.sh" "$dir" >&2 || true
	fi
}
trap cleanup_on_failure EXIT

# launch NAME CMD...: runs CMD in a new session, output to DIR/NAME.log,
# pid (of CMD itself, via exec) to DIR/NAME.pid.
launch() {
	local name="$1"
	shift
	rm -f "${dir}/${name}.pid"
	setsid nohup bash -c 'echo $$ >"$0"; exec "$@"' "${dir}/${name}.pid" "$@" \
		>"${dir}/${name}.log" 2>&1 </dev/null &
	local i
	for ((i = 0; i < 50; i++)); do
		[[ -s "${dir}/${name}.pid" ]] && break
		sleep 0.1
	done
	[[ -s "${dir}/${name}.pid" ]] || die "${name} did not start"
	started+=("$name")
}

fail_with_log() {
	echo "cluster-up: ERROR: $1; last lines of ${dir}/$2.log:" >&2
	tail -n 30 "${dir}/$2.log" >&2 || true
	exit 1
}

# wait_for NAME CHECK...: polls CHECK until it succeeds, NAME dies, or timeout.
wait_for() {
	local name="$1"
	shift
	local deadline=$((SECONDS + timeout))
	until "$@"; do
		alive "$name" || fail_with_log "${name} exited" "$name"
		((SECONDS < deadline)) || fail_with_log "${name} not ready after ${timeout}s" "$name"
		sleep 0.2
	done
}

etcd_url="http://127.0.0.1:${etcd_port}"
log "starting etcd on ${etcd_url} (peer port ${etcd_peer_port})"
launch etcd "$etcd_bin" \
	--name=herald \
	--data-dir="${dir}/etcd" \
	--listen-client-urls="${etcd_url}" \
	--advertise-client-urls="${etcd_url}" \
	--listen-peer-urls="http://127.0.0.1:${etcd_peer_port}" \
	--initial-advertise-peer-urls="http://127.0.0.1:${etcd_peer_port}" \
	--initial-cluster="herald=http://127.0.0.1:${etcd_peer_port}" \
	--initial-cluster-state=new \
	--logger=zap \
	--log-outputs=stderr
etcd_healthy() { curl -fsS --max-time 2 "${etcd_url}/health" 2>/dev/null | grep -q '"health":"true"'; }
wait_for etcd etcd_healthy

# kube-apiserver generates a self-signed CA and serving certificate for its
# advertise address into --cert-dir when none is there; start from a fresh
# one so the certificate always matches the current address.
rm -f "${dir}/certs/apiserver.crt" "${dir}/certs/apiserver.key"
log "starting kube-apiserver ${version} on ${server}"
launch kube-apiserver "$apiserver_bin" \
	--etcd-servers="${etcd_url}" \
	--bind-address="${addr}" \
	--advertise-address="${addr}" \
	--secure-port="${port}" \
	--cert-dir="${dir}/certs" \
	--service-account-issuer=https://kubernetes.default.svc \
	--service-account-key-file="${dir}/sa.crt" \
	--service-account-signing-key-file="${dir}/sa.key" \
	--token-auth-file="${dir}/tokens.csv" \
	--authorization-mode=RBAC \
	--service-cluster-ip-range=10.96.0.0/16,fd00:10:96::/112 \
	--service-node-port-range=20000-32767 \
	--disable-admission-plugins=ServiceAccount \
	--profiling=false
apiserver_ready() {
	[[ "$(curl -ksS --max-time 2 -H "Authorization: Bearer ${token}" "${server}/readyz" 2>/dev/null)" == ok ]]
}
wait_for kube-apiserver apiserver_ready

# ---------------------------------------------------------------------------
# kubeconfig: token auth; trusts the CA kube-apiserver generated (its
# apiserver.crt holds the serving certificate followed by that CA).
# ---------------------------------------------------------------------------
ca_data="$(base64 -w0 <"${dir}/certs/apiserver.crt")"
umask 077
cat >"${kubeconfig}.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: herald-dev
  cluster:
    server: ${server}
    certificate-authority-data: ${ca_data}
users:
- name: admin
  user:
    token: ${token}
contexts:
- name: herald-dev
  context:
    cluster: herald-dev
    user: admin
current-context: herald-dev
EOF
mv -f "${kubeconfig}.tmp" "$kubeconfig"

trap - EXIT
log "ready in ${SECONDS}s (etcd pid $(<"${dir}/etcd.pid"), kube-apiserver pid $(<"${dir}/kube-apiserver.pid"), logs in ${dir}/*.log)"
echo "export KUBECONFIG=${kubeconfig}"
