package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heraldlb/herald/test/cluster"
)

func mib(kib int64) float64 { return float64(kib) / 1024 }

// msPer is a duration per Service, in milliseconds.
func msPer(d time.Duration, n int) float64 { return d.Seconds() * 1000 / float64(n) }

func printMeasurement(o options, m measurement) {
	fmt.Printf("round %d, %s: all IPs %.3fs (Creates returned after %.3fs); CPU %.2fs (%.2f ms/Service), VmRSS %.1f MiB (anonymous %.1f, file %.1f), VmHWM %.1f MiB; "+
		"kube-apiserver CPU %.2fs, etcd %.2fs; status writes %.2f/Service (at most %d on one); Events %d; ready %.2fs after exec; load %s → %s\n",
		m.round, m.label, m.allIPs.Seconds(), m.creates.Seconds(), m.cpu.Seconds(), msPer(m.cpu, o.services),
		mib(m.mem.rss), mib(m.mem.anon), mib(m.mem.file), mib(m.mem.hwm), m.apiCPU.Seconds(), m.etcdCPU.Seconds(),
		float64(m.writes)/float64(o.services), m.maxWrites, m.events, m.startReady.Seconds(), m.loadStart, m.loadEnd)
	fmt.Printf("  API requests (all clients): %s\n", requestSummary(m.requests))
}

// requestSummary lists the API server's requests by kind, most first.
func requestSummary(c cluster.RequestCounts) string {
	keys := c.Keys()
	slices.SortStableFunc(keys, func(a, b cluster.RequestKey) int { return int(c[b] - c[a]) })
	var parts []string
	for _, k := range keys {
		if c[k] >= 1 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, c[k]))
		}
	}
	return strings.Join(parts, ", ")
}

// printSummary prints each contender's medians, and the per-round ratios
// of each Herald build and of MetalLB to the null controller.
func printSummary(o options, cs []contender, ms []measurement) {
	fmt.Printf("\n%d Services, %d workers, %d rounds, %d CPUs; medians over the rounds:\n",
		o.services, o.workers, o.rounds, runtime.NumCPU())
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "contender\tall IPs (s)\t/ null\tCPU ms/Service\t/ null\tVmRSS MiB\tVmHWM MiB\t/ null\tapiserver CPU (s)\tstatus writes/Service\tEvents")
	null := pick(ms, func(m measurement) bool { return m.kind == kindNull })
	for _, c := range cs {
		mine := pick(ms, func(m measurement) bool { return m.label == c.label })
		fmt.Fprintf(tw, "%s\t%.3f\t%s\t%.2f\t%s\t%.1f\t%.1f\t%s\t%.2f\t%.2f\t%.0f\n", c.label,
			median(mine, func(m measurement) float64 { return m.allIPs.Seconds() }),
			ratioPerRound(mine, null, func(m measurement) float64 { return m.allIPs.Seconds() }),
			median(mine, func(m measurement) float64 { return msPer(m.cpu, o.services) }),
			ratioPerRound(mine, null, func(m measurement) float64 { return m.cpu.Seconds() }),
			median(mine, func(m measurement) float64 { return mib(m.mem.rss) }),
			median(mine, func(m measurement) float64 { return mib(m.mem.hwm) }),
			ratioPerRound(mine, null, func(m measurement) float64 { return float64(m.mem.hwm) }),
			median(mine, func(m measurement) float64 { return m.apiCPU.Seconds() }),
			median(mine, func(m measurement) float64 { return float64(m.writes) / float64(o.services) }),
			median(mine, func(m measurement) float64 { return float64(m.events) }))
	}
	_ = tw.Flush()
	fmt.Println("  all IPs: from the first Create until a watch saw an ingress IP on every Service (apiserver alone: until every Create returned)")
	fmt.Println("  / null: the median over the rounds of this contender's figure divided by the null controller's in the same round")
	fmt.Println("  CPU: the contender's utime+stime from the first Create until its status writes were quiet for 2 s")
	if o.agentArgs != "" {
		fmt.Printf("  herald-agent extra flags: %s\n", o.agentArgs)
	}
}

func pick(ms []measurement, keep func(measurement) bool) []measurement {
	var out []measurement
	for _, m := range ms {
		if keep(m) {
			out = append(out, m)
		}
	}
	return out
}

func median(ms []measurement, f func(measurement) float64) float64 {
	var v []float64
	for _, m := range ms {
		v = append(v, f(m))
	}
	return medianOf(v)
}

func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// ratioPerRound is the median over rounds of mine/null, "-" when there is
// no null controller to compare with.
func ratioPerRound(mine, null []measurement, f func(measurement) float64) string {
	byRound := map[int]float64{}
	for _, m := range null {
		byRound[m.round] = f(m)
	}
	var v []float64
	for _, m := range mine {
		if d, ok := byRound[m.round]; ok && d > 0 {
			v = append(v, f(m)/d)
		}
	}
	if len(v) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", medianOf(v))
}
