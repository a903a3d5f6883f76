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
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/cilium/ebpf"
)

// The programs run on hand-made frames with BPF_PROG_TEST_RUN. There, the
// ingress interface is the loopback device of the namespace: ifindex 1.
const testRunIfindex = 1

const (
	xdpPass = 2
	xdpTX   = 3
	tcActOK = 0
	tcRedir = 7 // TC_ACT_REDIRECT, returned by bpf_redirect
)

var (
	reqMAC   = net.HardwareAddr{0x02, 0xaa, 0, 0, 0, 0x01}
	reqIP    = netip.MustParseAddr("198.18.0.2")
	vipIP    = netip.MustParseAddr("198.18.0.200")
	answerAs = net.HardwareAddr{0x02, 0xbb, 0, 0, 0, 0x02}
)

// arpFrame builds an Ethernet + ARP frame (42 bytes, unpadded).
func arpFrame(ethDst net.HardwareAddr, htype, ptype uint16, hlen, plen uint8, op uint16,
	sha net.HardwareAddr, sip netip.Addr, tha net.HardwareAddr, tip netip.Addr,
) []byte {
	b := make([]byte, 0, 42)
	b = append(b, ethDst...)
	b = append(b, sha...)
	b = binary.BigEndian.AppendUint16(b, 0x0806)
	b = binary.BigEndian.AppendUint16(b, htype)
	b = binary.BigEndian.AppendUint16(b, ptype)
	b = append(b, hlen, plen)
	b = binary.BigEndian.AppendUint16(b, op)
	b = append(b, sha...)
	b = append(b, sip.AsSlice()...)
	b = append(b, tha...)
	b = append(b, tip.AsSlice()...)
	return b
}

var bcast = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

func request(tip netip.Addr) []byte {
	return arpFrame(bcast, 1, 0x0800, 6, 4, 1, reqMAC, reqIP, make(net.HardwareAddr, 6), tip)
}

func TestProgram(t *testing.T) {
	wantReply := arpFrame(reqMAC, 1, 0x0800, 6, 4, 2, answerAs, vipIP, reqMAC, reqIP)
	// The Ethernet source of the reply is the entry's MAC.
	copy(wantReply[6:12], answerAs)

	ipv4 := append(append(append([]byte{}, bcast...), reqMAC...), 0x08, 0x00)
	ipv4 = append(ipv4, make([]byte, 28)...)

	for _, mode := range []Mode{ModeXDP, ModeTCX} {
		t.Run(string(mode), func(t *testing.T) {
			r := loadT(t, mode, "")
			answer, pass := uint32(xdpTX), uint32(xdpPass)
			if mode == ModeTCX {
				answer, pass = tcRedir, tcActOK
			}
			run := func(in []byte) (uint32, []byte) {
				t.Helper()
				out := make([]byte, len(in)+256)
				ret, err := r.prog.Run(&ebpf.RunOptions{Data: in, DataOut: out})
				if err != nil {
					t.Fatal(err)
				}
				return ret, out[:len(in)]
			}
			expectPass := func(name string, in []byte) {
				t.Helper()
				ret, out := run(in)
				if ret != pass || !bytes.Equal(out, in) {
					t.Fatalf("%s: returned %d with % x, want %d and the frame untouched", name, ret, out, pass)
				}
			}
			sent := func() uint64 {
				t.Helper()
				key, _ := makeKey(vipIP, testRunIfindex)
				var v l2responderL2ResponderEntry
				if err := r.v4.Lookup(&key, &v); err != nil {
					t.Fatal(err)
				}
				return v.ResponsesSent
			}

			if _, err := r.Upsert(vipIP, testRunIfindex, answerAs); err != nil {
				t.Fatal(err)
			}
			expectPass("no heartbeat yet", request(vipIP))
			if err := r.Heartbeat(time.Hour); err != nil {
				t.Fatal(err)
			}

			ret, out := run(request(vipIP))
			if ret != answer || !bytes.Equal(out, wantReply) {
				t.Fatalf("request: returned %d with\n% x, want %d with\n% x", ret, out, answer, wantReply)
			}
			if n := sent(); n != 1 {
				t.Fatalf("responses_sent = %d, want 1", n)
			}
			// Unicast requests (cache refresh) are answered too.
			if ret, _ := run(arpFrame(reqMAC, 1, 0x0800, 6, 4, 1, reqMAC, reqIP, make(net.HardwareAddr, 6), vipIP)); ret != answer {
				t.Fatalf("unicast request: returned %d", ret)
			}
			// ARP probes (sender IP 0.0.0.0) are answered, to the probing host.
			probe := arpFrame(bcast, 1, 0x0800, 6, 4, 1, reqMAC, netip.IPv4Unspecified(), make(net.HardwareAddr, 6), vipIP)
			if ret, out := run(probe); ret != answer || !bytes.Equal(out[38:42], []byte{0, 0, 0, 0}) || !bytes.Equal(out[0:6], reqMAC) {
				t.Fatalf("probe: returned %d with % x", ret, out)
			}
			if n := sent(); n != 3 {
				t.Fatalf("responses_sent = %d, want 3", n)
			}

			expectPass("unknown IP", request(netip.MustParseAddr("198.18.0.201")))
			expectPass("gratuitous", arpFrame(bcast, 1, 0x0800, 6, 4, 1, reqMAC, vipIP, make(net.HardwareAddr, 6), vipIP))
			expectPass("reply", arpFrame(bcast, 1, 0x0800, 6, 4, 2, reqMAC, reqIP, make(net.HardwareAddr, 6), vipIP))
			expectPass("htype", arpFrame(bcast, 6, 0x0800, 6, 4, 1, reqMAC, reqIP, make(net.HardwareAddr, 6), vipIP))
			expectPass("ptype", arpFrame(bcast, 1, 0x86dd, 6, 4, 1, reqMAC, reqIP, make(net.HardwareAddr, 6), vipIP))
			expectPass("hlen", arpFrame(bcast, 1, 0x0800, 8, 4, 1, reqMAC, reqIP, make(net.HardwareAddr, 6), vipIP))
			expectPass("plen", arpFrame(bcast, 1, 0x0800, 6, 16, 1, reqMAC, reqIP, make(net.HardwareAddr, 6), vipIP))
			expectPass("truncated", request(vipIP)[:41])
			expectPass("ipv4", ipv4)

			// Stale heartbeat.
			if err := r.Heartbeat(0); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
			expectPass("stale heartbeat", request(vipIP))
			if n := sent(); n != 3 {
				t.Fatalf("responses_sent = %d, want 3", n)
			}
		})
	}
}

// BenchmarkProgram measures the programs alone with BPF_PROG_TEST_RUN, in
// kernel time per run: "answer" rewrites a request into the reply, "pass"
// is what every other packet on the interface pays (an IPv4 frame).
func BenchmarkProgram(b *testing.B) {
	ipv4 := append(append(append([]byte{}, bcast...), reqMAC...), 0x08, 0x00)
	ipv4 = append(ipv4, make([]byte, 1486)...)
	for _, mode := range []Mode{ModeXDP, ModeTCX} {
		r := loadT(b, mode, "")
		if _, err := r.Upsert(vipIP, testRunIfindex, answerAs); err != nil {
			b.Fatal(err)
		}
		if err := r.Heartbeat(time.Hour); err != nil {
			b.Fatal(err)
		}
		b.Run(string(mode)+"/answer", func(b *testing.B) {
			// The frame is rewritten in place, so every run needs a
			// fresh request: one test run per request.
			in := request(vipIP)
			var total time.Duration
			for range b.N {
				_, d, err := r.prog.Benchmark(in, 1, nil)
				if err != nil {
					b.Fatal(err)
				}
				total += d
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "prog-ns/op")
		})
		b.Run(string(mode)+"/pass", func(b *testing.B) {
			ret, d, err := r.prog.Benchmark(ipv4, b.N, b.ResetTimer)
			if err != nil {
				b.Fatal(err)
			}
			if ret != xdpPass && ret != tcActOK {
				b.Fatalf("returned %d", ret)
			}
			b.ReportMetric(float64(d.Nanoseconds()), "prog-ns/op")
		})
	}
}
