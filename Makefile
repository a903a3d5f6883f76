# Herald — build, test, generate, demo.
# Everything a fresh machine needs is installed by the targets themselves
# (Debian packages, the kube-apiserver build cached under $(HERALD_CACHE)).

GO            ?= go
OUTPUT        := _output
BIN           := $(OUTPUT)/bin
HERALD_CACHE  ?= $(HOME)/.cache/herald
export HERALD_CACHE
# The development control plane of `make cluster-up` and `make demo-netns`.
CLUSTER_DIR   ?= $(OUTPUT)/demo
HERALD_APISERVER_PORT ?= 16443
HERALD_ETCD_PORT      ?= 12379
export CLUSTER_DIR HERALD_APISERVER_PORT HERALD_ETCD_PORT
# The real cluster of `make realcluster-up` and `make demo` (test/realcluster).
REALCLUSTER_DIR ?= $(OUTPUT)/realcluster
# The oldest Kubernetes Herald supports; its kube-apiserver is built by `make tools` too.
OLDEST_KUBE_VERSION := $(shell sed -n 's/^KUBE_OLDEST_VERSION=//p' install/dev/kube-versions.sh)

.PHONY: all build test test-unit test-integration test-realcluster kernel-check generate verify-generate lint fuzz demo \
        cluster-up cluster-down realcluster-up realcluster-down demo-netns bench-alloc bench-apirestart bench-failover bench-ipam bench-l2 \
        bench-bgp bench-bfd bench-realcluster bench-cpvip manifests demo-down tools clean

all: build

# herald-ipam is static: the runtime starts it for every ADD, and a static binary starts about a
# millisecond sooner than one the dynamic loader links (and runs on any host's libc).
build:
	$(GO) build -o $(BIN)/herald-agent ./cmd/herald-agent
	$(GO) build -o $(BIN)/herald-dbg ./cmd/herald-dbg
	CGO_ENABLED=0 $(GO) build -o $(BIN)/herald-ipam ./cmd/herald-ipam

## tools: Debian packages and the cached kube-apiserver the tests and the demo need.
tools:
	install/dev/ensure-tools.sh

## generate: deepcopy, clientset, CRD YAML, eBPF objects, then the install manifests.
generate:
	hack/generate.sh
	hack/manifests.sh

## manifests: CRD copies (chart, install/kubernetes) and install/kubernetes/herald.yaml from install/crds + the chart.
manifests:
	hack/manifests.sh

## verify-generate: fails when the generated files differ from what `make generate` writes.
verify-generate:
	hack/verify-generate.sh

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

test-unit:
	$(GO) test -race ./cells/... ./tables/... ./daemon/... ./api/... ./cmd/... ./hack/... ./install/...

## fuzz: run every fuzz target briefly (the seed corpus also runs in test-unit).
FUZZTIME ?= 200000x
fuzz:
	hack/fuzz.sh $(FUZZTIME)

## test-integration: real kube-apiserver, real network namespaces and packets (needs root).
## Everything runs against the current kube-apiserver; the CRDs, the install manifests and one
## LB IPAM smoke test (a pool, a Service, its IP) run against the oldest supported one too. kube-vip
## (test/cpvip's benchmark contender, whose harness a test checks) is built and cached first.
## The suites mostly wait (failover trials, leases, probes): two at a time kept two cores about a
## third busy, so INTEGRATION_PARALLEL of them run at once. Each suite has its own names, LAN
## subnet and lock, and netlab refuses a LAN whose subnet another has up. The longest suites start
## first (go test starts packages in the order given), the short ones fill in beside them.
INTEGRATION_PARALLEL ?= 4
INTEGRATION_FIRST    := ./test/l2 ./test/faults ./test/cpvip ./test/bgp ./test/multipool
test-integration: tools build
	hack/kube-vip.sh >/dev/null
	$(GO) test -race -count=1 -p $(INTEGRATION_PARALLEL) -timeout 40m $(INTEGRATION_FIRST) ./bpf/... \
	  $$($(GO) list ./test/... | grep -v /test/realcluster)
	HERALD_KUBE_VERSION=$(OLDEST_KUBE_VERSION) $(GO) test -race -count=1 ./test/crdvalidation/ ./test/install/
	HERALD_KUBE_VERSION=$(OLDEST_KUBE_VERSION) $(GO) test -race -count=1 ./test/lbipam/ -run '^TestServices$$'

## kernel-check: the eBPF programs' tests that need no network device, run on older kernels
## (Debian's 5.10 and 6.1) in an emulated VM: the verifier and the programs as users' nodes run them.
kernel-check: tools
	hack/kernel-check.sh

## test-realcluster: Herald as users run it: a real cluster (kubelets, containerd, Herald's image,
## helm install), test/realcluster (needs root). Alone: it is the machine's biggest load, and the HA
## control plane's test of the VIP's hysteresis (test/realcluster/havip) counts moves that API
## servers too starved to answer /readyz in time would add. Without
## -race: what runs in the cluster is Herald's image (built as released), the suite is glue.
## MetalLB (the takeover test's) is built and cached first, outside the test's per-step timeouts: from
## a cold module cache its build takes minutes on 2 cores.
test-realcluster: tools
	hack/metallb.sh >/dev/null
	$(GO) test -count=1 -timeout 30m ./test/realcluster/...

test: tools lint verify-generate test-unit fuzz test-integration test-realcluster kernel-check

cluster-up: tools
	install/dev/cluster-up.sh $(CLUSTER_DIR)

cluster-down:
	install/dev/cluster-down.sh $(CLUSTER_DIR)

## demo: Herald as users run it: the real cluster, Herald installed with helm (install/dev/demo-cluster.sh).
## demo-netns: the same story on agents run as host processes next to a bare API server.
demo: tools
	install/dev/demo-cluster.sh $(REALCLUSTER_DIR)

demo-netns: tools build
	install/dev/demo.sh

## realcluster-up / realcluster-down: the real cluster of test/realcluster in $(REALCLUSTER_DIR)
## (Documentation/real-cluster.md), without Herald.
realcluster-up: tools
	$(GO) run ./test/realcluster/cmd/herald-realcluster up $(REALCLUSTER_DIR)

realcluster-down:
	$(GO) run ./test/realcluster/cmd/herald-realcluster down $(REALCLUSTER_DIR)


demo-down:
	install/dev/demo-down.sh
	$(GO) run ./test/realcluster/cmd/herald-realcluster down $(REALCLUSTER_DIR)

bench-alloc: tools build
	hack/bench-alloc.sh

## bench-failover: how long new Services wait for an IP while the allocating agent keeps being killed.
BENCH_FAILOVER_FLAGS ?= -duration 2m -kill-every 10s -rate 10
bench-failover: tools build
	$(GO) build -o $(BIN)/bench-failover ./test/bench/cmd/bench-failover
	$(BIN)/bench-failover $(BENCH_FAILOVER_FLAGS)

## bench-apirestart: the kube-apiserver killed, 20 s down, started again, 5 times: agents healthy and a
## new Service's address after it is ready, the agents' requests to it; main's agent as the baseline.
BENCH_APIRESTART_FLAGS ?= -cycles 5 -down 20s -baseline main
bench-apirestart: tools build
	$(GO) build -o $(BIN)/bench-apirestart ./test/bench/cmd/bench-apirestart
	$(BIN)/bench-apirestart $(BENCH_APIRESTART_FLAGS)

## bench-ipam: multi-pool IPAM: bridge + herald-ipam against bridge + host-local, ADD latency and API
## calls on a node with its CIDR, 1000 Pods on 3 nodes from nothing, the pod CIDR allocator with 1000
## nodes, its engine alone (needs root; about 9 minutes). BENCH_IPAM_FLAGS="-parts chain -baseline-ref main"
## compares the CNI ADD chain with main's agent and plugin in the same run.
BENCH_IPAM_FLAGS ?= -parts chain,add,scale,allocator,engine
bench-ipam: tools build
	$(GO) build -o $(BIN)/bench-ipam ./test/bench/cmd/bench-ipam
	$(BIN)/bench-ipam $(BENCH_IPAM_FLAGS)

## bench-l2: failover times, ARP reply latency and Lease API load on namespaces (needs root).
bench-l2: tools build
	hack/bench-l2.sh

## bench-realcluster: on the real cluster: pod create -> Running (herald-ipam and host-local), Service
## create -> first curl, the agent's RSS and CPU idle and under churn, L2 failover (20 trials each).
bench-realcluster: tools
	HERALD_REALCLUSTER_TRIALS=20 $(GO) test -count=1 -timeout 60m ./test/realcluster/e2e/ -run '^$$' -bench BenchmarkRealCluster -benchtime 1x -v

## bench-cpvip: the control-plane VIP against keepalived (advert_int 1 s and 0.1 s) and kube-vip (built from
## its Go module by hack/kube-vip.sh) on the netns HA control plane: failover, double answers and kubectl
## through the VIP per fault of the owner (needs root; HERALD_CPVIP_TRIALS trials per fault, 20 by default;
## HERALD_CPVIP_DAEMONS=herald,keepalived,kube-vip by default; about an hour).
bench-cpvip: tools
	hack/kube-vip.sh >/dev/null
	flock /tmp/herald-itest.lock $(GO) test -run '^$$' -bench BenchmarkControlPlaneVIPFailover -benchtime 1x -timeout 100m ./test/cpvip/

## bench-bgp: Service -> route in FRR latency, 1000 Services, node loss (needs root; about 10 minutes).
bench-bgp: tools build
	hack/bench-bgp.sh

## bench-bfd: BGP failover with BFD (kill -9, node cut) against the hold time; flaps under CPU stress (needs root; about 10 minutes).
bench-bfd: tools build
	BENCH=BFD hack/bench-bgp.sh

clean:
	rm -rf $(OUTPUT)
