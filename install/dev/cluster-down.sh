#!/usr/bin/env bash
# Stops the development control plane started by cluster-up.sh DIR and removes
# its etcd data, so the next cluster-up.sh DIR starts from an empty cluster.
# Credentials (certs, tokens) and logs stay in DIR.
#
#   install/dev/cluster-down.sh DIR
#
# Env knobs:
#   HERALD_STOP_TIMEOUT   seconds to wait after SIGTERM before SIGKILL (15)
set -euo pipefail

usage() { echo "usage: $0 DIR" >&2; exit 2; }
[[ $# -eq 1 && -n "$1" ]] || usage

log() { echo "cluster-down: $*"; }

if [[ ! -d "$1" ]]; then
	log "$1 does not exist, nothing to stop"
	exit 0
fi
dir="$(cd "$1" && pwd)"
timeout="${HERALD_STOP_TIMEOUT:-15}"

# pid_of NAME: prints the pid from DIR/NAME.pid if it names a running NAME process.
pid_of() {
	local pidfile="${dir}/$1.pid" pid cmdline
	[[ -s "$pidfile" ]] || return 1
	pid="$(<"$pidfile")"
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	cmdline="$(tr '\0' ' ' 2>/dev/null <"/proc/${pid}/cmdline")" || return 1
	[[ "$cmdline" == *"$1"* ]] || return 1
	echo "$pid"
}

stop() {
	local name="$1" pid i
	if pid="$(pid_of "$name")"; then
		log "stopping ${name} (pid ${pid})"
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < timeout * 10; i++)); do
			pid_of "$name" >/dev/null || break
			sleep 0.1
		done
		if pid_of "$name" >/dev/null; then
			log "${name} still running after ${timeout}s, sending SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
			for ((i = 0; i < 50; i++)); do
				pid_of "$name" >/dev/null || break
				sleep 0.1
			done
			! pid_of "$name" >/dev/null || { echo "cluster-down: ERROR: ${name} (pid ${pid}) survived SIGKILL" >&2; exit 1; }
		fi
	else
		log "${name} not running"
	fi
	rm -f "${dir}/${name}.pid"
}

# apiserver first, so it does not spend its shutdown retrying a dead etcd.
stop kube-apiserver
stop etcd

rm -rf "${dir}/etcd" "${dir}/kubeconfig"
log "stopped; etcd data removed from ${dir}"
