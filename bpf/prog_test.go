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
	tcNext  = 0xffffffff // TCX_NEXT (-1): what the tc program does not answer goes on
	tcRedir = 7          // TC_ACT_REDIRECT, returned by bpf_redirect
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
			m := newModeRun(t, mode)
			r := m.r
			sent := func() uint64 {
				t.Helper()
				key := key4(t, r, vipIP, testRunIfindex)
				var v l2responderL2ResponderEntry
				if err := r.v4.Lookup(&key, &v); err != nil {
					t.Fatal(err)
				}
				return v.ResponsesSent
			}

			if _, err := r.Upsert(vipIP, testRunIfindex, answerAs); err != nil {
				t.Fatal(err)
			}
			m.expectPass("no heartbeat yet", request(vipIP))
			if err := r.Heartbeat(time.Hour); err != nil {
				t.Fatal(err)
			}

			m.expectAnswer("request", request(vipIP), wantReply)
			if n := sent(); n != 1 {
				t.Fatalf("responses_sent = %d, want 1", n)
			}
			// Unicast requests (cache refresh) are answered too.
			if ret, _ := m.run(arpFrame(reqMAC, 1, 0x0800, 6, 4, 1, reqMAC, reqIP, make(net.HardwareAddr, 6), vipIP)); ret != m.answer {
				t.Fatalf("unicast request: returned %d", ret)
			}
			// ARP probes (sender IP 0.0.0.0) are answered, to the probing host.
			probe := arpFrame(bcast, 1, 0x0800, 6, 4, 1, reqMAC, netip.IPv4Unspecified(), make(net.HardwareAddr, 6), vipIP)
			if ret, out := m.run(probe); ret != m.answer || !bytes.Equal(out[38:42], []byte{0, 0, 0, 0}) || !bytes.Equal(out[0:6], reqMAC) {
				t.Fatalf("probe: returned %d with % x", ret, out)
			}
			if n := sent(); n != 3 {
				t.Fatalf("responses_sent = %d, want 3", n)
			}

			m.expectPass("unknown IP", request(netip.MustParseAddr("198.18.0.201")))
			m.expectPass("gratuitous", arpFrame(bcast, 1, 0x0800, 6, 4, 1, reqMAC, vipIP, make(net.HardwareAddr, 6), vipIP))
			m.expectPass("reply", arpFrame(bcast, 1, 0x0800, 6, 4, 2, reqMAC, reqIP, make(net.HardwareAddr, 6), vipIP))
			m.expectPass("htype", arpFrame(bcast, 6, 0x0800, 6, 4, 1, reqMAC, reqIP, make(net.HardwareAddr, 6), vipIP))
			m.expectPass("ptype", arpFrame(bcast, 1, 0x86dd, 6, 4, 1, reqMAC, reqIP, make(net.HardwareAddr, 6), vipIP))
			m.expectPass("hlen", arpFrame(bcast, 1, 0x0800, 8, 4, 1, reqMAC, reqIP, make(net.HardwareAddr, 6), vipIP))
			m.expectPass("plen", arpFrame(bcast, 1, 0x0800, 6, 16, 1, reqMAC, reqIP, make(net.HardwareAddr, 6), vipIP))
			m.expectPass("truncated", request(vipIP)[:41])
			m.expectPass("ipv4", ipv4)

			// Stale heartbeat.
			if err := r.Heartbeat(0); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
			m.expectPass("stale heartbeat", request(vipIP))
			if n := sent(); n != 3 {
				t.Fatalf("responses_sent = %d, want 3", n)
			}
		})
	}
}

// BenchmarkProgram measures the programs alone with BPF_PROG_TEST_RUN, in
// kernel time per run: "answer" rewrites an ARP request into the reply,
// "answer-ns" a Neighbor Solicitation into the advertisement, "pass" is
// what every other packet on the interface pays (an IPv4 frame), "pass-ipv6"
// an IPv6 frame that is no solicitation (a TCP segment).
func BenchmarkProgram(b *testing.B) {
	ipv4 := append(append(append([]byte{}, bcast...), reqMAC...), 0x08, 0x00)
	ipv4 = append(ipv4, make([]byte, 1486)...)
	for _, mode := range []Mode{ModeXDP, ModeTCX} {
		r := loadT(b, mode, "")
		for _, vip := range []netip.Addr{vipIP, vipIP6} {
			if _, err := r.Upsert(vip, testRunIfindex, answerAs); err != nil {
				b.Fatal(err)
			}
		}
		if err := r.Heartbeat(time.Hour); err != nil {
			b.Fatal(err)
		}
		group, groupMAC := solicitedNode(vipIP6)
		ns := ipv6Frame(groupMAC, reqMAC, reqIP6, group, 255, nsMessage(0, vipIP6, sllaOption(reqMAC)))
		for name, in := range map[string][]byte{"answer": request(vipIP), "answer-ns": ns} {
			b.Run(string(mode)+"/"+name, func(b *testing.B) {
				// The frame is rewritten in place, so every run needs a
				// fresh request: one test run per request.
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
		}
		tcp := ipv6Frame(answerAs, reqMAC, reqIP6, vipIP6, 64, make([]byte, 1440))
		tcp[20] = 6 // next header: TCP
		for name, in := range map[string][]byte{"pass": ipv4, "pass-ipv6": tcp} {
			b.Run(string(mode)+"/"+name, func(b *testing.B) {
				ret, d, err := r.prog.Benchmark(in, b.N, b.ResetTimer)
				if err != nil {
					b.Fatal(err)
				}
				if ret != xdpPass && ret != tcNext {
					b.Fatalf("returned %d", ret)
				}
				b.ReportMetric(float64(d.Nanoseconds()), "prog-ns/op")
			})
		}
	}
}

// IPv6 neighbour discovery: the solicitations a host sends, and the
// advertisement RFC 4861 wants back, built here independently of the C code.
var (
	reqIP6 = netip.MustParseAddr("fd00:18::2")
	vipIP6 = netip.MustParseAddr("fd00:18::c8")
)

// solicitedNode is the solicited-node multicast address of ip and its MAC.
func solicitedNode(ip netip.Addr) (netip.Addr, net.HardwareAddr) {
	a := ip.As16()
	g := netip.AddrFrom16([16]byte{0xff, 0x02, 10: 0, 11: 0x01, 12: 0xff, 13: a[13], 14: a[14], 15: a[15]})
	return g, net.HardwareAddr{0x33, 0x33, 0xff, a[13], a[14], a[15]}
}

// icmp6Checksum is the ICMPv6 checksum of msg (its checksum field zero)
// from src to dst (RFC 8200 8.1).
func icmp6Checksum(src, dst netip.Addr, msg []byte) uint16 {
	var pseudo []byte
	pseudo = append(pseudo, src.AsSlice()...)
	pseudo = append(pseudo, dst.AsSlice()...)
	pseudo = binary.BigEndian.AppendUint32(pseudo, uint32(len(msg)))
	pseudo = append(pseudo, 0, 0, 0, 58)
	var sum uint32
	for _, b := range [][]byte{pseudo, msg} {
		for i := 0; i < len(b); i += 2 {
			w := uint32(b[i]) << 8
			if i+1 < len(b) {
				w |= uint32(b[i+1])
			}
			sum += w
		}
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// ipv6Frame is Ethernet + IPv6 (no extension headers) + an ICMPv6 message
// whose checksum it fills in.
func ipv6Frame(ethDst, ethSrc net.HardwareAddr, src, dst netip.Addr, hopLimit uint8, msg []byte) []byte {
	msg = bytes.Clone(msg)
	binary.BigEndian.PutUint16(msg[2:4], icmp6Checksum(src, dst, msg))
	b := append(append([]byte{}, ethDst...), ethSrc...)
	b = binary.BigEndian.AppendUint16(b, 0x86dd)
	b = binary.BigEndian.AppendUint32(b, 6<<28)
	b = binary.BigEndian.AppendUint16(b, uint16(len(msg)))
	b = append(b, 58, hopLimit)
	b = append(b, src.AsSlice()...)
	b = append(b, dst.AsSlice()...)
	return append(b, msg...)
}

// nsMessage is an ICMPv6 Neighbor Solicitation for target, with options.
func nsMessage(code uint8, target netip.Addr, options ...[]byte) []byte {
	m := []byte{135, code, 0, 0, 0, 0, 0, 0}
	m = append(m, target.AsSlice()...)
	for _, o := range options {
		m = append(m, o...)
	}
	return m
}

func sllaOption(mac net.HardwareAddr) []byte { return append([]byte{1, 1}, mac...) }

var nonceOption = []byte{14, 1, 1, 2, 3, 4, 5, 6}

// wantNA is the advertisement for vipIP6 with answerAs, to dst at ethDst.
func wantNA(ethDst net.HardwareAddr, dst netip.Addr, solicited bool) []byte {
	flags := uint32(0x20000000) // override
	if solicited {
		flags |= 0x40000000
	}
	m := []byte{136, 0, 0, 0}
	m = binary.BigEndian.AppendUint32(m, flags)
	m = append(m, vipIP6.AsSlice()...)
	m = append(m, 2, 1)
	m = append(m, answerAs...)
	return ipv6Frame(ethDst, answerAs, vipIP6, dst, 255, m)
}

func TestProgramNDP(t *testing.T) {
	group, groupMAC := solicitedNode(vipIP6)
	allNodes := netip.MustParseAddr("ff02::1")
	allNodesMAC := net.HardwareAddr{0x33, 0x33, 0, 0, 0, 1}
	// The usual solicitation: to the solicited-node group, with the
	// sender's link-layer address (86 bytes, the advertisement's size).
	multicast := ipv6Frame(groupMAC, reqMAC, reqIP6, group, 255, nsMessage(0, vipIP6, sllaOption(reqMAC)))
	answered := wantNA(reqMAC, reqIP6, true)

	for _, mode := range []Mode{ModeXDP, ModeTCX} {
		t.Run(string(mode), func(t *testing.T) {
			m := newModeRun(t, mode)
			r := m.r
			sent := func() uint64 {
				t.Helper()
				mp, key, err := r.mapKey(vipIP6, testRunIfindex)
				if err != nil {
					t.Fatal(err)
				}
				var v l2responderL2ResponderEntry
				if err := mp.Lookup(key, &v); err != nil {
					t.Fatal(err)
				}
				return v.ResponsesSent
			}

			if _, err := r.Upsert(vipIP6, testRunIfindex, answerAs); err != nil {
				t.Fatal(err)
			}
			m.expectPass("no heartbeat yet", multicast)
			if err := r.Heartbeat(time.Hour); err != nil {
				t.Fatal(err)
			}

			m.expectAnswer("to the solicited-node group", multicast, answered)
			// Unicast (reachability confirmation), often without options:
			// the frame grows to the advertisement's size.
			m.expectAnswer("unicast, no options",
				ipv6Frame(answerAs, reqMAC, reqIP6, vipIP6, 255, nsMessage(0, vipIP6)), answered)
			// With a nonce (as Linux sends for DAD and sometimes otherwise):
			// the frame shrinks.
			m.expectAnswer("with a nonce",
				ipv6Frame(groupMAC, reqMAC, reqIP6, group, 255, nsMessage(0, vipIP6, sllaOption(reqMAC), nonceOption)), answered)
			// Duplicate address detection by a host that wants the VIP: to
			// all nodes, not solicited.
			m.expectAnswer("duplicate address detection",
				ipv6Frame(groupMAC, reqMAC, netip.IPv6Unspecified(), group, 255, nsMessage(0, vipIP6, nonceOption)),
				wantNA(allNodesMAC, allNodes, false))
			if n := sent(); n != 4 {
				t.Fatalf("responses_sent = %d, want 4", n)
			}

			other := netip.MustParseAddr("fd00:18::c9")
			otherGroup, otherMAC := solicitedNode(other)
			m.expectPass("unknown target", ipv6Frame(otherMAC, reqMAC, reqIP6, otherGroup, 255, nsMessage(0, other, sllaOption(reqMAC))))
			m.expectPass("through a router (hop limit 64)", ipv6Frame(groupMAC, reqMAC, reqIP6, group, 64, nsMessage(0, vipIP6, sllaOption(reqMAC))))
			m.expectPass("ICMPv6 code 1", ipv6Frame(groupMAC, reqMAC, reqIP6, group, 255, nsMessage(1, vipIP6, sllaOption(reqMAC))))
			m.expectPass("to another group", ipv6Frame(groupMAC, reqMAC, reqIP6, otherGroup, 255, nsMessage(0, vipIP6, sllaOption(reqMAC))))
			m.expectPass("to another unicast address", ipv6Frame(answerAs, reqMAC, reqIP6, reqIP6, 255, nsMessage(0, vipIP6)))
			m.expectPass("DAD to a unicast address", ipv6Frame(answerAs, reqMAC, netip.IPv6Unspecified(), vipIP6, 255, nsMessage(0, vipIP6)))
			na := wantNA(reqMAC, reqIP6, true)
			m.expectPass("an advertisement", na)
			echo := []byte{128, 0, 0, 0, 0, 1, 0, 1}
			m.expectPass("echo request", ipv6Frame(answerAs, reqMAC, reqIP6, vipIP6, 64, echo))
			mcastTarget := netip.MustParseAddr("ff02::1:ff00:c8")
			m.expectPass("multicast target", ipv6Frame(groupMAC, reqMAC, reqIP6, group, 255, nsMessage(0, mcastTarget)))
			m.expectPass("truncated", multicast[:70])
			hopByHop := bytes.Clone(multicast)
			hopByHop[20] = 0 // next header: hop-by-hop options
			m.expectPass("extension header", hopByHop)

			if err := r.Heartbeat(0); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
			m.expectPass("stale heartbeat", multicast)
			if n := sent(); n != 4 {
				t.Fatalf("responses_sent = %d, want 4", n)
			}
		})
	}
}

// TestProgramConflicts: another host speaking for an IP this node answers
// for is recorded in l2_responder_conflicts (and its packet passes on,
// unanswered); this node's own MAC is not a conflict.
func TestProgramConflicts(t *testing.T) {
	rogue := net.HardwareAddr{0x02, 0xcc, 0, 0, 0, 0x03}
	for _, mode := range []Mode{ModeXDP, ModeTCX} {
		t.Run(string(mode), func(t *testing.T) {
			r := loadT(t, mode, "")
			for _, vip := range []netip.Addr{vipIP, vipIP6} {
				if _, err := r.Upsert(vip, testRunIfindex, answerAs); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.Heartbeat(time.Hour); err != nil {
				t.Fatal(err)
			}
			run := func(in []byte) {
				t.Helper()
				if _, err := r.prog.Run(&ebpf.RunOptions{Data: in, DataOut: make([]byte, len(in)+256)}); err != nil {
					t.Fatal(err)
				}
			}
			conflicts := func() map[netip.Addr]Conflict {
				t.Helper()
				cs, err := r.Conflicts()
				if err != nil {
					t.Fatal(err)
				}
				out := map[netip.Addr]Conflict{}
				for _, c := range cs {
					out[c.IP] = c
				}
				return out
			}
			zero := make(net.HardwareAddr, 6)
			// Ours: no conflict.
			run(arpFrame(bcast, 1, 0x0800, 6, 4, 1, answerAs, vipIP, zero, vipIP))
			run(wantNA(reqMAC, reqIP6, true)) // sent by answerAs
			if cs := conflicts(); len(cs) != 0 {
				t.Fatalf("this node's own packets recorded as conflicts: %v", cs)
			}
			// A gratuitous ARP, a reply and a request of the rogue's, all with
			// the VIP as sender address.
			run(arpFrame(bcast, 1, 0x0800, 6, 4, 1, rogue, vipIP, zero, vipIP))
			run(arpFrame(reqMAC, 1, 0x0800, 6, 4, 2, rogue, vipIP, reqMAC, reqIP))
			run(arpFrame(bcast, 1, 0x0800, 6, 4, 1, rogue, vipIP, zero, reqIP))
			// An advertisement of the IPv6 VIP from the rogue.
			m := []byte{136, 0, 0, 0, 0x20, 0, 0, 0}
			m = append(m, vipIP6.AsSlice()...)
			m = append(m, 2, 1)
			m = append(m, rogue...)
			run(ipv6Frame(net.HardwareAddr{0x33, 0x33, 0, 0, 0, 1}, rogue, netip.MustParseAddr("fd00:18::99"), netip.MustParseAddr("ff02::1"), 255, m))
			// Someone else's address: nothing.
			run(arpFrame(bcast, 1, 0x0800, 6, 4, 1, rogue, reqIP, zero, reqIP))

			cs := conflicts()
			if c := cs[vipIP]; c.Seen != 3 || c.MAC.String() != rogue.String() || c.Ifindex != testRunIfindex || c.Ago < 0 || c.Ago > time.Minute {
				t.Errorf("IPv4 conflict: %+v, want 3 packets from %s", c, rogue)
			}
			if c := cs[vipIP6]; c.Seen != 1 || c.MAC.String() != rogue.String() {
				t.Errorf("IPv6 conflict: %+v, want 1 packet from %s", c, rogue)
			}
			if len(cs) != 2 {
				t.Errorf("conflicts: %v, want the two VIPs only", cs)
			}
			if err := r.ForgetConflict(vipIP, testRunIfindex); err != nil {
				t.Fatal(err)
			}
			if _, ok := conflicts()[vipIP]; ok {
				t.Error("ForgetConflict left the entry")
			}
		})
	}
}

// modeRun runs the responder program, loaded in one attach mode, on
// frames with BPF_PROG_TEST_RUN.
type modeRun struct {
	t *testing.T
	r *Responder
	// answer and pass are the mode's verdicts for a frame answered (sent
	// back out of the interface) and for one passed on to the stack.
	answer, pass uint32
}

func newModeRun(t *testing.T, mode Mode) *modeRun {
	m := &modeRun{t: t, r: loadT(t, mode, ""), answer: xdpTX, pass: xdpPass}
	if mode == ModeTCX {
		m.answer, m.pass = tcRedir, tcNext
	}
	return m
}

// run returns the program's verdict and the frame as it left the program.
func (m *modeRun) run(in []byte) (uint32, []byte) {
	m.t.Helper()
	opts := &ebpf.RunOptions{Data: in, DataOut: make([]byte, len(in)+256)}
	ret, err := m.r.prog.Run(opts)
	if err != nil {
		m.t.Fatal(err)
	}
	return ret, opts.DataOut
}

func (m *modeRun) expectAnswer(name string, in, want []byte) {
	m.t.Helper()
	ret, out := m.run(in)
	if ret != m.answer || !bytes.Equal(out, want) {
		m.t.Fatalf("%s: returned %d with\n% x\nwant %d with\n% x", name, ret, out, m.answer, want)
	}
}

func (m *modeRun) expectPass(name string, in []byte) {
	m.t.Helper()
	ret, out := m.run(in)
	if ret != m.pass || !bytes.Equal(out, in) {
		m.t.Fatalf("%s: returned %d with % x, want %d and the frame untouched", name, ret, out, m.pass)
	}
}
