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
#     graceful restart off (hold timer) and on (hold timer + restart time).
#
# Takes about 10 minutes. Knobs (environment): BENCH_BGP_SERVICES (100),
# BENCH_BGP_SCALE (1000), BENCH_BGP_TRIALS (5).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
GO="${GO:-go}"

if [[ "$(id -u)" != 0 ]]; then
	echo "bench-bgp: needs root (network namespaces, FRR)" >&2
	exit 1
fi

echo "== BGP on the test/bgp LAN ($(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
echo "\$ ${GO} test -run '^\$' -bench . -benchtime 1x -timeout 60m ./test/bgp/"
# -v: the benchmarks print their tables on stdout as they finish.
"${GO}" test -v -run '^$' -bench . -benchtime 1x -timeout 60m ./test/bgp/ | grep -v '^time=\|^        '
