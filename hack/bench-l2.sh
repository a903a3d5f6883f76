#!/usr/bin/env bash
# bench-l2.sh: what `make bench-l2` prints (make runs `tools build` first).
# Needs root: network namespaces, bpffs, eBPF.
#
#  (0) placement of the members election: 1000 groups over 3 and 10 nodes,
#      the busiest node over the mean, groups moved on join and on leave
#      (cells/l2/elector BenchmarkPlacementQuality; pure computation);
#  (1) ARP reply latency seen from a client namespace: the eBPF responder
#      (XDP generic and native, tcx) against the kernel answering for a
#      configured address (bpf BenchmarkARPReply, 2000 requests per case);
#  (2) on the test/l2 LAN (3 node namespaces, kube-apiserver):
#      BenchmarkFailover: failover time of a VIP, 20 trials per row: the
#        lease election at default (15s/5s/2s) and tuned (2s/1s/200ms)
#        timings with kill -9 of the owner's agent; the members election at
#        default settings with kill -9, SIGSTOP and a partition of the
#        owner, on three nodes and on two (members/twonode: node3's agent
#        stopped): p50, p99, min, max, double answers;
#      BenchmarkLeaseAPILoad: Lease writes and reads on the API server for
#        100 and 1000 announced Services, the lease election at tuned and
#        default timings and the members election, and whether the agents'
#        client-side rate limit throttles;
#      BenchmarkAPIServerOutage: the members election with the API server
#        stopped for 120 s: VIPs withdrawn or moved, failover of a node killed
#        during the outage.
#
# Takes about 40 minutes. Knobs (environment), see test/l2/bench_test.go:
# BENCH_L2_TRIALS (20), BENCH_L2_FAILOVER_SERVICES (1: Services announced during
# BenchmarkFailover; with more, it times every VIP of the faulted owner, and
# BENCH_L2_AGENT_ARGS adds agent flags, e.g. --k8s-client-qps=500),
# BENCH_L2_SERVICES (100,1000), BENCH_L2_WINDOW (30s), BENCH_L2_SETTLE_TIMEOUT
# (5m); BENCH_L2_ARP_COUNT (2000) for (1).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

GO="${GO:-go}"
arp_count="${BENCH_L2_ARP_COUNT:-2000}"

if [[ "$(id -u)" != 0 ]]; then
	echo "bench-l2: needs root (network namespaces, bpffs, eBPF)" >&2
	exit 1
fi

# run: prints a command, then runs it.
source hack/lib.sh

echo "== (0) placement of the members election"
run "${GO}" test -run '^$' -bench PlacementQuality ./cells/l2/elector/

echo
echo "== (1) ARP reply latency, eBPF responder vs kernel ($(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
run "${GO}" test -run '^$' -bench ARPReply -benchtime "${arp_count}x" ./bpf/

echo
echo "== (2) failover and Lease API load on the test/l2 LAN ($(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
run "${GO}" test -run '^$' -bench 'BenchmarkFailover|BenchmarkLeaseAPILoad|BenchmarkAPIServerOutage' -benchtime 1x -timeout 90m ./test/l2/
