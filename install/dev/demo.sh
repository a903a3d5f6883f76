#!/usr/bin/env bash
# make demo: a local control plane, Herald's CRDs, one herald-agent, the
# sample pools and Services of Documentation/examples/lb-ipam, then what a
# user sees: kubectl get ippools, kubectl get svc -A and the agent's view.
#
# The cluster and agent keep running afterwards (DEMO_KEEP=0 tears them
# down at the end); `make cluster-down` stops the cluster.
set -euo pipefail
cd "$(dirname "$0")/../.."

dir=${CLUSTER_DIR:-_output/demo}
export HERALD_APISERVER_PORT=${HERALD_APISERVER_PORT:-16443}
export HERALD_ETCD_PORT=${HERALD_ETCD_PORT:-12379}
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "Control plane (etcd + kube-apiserver) in $dir"
install/dev/cluster-up.sh "$dir"
export KUBECONFIG=$PWD/$dir/kubeconfig

step "CRDs"
kubectl apply -f install/crds/
kubectl wait --for condition=Established --timeout=60s crd/ciliumloadbalancerippools.cilium.io
kubectl get ns kube-system >/dev/null 2>&1 || kubectl create ns kube-system

step "herald-agent (logs in $dir/agent.log)"
if [[ -f $dir/agent.pid ]] && kill -0 "$(cat $dir/agent.pid)" 2>/dev/null; then
  kill "$(cat $dir/agent.pid)"; sleep 1
fi
_output/bin/herald-agent --kubeconfig "$KUBECONFIG" --node-name demo-node --k8s-namespace kube-system \
  --enable-ipv6 --dbg-socket "$PWD/$dir/herald.sock" >"$dir/agent.log" 2>&1 &
echo $! >"$dir/agent.pid"
echo "agent pid $(cat $dir/agent.pid)"

step "Pools and Services (Documentation/examples/lb-ipam)"
kubectl apply -f Documentation/examples/lb-ipam/pools.yaml
kubectl apply -f Documentation/examples/lb-ipam/services.yaml

step "Waiting for the Services to get their IPs"
for _ in $(seq 1 100); do
  pending=$(kubectl get svc -n example -o json | jq '[.items[] | select(.metadata.name != "service-green") | select((.status.loadBalancer.ingress // []) | length == 0)] | length')
  [[ $pending == 0 ]] && break
  sleep 0.2
done

step "kubectl get ippools"
kubectl get ippools
step "kubectl get svc -A"
kubectl get svc -A
step "Why is service-green pending?"
kubectl -n example get svc/service-green -o jsonpath='{.status.conditions}' | jq .
step "herald-dbg statedb lb-allocations"
_output/bin/herald-dbg --socket "$dir/herald.sock" statedb lb-allocations

if [[ ${DEMO_KEEP:-1} == 0 ]]; then
  kill "$(cat $dir/agent.pid)" || true
  install/dev/cluster-down.sh "$dir"
else
  printf '\nThe cluster and agent keep running: export KUBECONFIG=%s\nStop them with: kill $(cat %s/agent.pid); make cluster-down CLUSTER_DIR=%s\n' "$KUBECONFIG" "$dir" "$dir"
fi
