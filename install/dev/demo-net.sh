#!/usr/bin/env bash
# The demo's small L2 network, in network namespaces only:
#
#   root ns: hdemo-root 198.19.0.1/24 (kube-apiserver binds here)
#        |
#   hdemo-lan: bridge br0
#        |            |             |
#   hdemo-node1   hdemo-node2   hdemo-client
#   eth0 .11      eth0 .12      eth0 .100       (198.19.0.0/24)
#        ::11          ::12          ::100      (fd00:19::/64)
#
#   install/dev/demo-net.sh up | down
#
# Every address is in 198.18.0.0/15, reserved for benchmarking, or in
# fd00::/8 (unique local); nothing leaves these namespaces. The pods of the
# multi-pool part of the demo are namespaces too (hdemo-pod-*), removed here.
set -euo pipefail

prefix=hdemo
subnet=198.19.0
subnet6=fd00:19:
nodes=(node1 node2)

down() {
	for ns in $(ip netns list | awk '{print $1}' | grep "^${prefix}-pod-" || true); do
		ip netns del "$ns" 2>/dev/null || true
	done
	for ns in "${prefix}-client" "${nodes[@]/#/${prefix}-}" "${prefix}-lan"; do
		ip netns del "$ns" 2>/dev/null || true
	done
	ip link del "${prefix}-root" 2>/dev/null || true
}

# attach NS ADDR ADDR6: a veth from namespace NS (eth0, ADDR/24 and
# ADDR6/64) into the bridge.
attach() {
	local ns=$1 addr=$2 addr6=$3 peer="p-${1#"${prefix}"-}"
	ip netns add "$ns"
	ip netns exec "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.default.disable_ipv6=0 \
		net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
	ip link add eth0 netns "$ns" type veth peer name "$peer" netns "${prefix}-lan"
	ip -n "${prefix}-lan" link set "$peer" master br0 up
	ip -n "$ns" addr add "${addr}/24" dev eth0
	ip -n "$ns" addr add "${addr6}/64" dev eth0 nodad
	ip -n "$ns" link set eth0 up
	ip -n "$ns" link set lo up
}

up() {
	down
	ip netns add "${prefix}-lan"
	ip -n "${prefix}-lan" link add br0 type bridge
	ip -n "${prefix}-lan" link set br0 up
	ip link add "${prefix}-root" type veth peer name p-root netns "${prefix}-lan"
	ip -n "${prefix}-lan" link set p-root master br0 up
	ip addr add "${subnet}.1/24" dev "${prefix}-root"
	ip link set "${prefix}-root" up
	local i=11
	for n in "${nodes[@]}"; do
		attach "${prefix}-${n}" "${subnet}.${i}" "${subnet6}:${i}"
		i=$((i + 1))
	done
	attach "${prefix}-client" "${subnet}.100" "${subnet6}:100"
}

case "${1:-}" in
up) up ;;
down) down ;;
*) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
