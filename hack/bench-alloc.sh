#!/usr/bin/env bash
# bench-alloc.sh: what `make bench-alloc` prints (make runs `tools build` first).
#
#  (1) the allocator micro-benchmark (cells/lbipam/allocator/iprange BenchmarkAllocate,
#      100k allocations per op) and per-allocation figures derived from it;
#  (2) end to end: test/bench/cmd/bench-e2e, one fresh etcd + kube-apiserver
#      per measurement, rounds of: the API server alone, the null controller
#      (test/bench/cmd/bench-null), herald-agent and MetalLB's controller
#      (built from its Go module by hack/metallb.sh).
#
# Knobs (environment): BENCH_SERVICES (1000), BENCH_WORKERS (16),
# BENCH_ROUNDS (3), BENCH_AGENT_ARGS (extra herald-agent flags, default none),
# BENCH_METALLB (1; 0 leaves MetalLB out).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

GO="${GO:-go}"
services="${BENCH_SERVICES:-1000}"
workers="${BENCH_WORKERS:-16}"
agent_args="${BENCH_AGENT_ARGS:-}"
rounds="${BENCH_ROUNDS:-3}"
with_metallb="${BENCH_METALLB:-1}"
allocs_per_op=100000 # the inner loop of BenchmarkAllocate

# run: prints a command, then runs it.
source hack/lib.sh

echo "== (1) allocator micro-benchmark ($(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
out="$(mktemp)"
trap 'rm -f "${out}"' EXIT
run "${GO}" test -run '^$' -bench BenchmarkAllocate -benchmem ./cells/lbipam/allocator/iprange/ | tee "${out}"
if grep -q '(cached)' "${out}"; then
	echo "bench-alloc: go test returned a cached result" >&2
	exit 1
fi

echo
echo "per allocation (BenchmarkAllocate: ns/op and B/op divided by ${allocs_per_op}):"
awk -v n="${allocs_per_op}" '
	$1 ~ /^BenchmarkAllocate\// {
		name = $1; sub(/^BenchmarkAllocate\//, "", name); sub(/-[0-9]+$/, "", name)
		ns = ""; b = ""; a = ""
		for (i = 2; i <= NF; i++) {
			if ($i == "ns/op") ns = $(i - 1)
			if ($i == "B/op") b = $(i - 1)
			if ($i == "allocs/op") a = $(i - 1)
		}
		if (ns == "" || b == "") { print "bench-alloc: cannot parse: " $0 > "/dev/stderr"; exit 1 }
		rows[++k] = sprintf("%-12s %10.2f %12.5f %14.6f", name, ns / n, b / n, a / n)
	}
	END {
		if (k < 2) { print "bench-alloc: expected the 10.0.0.0/8 and 2004::/64 sub-benchmarks, found " k > "/dev/stderr"; exit 1 }
		printf "%-12s %10s %12s %14s\n", "pool", "ns/alloc", "bytes/alloc", "allocs/alloc"
		for (i = 1; i <= k; i++) print rows[i]
	}' "${out}"

echo
echo "== (2) end to end: ${services} LoadBalancer Services, ${workers} workers, ${rounds} rounds"
run "${GO}" build -o _output/bin/bench-e2e ./test/bench/cmd/bench-e2e
run "${GO}" build -o _output/bin/bench-null ./test/bench/cmd/bench-null
metallb=()
if [[ "${with_metallb}" != 0 ]]; then
	dir="$(hack/metallb.sh)"
	metallb=(-metallb "${dir}/controller" -metallb-crds "${dir}/crds")
fi
# shellcheck disable=SC2086 # word splitting of the flags is wanted
run _output/bin/bench-e2e -services "${services}" -workers "${workers}" -rounds "${rounds}" \
	-agent _output/bin/herald-agent ${agent_args:+-agent-args "${agent_args}"} "${metallb[@]}"
