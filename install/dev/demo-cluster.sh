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
#  4. Multi-pool IPAM: pods of a namespace annotated with a pool get its
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
export MUST_TIMEOUT=20
kubectl() { "$kubectl_bin" "$@"; }
helm() { "$helm_bin" "$@"; }
client() { ip netns exec hrc-client "$@"; }

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
kubectl apply -f - <<'YAML'
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
  loadBalancerIPs: true
  interfaces: [eth0]
---
apiVersion: v1
kind: Namespace
metadata: {name: demo}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: demo}
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
        args: ["-listen", ":8080", "-name", "$(POD_NAME)"]
        env: [{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: demo}
spec:
  type: LoadBalancer
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
YAML
run kubectl -n demo rollout status deploy/web --timeout=120s
must kubectl -n demo wait --for=jsonpath='{.status.loadBalancer.ingress}' svc/web --timeout=20s
vip=$(kubectl -n demo get svc web -o jsonpath='{.status.loadBalancer.ingress[0].ip}')
run kubectl -n demo get svc web
for _ in 1 2 3; do must client curl -sS --max-time 2 "http://$vip/"; done
run kubectl -n kube-system exec ds/herald -c agent -- herald-dbg statedb l2-owners
must client arping -c 1 -w 2 -I eth0 "$vip"
owner=$(kubectl get lease -n kube-system cilium-l2announce-demo-web -o jsonpath='{.spec.holderIdentity}')
pod=$(kubectl -n kube-system get pods -l app.kubernetes.io/name=herald --field-selector "spec.nodeName=$owner" -o name)
echo "$owner answers for $vip; deleting its agent Pod"
run kubectl -n kube-system delete "$pod" --wait=false
must client curl -sS --max-time 2 "http://$vip/"
must client arping -c 1 -w 2 -I eth0 "$vip"
run kubectl get lease -n kube-system cilium-l2announce-demo-web -o jsonpath='{.spec.holderIdentity}{" now answers\n"}'

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

step "Left running: export KUBECONFIG=$KUBECONFIG (kubectl: $kubectl_bin, helm: $helm_bin); make demo-down removes it"
