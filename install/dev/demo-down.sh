#!/usr/bin/env bash
# Stops what make demo started: the agents, kube-proxy, the backends, the
# control plane, the network.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
dir=${CLUSTER_DIR:-_output/demo}
for pidfile in "$dir"/agent*.pid "$dir"/kube-proxy-*.pid "$dir"/httpecho-*.pid; do
	[[ -f $pidfile ]] || continue
	kill "$(cat "$pidfile")" 2>/dev/null
	rm -f "$pidfile"
done
sleep 1
install/dev/cluster-down.sh "$dir"
for bpf in "$dir"/bpf-*; do
	mountpoint -q "$bpf" && umount "$bpf"
done
install/dev/demo-net.sh down
