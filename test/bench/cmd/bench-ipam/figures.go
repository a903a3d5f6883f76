package main

// The figures printed: latency percentiles and API request counts.

import (
	"fmt"
	"slices"
	"time"

	"github.com/heraldlb/herald/test/cluster"
)

// quantile is the p-quantile of sorted durations (nearest rank).
func quantile(ds []time.Duration, p float64) time.Duration {
	i := int(p*float64(len(ds))+0.5) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

const latencyHeader = "%-52s %6s %9s %9s %9s %9s %9s\n"

func printLatencyHeader(what string) {
	fmt.Printf(latencyHeader, what, "n", "p50", "p90", "p99", "max", "mean")
}

// printLatency prints percentiles of ds, in milliseconds or seconds.
func printLatency(name string, ds []time.Duration, unit func(time.Duration) string) {
	if len(ds) == 0 {
		fmt.Printf("%-52s %6d\n", name, 0)
		return
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	fmt.Printf(latencyHeader, name, fmt.Sprint(len(s)), unit(quantile(s, 0.50)), unit(quantile(s, 0.90)),
		unit(quantile(s, 0.99)), unit(s[len(s)-1]), unit(sum/time.Duration(len(s))))
}

// printRequests prints API request counts of windows side by side, one
// row per kind of request seen in any of them.
func printRequests(names []string, windows ...cluster.RequestCounts) {
	all := cluster.RequestCounts{}
	for _, w := range windows {
		for k, v := range w {
			all[k] += v
		}
	}
	fmt.Printf("  %-40s", "request (apiserver_request_total)")
	for _, n := range names {
		fmt.Printf(" %14s", n)
	}
	fmt.Println()
	if len(all) == 0 {
		fmt.Println("  (none)")
		return
	}
	for _, k := range all.Keys() {
		fmt.Printf("  %-40s", k.String())
		for _, w := range windows {
			fmt.Printf(" %14.0f", w[k])
		}
		fmt.Println()
	}
}

// isLease tells the elections' Lease traffic apart.
func isLease(k cluster.RequestKey) bool { return k.Resource == "leases" }
