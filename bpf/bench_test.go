/*
Copyright The Herald Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package bpf

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"
)

// BenchmarkARPReply measures the ARP request -> reply latency seen from the
// client namespace (raw socket write to reply read, one request in flight),
// for the responder in each mode and for the kernel answering for an address
// configured on the node's veth. Each op is one request; besides ns/op (the
// mean) it reports the p50, p99 and max latency in µs. Use enough requests
// for a meaningful p99, e.g.
//
//	go test -run '^$' -bench ARPReply -benchtime 2000x ./bpf/
//
// Cases:
//
//	xdp-generic          ModeXDP as Attach picks it on a veth (generic/SKB mode)
//	xdp-native           ModeXDP forced to native mode; the client's veth gets
//	                     an XDP_PASS program so that XDP_TX frames reach it
//	tcx                  ModeTCX
//	kernel               no program, the kernel answers for the node's address
//	kernel-client-napi   the same with the client set up as for xdp-native
func BenchmarkARPReply(b *testing.B) {
	cases := []struct {
		name       string
		mode       Mode // "" = the kernel answers
		native     bool
		clientNAPI bool
	}{
		{"xdp-generic", ModeXDP, false, false},
		{"xdp-native", ModeXDP, true, true},
		{"tcx", ModeTCX, false, false},
		{"kernel", "", false, false},
		{"kernel-client-napi", "", false, true},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			tbd := newTestbed(b)
			if tc.clientNAPI {
				tbd.passXDPOnClient(b)
			}
			target := tbd.nodeIP
			if tc.mode != "" {
				r := loadT(b, tc.mode, "")
				if tc.native {
					r.xdpFlags = link.XDPDriverMode
				}
				tbd.attach(b, r)
				if _, err := r.Upsert(tbd.vip, tbd.nodeIfindex, tbd.nodeMAC); err != nil {
					b.Fatal(err)
				}
				if err := r.Heartbeat(time.Hour); err != nil {
					b.Fatal(err)
				}
				target = tbd.vip
			}
			ac := tbd.arpClient(b)
			benchResolve(b, ac, target)
		})
	}
}

func benchResolve(b *testing.B, ac *arpClient, ip netip.Addr) {
	for range 50 { // warm up: neighbor entries, caches, JIT'd paths
		if _, err := ac.resolve(ip, replyTimeout); err != nil {
			b.Fatalf("warm-up: %v", err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := ac.resolve(ip, replyTimeout); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Microsecond)
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(pct(1), "max-µs")
}
