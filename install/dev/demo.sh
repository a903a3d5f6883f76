#!/usr/bin/env bash
# make demo-netns: Herald on a local control plane, on a small L2 network of
# network namespaces (install/dev/demo-net.sh): two "nodes" each running
# herald-agent, and a client.
#
#  1. LB IPAM: the sample pools and Services of Documentation/examples/lb-ipam
#     get their IPs (kubectl get ippools, kubectl get svc -A).
#  2. L2 announcements: a Service's IP is answered on the wire (arping from
#     the client); its owner's agent is killed; the other node answers.
#  3. Multi-pool IPAM: two pod IP pools; pods of each pool on both nodes
#     (network namespaces wired by the bridge CNI plugin with herald-ipam,
#     podnet playing the container runtime) get addresses from their pools;
#     the nodes' CIDRs in their CiliumNodes; pings across nodes, IPv4 and
#     IPv6, within each pool and between them.
#  4. Traffic: the real kube-proxy on each node, two of those pods serving
#     the announced Service (an EndpointSlice made here, there is no
#     kube-controller-manager); curl from the client reaches them through
#     the VIP, also after the owner's agent is killed.
#
# Every ping, arping and curl must succeed (each is tried for up to 10 s):
# otherwise the demo stops there with an error and exit status 1.
#
# The cluster, agents and namespaces keep running afterwards (DEMO_KEEP=0
# tears everything down at the end); `make demo-down` removes them.
set -euo pipefail
cd "$(dirname "$0")/../.."

dir=${CLUSTER_DIR:-_output/demo}
export HERALD_APISERVER_ADDR=198.19.0.1
export HERALD_APISERVER_PORT=${HERALD_APISERVER_PORT:-16443}
export HERALD_ETCD_PORT=${HERALD_ETCD_PORT:-12379}
# shellcheck source=demo-lib.sh
source install/dev/demo-lib.sh
close_inherited_fds
# shellcheck source=kube-versions.sh
source install/dev/kube-versions.sh
# The kubectl make tools built, not whichever one PATH has (if any).
kubectl_bin=${HERALD_CACHE:-$HOME/.cache/herald}/kubectl-$KUBE_VERSION
kubectl() { "$kubectl_bin" "$@"; }

install/dev/demo-down.sh >/dev/null 2>&1 || true

step "L2 network: bridge, nodes hdemo-node1/2, client hdemo-client (198.19.0.0/24)"
install/dev/demo-net.sh up

step "Control plane (etcd + kube-apiserver on ${HERALD_APISERVER_ADDR}) in $dir"
install/dev/cluster-up.sh "$dir"
export KUBECONFIG=$PWD/$dir/kubeconfig
kubectl apply -f install/crds/ >/dev/null
kubectl wait --for condition=Established --timeout=60s crd --all >/dev/null
kubectl get ns kube-system >/dev/null 2>&1 || kubectl create ns kube-system
i=11
for n in node1 node2; do
	kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Node
metadata:
  name: $n
  labels: {kubernetes.io/hostname: $n}
YAML
	# What a kubelet reports: the node's addresses on the LAN (the routes to
	# its pod CIDRs go through them).
	kubectl patch node "$n" --subresource=status --type=merge >/dev/null \
		-p "{\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"198.19.0.$i\"},{\"type\":\"InternalIP\",\"address\":\"fd00:19::$i\"}]}}"
	i=$((i + 1))
done

# start_agent N: herald-agent of node N in its namespace, in the background.
# demo/web is announced before its pods have addresses (multi-pool IPAM
# gives them later, and its EndpointSlice is written then), so the agents
# keep announcing Services without a ready endpoint.
start_agent() {
	local n=$1
	ip netns exec "hdemo-$n" _output/bin/herald-agent \
		--kubeconfig "$KUBECONFIG" --node-name "$n" --k8s-namespace kube-system --enable-ipv6 \
		--enable-l2-announcements --enable-no-service-endpoints-routable --devices eth0 --bpf-root "$PWD/$dir/bpf-$n" \
		--l2-announcements-lease-duration 3s --l2-announcements-renew-deadline 1s --l2-announcements-retry-period 200ms \
		--ipam multi-pool --auto-direct-node-routes \
		--ipam-socket "$PWD/$dir/ipam-$n.sock" --ipam-state-dir "$PWD/$dir/ipam-$n" \
		--dbg-socket "$PWD/$dir/herald-$n.sock" >>"$dir/agent-$n.log" 2>&1 &
	echo $! >"$dir/agent-$n.pid"
	disown
}

# kill_holder kills the agent of $holder with SIGKILL and waits until
# another node holds $lease: sets $new (that node) and $took (seconds).
kill_holder() {
	kill -9 "$(cat "$dir/agent-$holder.pid")"
	local start
	start=$(date +%s.%N)
	for _ in $(seq 1 200); do
		new=$(kubectl -n kube-system get lease "$lease" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true)
		[[ -n $new && $new != "$holder" ]] && break
		sleep 0.1
	done
	took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
	if [[ -z $new || $new == "$holder" ]]; then
		printf '\n\033[1;31mdemo FAILED: no other node took Lease %s over within 20 s of killing %s\033[0m\n' "$lease" "$holder" >&2
		exit 1
	fi
}

step "herald-agent on each node (logs in $dir/agent-nodeN.log)"
for n in node1 node2; do
	# Each node gets a bpffs of its own, mounted here so that herald-dbg
	# (run from this shell) sees the pinned maps; `ip netns exec` would hide
	# a bpffs the agent mounted itself.
	bpf="$PWD/$dir/bpf-$n"
	mkdir -p "$bpf"
	mountpoint -q "$bpf" || mount -t bpf bpf "$bpf"
	: >"$dir/agent-$n.log"
	start_agent "$n"
done
go build -o "$dir/podnet" ./test/cnitest/cmd/podnet

step "LB IPAM: pools and Services (Documentation/examples/lb-ipam)"
run kubectl apply -f Documentation/examples/lb-ipam/pools.yaml
run kubectl apply -f Documentation/examples/lb-ipam/services.yaml
step "L2 announcements: a pool on the LAN, a policy, a Service (Documentation/examples/l2)"
run kubectl apply -f Documentation/examples/l2/announce.yaml

step "Waiting for the Services to get their IPs"
for _ in $(seq 1 150); do
	pending=$(kubectl get svc -A -o json | jq '[.items[] | select(.spec.type == "LoadBalancer") | select(.metadata.name != "service-green") | select((.status.loadBalancer.ingress // []) | length == 0)] | length')
	[[ $pending == 0 ]] && break
	sleep 0.2
done

step "kubectl get ippools"
kubectl get ippools
step "kubectl get svc -A"
kubectl get svc -A
step "Why is service-green pending?"
kubectl -n example get svc/service-green -o jsonpath='{.status.conditions}' | jq .

vip=$(kubectl -n demo get svc web -o jsonpath='{.status.loadBalancer.ingress[0].ip}')
lease=cilium-l2announce-demo-web
holder=""
for _ in $(seq 1 100); do
	holder=$(kubectl -n kube-system get lease "$lease" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true)
	[[ -n $holder ]] && break
	sleep 0.2
done
step "The VIP $vip on the wire: node $holder holds Lease $lease"
kubectl -n kube-system get lease | grep -E "NAME|cilium-l2announce"
for n in node1 node2; do
	printf '%s eth0 MAC: %s\n' "$n" "$(ip -n "hdemo-$n" -br link show eth0 | awk '{print $3}')"
done
run _output/bin/herald-dbg --socket "$dir/herald-$holder.sock" statedb l2-members
run _output/bin/herald-dbg --socket "$dir/herald-$holder.sock" statedb l2-owners
run _output/bin/herald-dbg --socket "$dir/herald-$holder.sock" statedb l2-announce
sleep 1
run _output/bin/herald-dbg --socket "$dir/herald-$holder.sock" bpf responder
must ip netns exec hdemo-client arping -I eth0 -c 3 -w 5 "$vip"

# Two nodes: the survivor alone is no majority; the API server breaks the
# tie. It takes the dead node's Services over once that node's witness
# record (herald-l2-witness-<node>, renewed every 250 ms) has not changed
# for a second. From three nodes on, within a second.
step "Killing the agent of $holder (kill -9); the other node takes over"
kill_holder
printf 'Lease %s now held by %s after %ss\n' "$lease" "$new" "$took"
sleep 0.5
must ip netns exec hdemo-client arping -I eth0 -c 3 -w 5 "$vip"

# The killed agent's node comes back for the next part.
start_agent "$holder"

step "Multi-pool IPAM: two pod IP pools (Documentation/examples/multi-pool)"
run kubectl apply -f Documentation/examples/multi-pool/pools.yaml
step "Pods on both nodes; podnet plays the container runtime (bridge plugin + herald-ipam)"
run kubectl apply -f Documentation/examples/multi-pool/pods.yaml
declare -A podnode=([web-1]=node1 [web-2]=node2 [green-1]=node2 [green-2]=node1)
for p in web-1 web-2 green-1 green-2; do
	n=${podnode[$p]}
	uid=$(kubectl -n pods get pod "$p" -o jsonpath='{.metadata.uid}')
	mkdir -p "$dir/cni-cache-$n"
	printf '$ podnet add --node-netns hdemo-%s --pod pods/%s --netns hdemo-pod-%s ...\n' "$n" "$p" "$p"
	"$dir/podnet" add --node-netns "hdemo-$n" --conflist install/cni/10-herald.conflist \
		--socket "$PWD/$dir/ipam-$n.sock" --state-dir "$PWD/$dir/ipam-$n" --cache "$PWD/$dir/cni-cache-$n" \
		--pod "pods/$p" --uid "$uid" --netns "hdemo-pod-$p" | jq -c '[.ips[].address]'
done
# The pools' "in use" columns follow the nodes' reports (status.ipam.used of
# their CiliumNodes, written within seconds).
for _ in $(seq 1 50); do
	[[ $(kubectl get cpip green-pool -o jsonpath='{.status.ipv4.addressesInUse}') == 2 ]] && break
	sleep 0.2
done
step "kubectl get cpip"
kubectl get cpip
step "The nodes' pod CIDRs (CiliumNode spec.ipam.pools.allocated)"
kubectl get ciliumnodes -o custom-columns='NODE:.metadata.name,ALLOCATED:.spec.ipam.pools.allocated,REQUESTED:.spec.ipam.pools.requested'
run _output/bin/herald-dbg --socket "$dir/herald-node2.sock" statedb pod-ip-allocations
run ip -n hdemo-node1 route show proto 196
run ip -n hdemo-node1 -6 route show proto 196
addr() { ip -n "hdemo-pod-$1" -"$2" -br addr show eth0 | awk '{print $3}' | cut -d/ -f1; }
step "Pods on node1 ping pods on node2, IPv4 and IPv6: web-1 -> web-2, green-2 -> green-1, web-1 -> green-1"
for pair in web-1:web-2 green-2:green-1 web-1:green-1; do
	from=${pair%:*} to=${pair#*:}
	must ip netns exec "hdemo-pod-$from" ping -q -c 2 -W 2 "$(addr "$to" 4)"
	must ip netns exec "hdemo-pod-$from" ping -q -6 -c 2 -W 2 "$(addr "$to" 6)"
done

step "Traffic: kube-proxy on each node, web-1 and web-2 serve demo/web, curl from the client"
go build -o "$dir/httpecho" ./test/netlab/cmd/httpecho
for p in web-1 web-2; do
	ip netns exec "hdemo-pod-$p" "$dir/httpecho" -listen :80 -name "$p" >>"$dir/httpecho-$p.log" 2>&1 &
	echo $! >"$dir/httpecho-$p.pid"
	disown
done
kube_proxy=${HERALD_CACHE:-$HOME/.cache/herald}/kube-proxy-$KUBE_VERSION
i=11
for n in node1 node2; do
	# Conntrack sysctls are the host's (or the namespace's): left alone.
	ip netns exec "hdemo-$n" "$kube_proxy" --kubeconfig "$KUBECONFIG" --hostname-override "$n" \
		--proxy-mode iptables --healthz-bind-address "198.19.0.$i:10256" --metrics-bind-address 127.0.0.1:10249 \
		--conntrack-max-per-core 0 --conntrack-tcp-timeout-established 0 --conntrack-tcp-timeout-close-wait 0 \
		>>"$dir/kube-proxy-$n.log" 2>&1 &
	echo $! >"$dir/kube-proxy-$n.pid"
	disown
	i=$((i + 1))
done
# demo/web has no selector: its endpoints are what this EndpointSlice says.
printf '$ kubectl apply -f - (EndpointSlice demo/web-pods: web-1 on node1, web-2 on node2, port 80)\n'
kubectl apply -f - >/dev/null <<YAML
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-pods
  namespace: demo
  labels: {kubernetes.io/service-name: web, endpointslice.kubernetes.io/managed-by: herald-demo}
addressType: IPv4
ports: [{name: "", port: 80, protocol: TCP}]
endpoints:
- {addresses: ["$(addr web-1 4)"], nodeName: node1, conditions: {ready: true}}
- {addresses: ["$(addr web-2 4)"], nodeName: node2, conditions: {ready: true}}
YAML
for i in 11 12; do
	for _ in $(seq 1 100); do
		curl -sf "http://198.19.0.$i:10256/healthz" >/dev/null && break
		sleep 0.2
	done
done
# kube-proxy programs the VIP once it has seen the Service and the slice.
for _ in $(seq 1 50); do
	ip netns exec hdemo-client curl -s --max-time 1 "http://$vip/" >/dev/null && break
	sleep 0.2
done
holder=$(kubectl -n kube-system get lease "$lease" -o jsonpath='{.spec.holderIdentity}')
printf 'VIP %s, announced by %s; its kube-proxy sends each connection to web-1 or web-2\n' "$vip" "$holder"
for _ in 1 2 3 4; do
	must ip netns exec hdemo-client curl -sS --max-time 2 "http://$vip/"
done

step "Killing the agent of $holder (kill -9): curl keeps working through the other node"
kill_holder
printf 'Lease %s now held by %s after %ss; the client now sends to its MAC:\n' "$lease" "$new" "$took"
sleep 0.5
run ip -n hdemo-client neigh show "$vip"
for _ in 1 2 3 4; do
	must ip netns exec hdemo-client curl -sS --max-time 2 "http://$vip/"
done
start_agent "$holder"

if [[ ${DEMO_KEEP:-1} == 0 ]]; then
	install/dev/demo-down.sh
else
	printf '\nEverything keeps running; to explore it from this shell:\n'
	printf 'export KUBECONFIG=%s\n' "$(quoted "$KUBECONFIG")"
	printf 'alias kubectl=%s\n' "$(quoted "$kubectl_bin")"
	printf 'herald-dbg of a node: _output/bin/herald-dbg --socket %s/herald-node1.sock statedb l2-announce\n' "$dir"
	printf 'Stop it all with: make demo-down\n'
fi
