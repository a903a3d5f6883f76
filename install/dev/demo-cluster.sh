#!/usr/bin/env bash
# make demo: Herald as users run it, on the real cluster of test/realcluster
# (Documentation/real-cluster.md): a control plane and three nodes with
# kubelet, containerd and kube-proxy in network namespaces of this machine,
# Herald's image built from this tree, installed with helm as a DaemonSet.
#
#  1. The cluster comes up; Herald is installed with helm.
#  2. LB IPAM: the sample pools and Services of Documentation/examples/lb-ipam
#     get their IPs; why one stays pending.
#  3. L2 announcements and traffic: a Deployment behind a LoadBalancer Service;
#     curl from a client on the LAN through its IP; the answering node's agent
#     Pod is deleted, another node answers, curl goes on.
#  4. BGP: an FRR router (test/frr, started by herald-realcluster router)
#     peers with the three nodes over IPv4; a dual-stack Service labelled
#     bgp=yes gets IPs from a pool off the LAN; the router shows the routes
#     (vtysh: BGP table and zebra's route, one next hop per node; ip route
#     in its namespace), the IPv6 one learned over the IPv4 sessions with
#     the nodes' IPv6 addresses as next hops, and curls both IPs through
#     them.
#  5. Multi-pool IPAM: pods of a namespace annotated with a pool get its
#     addresses from the kubelet's CNI call; a pod reaches the one on another
#     node; herald-dbg ipam check through kubectl exec.
#
# Every curl and check must succeed (each is tried for up to 20 s): otherwise
# the demo stops with an error and exit status 1. The cluster keeps running
# afterwards; `make demo-down` removes it.
#
#   install/dev/demo-cluster.sh DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-_output/realcluster}
cache=${HERALD_CACHE:-$HOME/.cache/herald}
# shellcheck source=kube-versions.sh
source install/dev/kube-versions.sh
kubectl_bin="$cache/kubectl-$KUBE_VERSION"
helm_bin="$cache/helm-$(sed -n 's/^require helm.sh\/helm\/v3 //p' install/dev/tools-helm/go.mod)"

# shellcheck source=demo-lib.sh
source install/dev/demo-lib.sh
close_inherited_fds
export MUST_TIMEOUT=20
kubectl() { "$kubectl_bin" "$@"; }
helm() { "$helm_bin" "$@"; }
# The client on the LAN; run and must show its commands as they are typed.
client=(ip netns exec hrc-client)
# backend NS prints the Deployment of three httpecho pods (app: web) in NS,
# as a YAML document to append to others (NS must come before it).
backend() {
	cat <<YAML
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: $1}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: httpecho
        image: localhost/herald-test/httpecho:v1
        imagePullPolicy: Never
        args: ["-listen", ":8080", "-name", "\$(POD_NAME)"]
        env: [{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
YAML
}

step "A cluster: control plane + node1..node3 with kubelet, containerd, kube-proxy (Documentation/real-cluster.md)"
start=$SECONDS
go build -o "$dir-bin/herald-realcluster" ./test/realcluster/cmd/herald-realcluster
eval "$("$dir-bin/herald-realcluster" up "$dir")"
echo "(up in $((SECONDS - start)) s)"
run kubectl get nodes -o wide

step "Herald, installed with helm (test/realcluster/herald-values.yaml: multi-pool IPAM, L2, BGP)"
run helm install herald install/helm/herald --namespace kube-system --values test/realcluster/herald-values.yaml
run kubectl -n kube-system rollout status ds/herald --timeout=180s
run kubectl -n kube-system get pods -o wide

step "LB IPAM: the sample pools and Services (Documentation/examples/lb-ipam)"
run kubectl apply -f Documentation/examples/lb-ipam/pools.yaml -f Documentation/examples/lb-ipam/services.yaml
must kubectl -n example wait --for=jsonpath='{.status.loadBalancer.ingress}' svc/service-blue --timeout=20s
run kubectl get ippools
run kubectl get svc -A
echo "service-green is pending: its condition says why"
run kubectl -n example get svc service-green -o jsonpath='{.status.conditions[0].reason}: {.status.conditions[0].message}{"\n"}'

step "L2 announcements: a Deployment behind a LoadBalancer Service, curled from the client (198.18.16.100)"
{ cat <<'YAML'
apiVersion: cilium.io/v2alpha1
kind: CiliumLoadBalancerIPPool
metadata: {name: lan}
spec:
  blocks: [{start: 198.18.16.200, stop: 198.18.16.239}]
  serviceSelector:
    matchLabels: {io.kubernetes.service.namespace: demo}
---
apiVersion: cilium.io/v2alpha1
kind: CiliumL2AnnouncementPolicy
metadata: {name: lan}
spec:
  # The Services of the LAN's pool only: the sample ones have no endpoints,
  # and the BGP part's Service is reached through the router.
  serviceSelector:
    matchLabels: {io.kubernetes.service.namespace: demo}
  loadBalancerIPs: true
  interfaces: [eth0]
---
apiVersion: v1
kind: Namespace
metadata: {name: demo}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: demo}
spec:
  type: LoadBalancer
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
YAML
	backend demo
} | kubectl apply -f -
run kubectl -n demo rollout status deploy/web --timeout=120s
must kubectl -n demo wait --for=jsonpath='{.status.loadBalancer.ingress}' svc/web --timeout=20s
vip=$(kubectl -n demo get svc web -o jsonpath='{.status.loadBalancer.ingress[0].ip}')
run kubectl -n demo get svc web
for _ in 1 2 3; do must "${client[@]}" curl -sS --max-time 2 "http://$vip/"; done
run kubectl -n kube-system exec ds/herald -c agent -- herald-dbg statedb l2-owners
must "${client[@]}" arping -c 1 -w 2 -I eth0 "$vip"
owner=$(kubectl get lease -n kube-system cilium-l2announce-demo-web -o jsonpath='{.spec.holderIdentity}')
pod=$(kubectl -n kube-system get pods -l app.kubernetes.io/name=herald --field-selector "spec.nodeName=$owner" -o name)
echo "$owner answers for $vip; deleting its agent Pod"
run kubectl -n kube-system delete "$pod" --wait=false
must "${client[@]}" curl -sS --max-time 2 "http://$vip/"
must "${client[@]}" arping -c 1 -w 2 -I eth0 "$vip"
run kubectl get lease -n kube-system cilium-l2announce-demo-web -o jsonpath='{.spec.holderIdentity}{" now answers\n"}'

step "BGP: an FRR router (198.18.16.254, AS 65000) peers with the three nodes over IPv4; a dual-stack Service from a pool off the LAN is routed through it"
# The router runs as long as this process (test/realcluster/bgp.go); make demo-down stops it.
"$dir-bin/herald-realcluster" router "$dir" >"$dir/router.log" 2>&1 &
frr_dir=$(realpath -m "$dir/frr")
vtysh_router=(vtysh --vty_socket "$frr_dir" --config_dir "$frr_dir")
router=(ip netns exec hrc-router)
router_up() { "${vtysh_router[@]}" -c 'show version' >/dev/null; }
sessions_up() { [[ $("${vtysh_router[@]}" -c 'show bgp ipv4 unicast summary json' | grep -Eo '"state": ?"Established"' | wc -l) == 3 ]]; }
ecmp_route() { [[ $("${router[@]}" ip "$@" | grep -c nexthop) == 3 ]]; }
# Each node's CiliumBGPNodeConfig status says so too (written at most every 2 s).
nodes_established() { [[ $(kubectl get ciliumbgpnodeconfigs -o jsonpath='{range .items[*]}{.status.bgpInstances[0].peers[0].peeringState}{"\n"}{end}' | grep -cx established) == 3 ]]; }
until_ok "the router's FRR answers vtysh" router_up
"$dir-bin/herald-realcluster" bgp-fixtures "$dir" >"$dir/bgp.yaml"
run cat "$dir/bgp.yaml"
run kubectl apply -f "$dir/bgp.yaml"
{ cat <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: routed}
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: routed
  labels: {bgp: "yes"}
spec:
  type: LoadBalancer
  ipFamilyPolicy: RequireDualStack
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
YAML
	backend routed
} | kubectl apply -f -
run kubectl -n routed rollout status deploy/web --timeout=120s
must kubectl -n routed wait --for=jsonpath='{.status.loadBalancer.ingress[1].ip}' svc/web --timeout=20s
bgp_vip=$(kubectl -n routed get svc web -o jsonpath='{.status.loadBalancer.ingress[*].ip}' | tr ' ' '\n' | grep -v : | head -1)
bgp_vip6=$(kubectl -n routed get svc web -o jsonpath='{.status.loadBalancer.ingress[*].ip}' | tr ' ' '\n' | grep : | head -1)
run kubectl -n routed get svc web
echo "every node's session is established (PfxRcd: the routes each node sends):"
until_ok "three sessions Established" sessions_up
run "${vtysh_router[@]}" -c 'show bgp ipv4 unicast summary'
echo "the router's BGP table and zebra's route to $bgp_vip: one next hop per node (ECMP):"
until_ok "three next hops to $bgp_vip in the router's kernel" ecmp_route route show "$bgp_vip"
run "${vtysh_router[@]}" -c "show bgp ipv4 unicast $bgp_vip/32"
run "${vtysh_router[@]}" -c "show ip route $bgp_vip/32"
echo "and in the router namespace's kernel table:"
run "${router[@]}" ip route show "$bgp_vip"
echo "curl from the router: its ECMP hash picks a node per flow, that node's kube-proxy a pod"
for _ in 1 2 3; do must "${router[@]}" curl -sS --max-time 2 "http://$bgp_vip/"; done
echo "IPv6 over the same IPv4 sessions: each node names its IPv6 address on the LAN as next hop of $bgp_vip6"
until_ok "three next hops to $bgp_vip6 in the router's kernel" ecmp_route -6 route show "$bgp_vip6"
run "${vtysh_router[@]}" -c "show bgp ipv6 unicast $bgp_vip6/128"
run "${router[@]}" ip -6 route show "$bgp_vip6"
for _ in 1 2 3; do must "${router[@]}" curl -sS --max-time 2 "http://[$bgp_vip6]/"; done
until_ok "every CiliumBGPNodeConfig says established" nodes_established
run kubectl get ciliumbgpnodeconfigs -o custom-columns='NODE:.metadata.name,PEER:.status.bgpInstances[0].peers[0].peerAddress,STATE:.status.bgpInstances[0].peers[0].peeringState,ROUTES OUT:.status.bgpInstances[0].peers[0].routeCount[*].advertised'

step "Multi-pool IPAM: pods of a namespace annotated with a pool get its addresses from the kubelet's CNI call"
kubectl apply -f - <<'YAML'
apiVersion: cilium.io/v2alpha1
kind: CiliumPodIPPool
metadata: {name: green-pool}
spec:
  ipv4: {cidrs: [198.19.80.0/20], maskSize: 26}
  ipv6: {cidrs: ["fd00:19:80::/104"], maskSize: 120}
---
apiVersion: v1
kind: Namespace
metadata:
  name: green
  annotations: {ipam.cilium.io/ip-pool: green-pool}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: green, namespace: green}
spec:
  replicas: 2
  selector: {matchLabels: {app: green}}
  template:
    metadata: {labels: {app: green}}
    spec:
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: green}}}
      containers:
      - name: httpecho
        image: localhost/herald-test/httpecho:v1
        imagePullPolicy: Never
        args: ["-listen", ":8080", "-name", "$(POD_NAME)"]
        env: [{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
YAML
run kubectl -n green rollout status deploy/green --timeout=120s
run kubectl get pods -A -o wide -l 'app in (web,green)'
run kubectl get cpip
mapfile -t green < <(kubectl -n green get pods -o jsonpath='{range .items[*]}{.metadata.name} {.status.podIPs[1].ip}{"\n"}{end}')
from=${green[0]%% *}
to_ip=${green[1]#* }
echo "from ${from} to the other pod over IPv6 ([${to_ip}]):"
must kubectl -n green exec "$from" -- httpecho -get "http://[$to_ip]:8080/"
run kubectl -n kube-system exec ds/herald -c agent -- herald-dbg ipam check

step "Left running for you to explore from this shell (make demo-down removes it):"
printf 'export KUBECONFIG=%s\n' "$(quoted "$KUBECONFIG")"
printf 'alias kubectl=%s helm=%s\n' "$(quoted "$kubectl_bin")" "$(quoted "$helm_bin")"
printf '# the client and the router: %s ...; %s ...\n' "$(quoted "${client[@]}")" "$(quoted "${router[@]}")"
printf "# the router's FRR: %s -c 'show bgp summary'\n" "$(quoted "${vtysh_router[@]}")"
