#!/usr/bin/env bash
# bench-bgp.sh: what `make bench-bgp` prints (make runs `tools build` first).
# Needs root: network namespaces, FRR.
#
# On the test/bgp LAN (3 node namespaces with herald-agent, FRR in a router
# namespace, a real kube-apiserver), see test/bgp/bench_test.go:
#   BenchmarkRouteLatency: Service created -> its LB IP in FRR's kernel FIB
#     with one next hop per node, 100 Services created one at a time;
#   BenchmarkScale: 1000 Services created at once -> all in FRR's RIB with
#     three paths each; the agents' memory; the withdrawal of all of them;
#   BenchmarkNodeLoss: a node cut off the LAN -> FRR's FIB stops using it,
#     graceful restart off (hold timer) and on (hold timer + restart time);
#   BenchmarkBFDFailover: agent kill -9 and node cut -> FRR's FIB stops using
#     the node, with BFD at 100ms x3 (FRR's bfdd) and without;
#   BenchmarkBFDCPUStress: BFD sessions that go down while busy loops
#     saturate the CPUs.
#
# Takes about 20 minutes. Knobs (environment): BENCH_BGP_SERVICES (100),
# BENCH_BGP_SCALE (1000), BENCH_BGP_TRIALS (5), BENCH_BGP_BFD_TRIALS (20),
# BENCH_BGP_BFD_STRESS (5m); BENCH (a -bench pattern, default all: BFD for
# `make bench-bfd`).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
GO="${GO:-go}"

if [[ "$(id -u)" != 0 ]]; then
	echo "bench-bgp: needs root (network namespaces, FRR)" >&2
	exit 1
fi

echo "== BGP on the test/bgp LAN ($(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
bench="${BENCH:-.}"
echo "\$ ${GO} test -run '^\$' -bench '${bench}' -benchtime 1x -timeout 60m ./test/bgp/"
# -v: the benchmarks print their tables on stdout as they finish.
"${GO}" test -v -run '^$' -bench "${bench}" -benchtime 1x -timeout 60m ./test/bgp/ | grep -v '^time=\|^        '
