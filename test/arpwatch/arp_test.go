package arpwatch

import (
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// These tests need neither root nor a network: they feed bytes and frames
// to the parsing and classifying code that the end-to-end suites rely on.

var (
	clientIP  = netip.MustParseAddr("198.18.0.100")
	clientMAC = mustMAC("02:48:4c:32:00:64")
	otherIP   = netip.MustParseAddr("198.18.0.101")
	otherMAC  = mustMAC("02:48:4c:32:00:65")
	vip       = netip.MustParseAddr("198.18.0.200")
	vip2      = netip.MustParseAddr("198.18.0.201")
	node1MAC  = mustMAC("02:48:4c:32:00:0b")
	node2MAC  = mustMAC("02:48:4c:32:00:0c")
	zeroMAC   = net.HardwareAddr(make([]byte, 6))
)

func mustMAC(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

// testClient is an ARPClient with an identity and no socket, enough for
// everything but sending.
func testClient() *ARPClient {
	return &ARPClient{Capture: &Capture[ARPFrame]{mac: clientMAC}, ip: clientIP}
}

// rawARP builds an Ethernet + ARP frame byte by byte, independently of
// Marshal, so that ParseARP and Marshal are each checked against the wire
// format rather than against each other.
func rawARP(ethDst, ethSrc net.HardwareAddr, op byte, sha net.HardwareAddr, spa netip.Addr, tha net.HardwareAddr, tpa netip.Addr) []byte {
	b := append(slices.Clone(ethDst), ethSrc...)
	b = append(b, 0x08, 0x06)             // EtherType ARP
	b = append(b, 0, 1, 0x08, 0x00, 6, 4) // Ethernet, IPv4, address lengths
	b = append(b, 0, op)
	b = append(b, sha...)
	b = append(b, spa.AsSlice()...)
	b = append(b, tha...)
	b = append(b, tpa.AsSlice()...)
	return b
}

// reply is a well-formed ARP reply from mac for ip to the test client.
func reply(seq int, mac net.HardwareAddr, ip netip.Addr) ARPFrame {
	return ARPFrame{Seq: seq, EthSrc: mac, EthDst: clientMAC, Op: OpReply, SHA: mac, SPA: ip, THA: clientMAC, TPA: clientIP}
}

// gratuitous is an unsolicited broadcast announcement of ip by mac.
func gratuitous(seq int, mac net.HardwareAddr, ip netip.Addr, op uint16) ARPFrame {
	return ARPFrame{Seq: seq, EthSrc: mac, EthDst: BroadcastMAC, Op: op, SHA: mac, SPA: ip, THA: zeroMAC, TPA: ip}
}

func TestParseARP(t *testing.T) {
	request := rawARP(BroadcastMAC, clientMAC, OpRequest, clientMAC, clientIP, zeroMAC, vip)
	replyB := rawARP(clientMAC, node1MAC, OpReply, node1MAC, vip, clientMAC, clientIP)
	mutate := func(b []byte, i int, v byte) []byte {
		b = slices.Clone(b)
		b[i] = v
		return b
	}
	tests := []struct {
		name string
		b    []byte
		want ARPFrame
		ok   bool
	}{
		{
			name: "request",
			b:    request,
			want: ARPFrame{EthDst: BroadcastMAC, EthSrc: clientMAC, Op: OpRequest, SHA: clientMAC, SPA: clientIP, THA: zeroMAC, TPA: vip},
			ok:   true,
		},
		{
			name: "reply",
			b:    replyB,
			want: ARPFrame{EthDst: clientMAC, EthSrc: node1MAC, Op: OpReply, SHA: node1MAC, SPA: vip, THA: clientMAC, TPA: clientIP},
			ok:   true,
		},
		{
			name: "padded to the minimum Ethernet frame",
			b:    append(slices.Clone(replyB), make([]byte, 18)...),
			want: ARPFrame{EthDst: clientMAC, EthSrc: node1MAC, Op: OpReply, SHA: node1MAC, SPA: vip, THA: clientMAC, TPA: clientIP},
			ok:   true,
		},
		{
			name: "unknown opcode is kept, String names it",
			b:    mutate(replyB, 21, 9),
			want: ARPFrame{EthDst: clientMAC, EthSrc: node1MAC, Op: 9, SHA: node1MAC, SPA: vip, THA: clientMAC, TPA: clientIP},
			ok:   true,
		},
		{name: "empty", b: nil},
		{name: "one byte short", b: replyB[:41]},
		{name: "IPv4 EtherType", b: mutate(replyB, 13, 0x00)},
		{name: "IPv6 EtherType", b: mutate(mutate(replyB, 12, 0x86), 13, 0xdd)},
		{name: "hardware type not Ethernet", b: mutate(replyB, 15, 6)},
		{name: "protocol type not IPv4", b: mutate(replyB, 16, 0x86)},
		{name: "hardware address length not 6", b: mutate(replyB, 18, 8)},
		{name: "protocol address length not 4", b: mutate(replyB, 19, 16)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseARP(tt.b)
			if ok != tt.ok {
				t.Fatalf("ParseARP ok = %v, want %v", ok, tt.ok)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseARP:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestParseARPCopies(t *testing.T) {
	// The capture reuses its read buffer: a parsed frame must not alias it.
	b := rawARP(clientMAC, node1MAC, OpReply, node1MAC, vip, clientMAC, clientIP)
	f, ok := ParseARP(b)
	if !ok {
		t.Fatal("ParseARP failed")
	}
	clear(b)
	if f.SHA.String() != node1MAC.String() || f.EthDst.String() != clientMAC.String() {
		t.Errorf("frame changed with the buffer: %s", f)
	}
}

func TestMarshal(t *testing.T) {
	tests := []struct {
		name string
		f    ARPFrame
		want []byte
	}{
		{
			name: "request, nil target MAC written as zeros",
			f:    ARPFrame{EthDst: BroadcastMAC, EthSrc: clientMAC, Op: OpRequest, SHA: clientMAC, SPA: clientIP, TPA: vip},
			want: rawARP(BroadcastMAC, clientMAC, OpRequest, clientMAC, clientIP, zeroMAC, vip),
		},
		{
			name: "gratuitous request",
			f:    ARPFrame{EthDst: BroadcastMAC, EthSrc: otherMAC, Op: OpRequest, SHA: otherMAC, SPA: vip, TPA: vip},
			want: rawARP(BroadcastMAC, otherMAC, OpRequest, otherMAC, vip, zeroMAC, vip),
		},
		{
			name: "reply",
			f:    reply(0, node1MAC, vip),
			want: rawARP(clientMAC, node1MAC, OpReply, node1MAC, vip, clientMAC, clientIP),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.f.Marshal()
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Marshal:\n got % x\nwant % x", got, tt.want)
			}
			back, ok := ParseARP(got)
			if !ok {
				t.Fatal("ParseARP of Marshal failed")
			}
			want := tt.f
			if want.THA == nil {
				want.THA = zeroMAC
			}
			if !reflect.DeepEqual(back, want) {
				t.Errorf("round trip:\n got %s\nwant %s", back, want)
			}
		})
	}
}

func TestGratuitousAndAbout(t *testing.T) {
	tests := []struct {
		name              string
		f                 ARPFrame
		gratuitous, about bool
	}{
		{"reply to the client", reply(0, node1MAC, vip), false, true},
		{"gratuitous reply", gratuitous(0, node1MAC, vip, OpReply), true, true},
		{"gratuitous request", gratuitous(0, node1MAC, vip, OpRequest), true, true},
		{"reply for another address", reply(0, node1MAC, vip2), false, false},
		{"request asking for the VIP", ARPFrame{Op: OpRequest, SHA: clientMAC, SPA: clientIP, TPA: vip}, false, false},
		{"the VIP's owner asking for someone", ARPFrame{Op: OpRequest, SHA: node1MAC, SPA: vip, TPA: clientIP}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.Gratuitous(vip); got != tt.gratuitous {
				t.Errorf("Gratuitous(%s) = %v, want %v", vip, got, tt.gratuitous)
			}
			if got := tt.f.About(vip); got != tt.about {
				t.Errorf("About(%s) = %v, want %v", vip, got, tt.about)
			}
		})
	}
}

func TestIsReply(t *testing.T) {
	toOther := reply(0, node1MAC, vip)
	toOther.TPA, toOther.THA, toOther.EthDst = otherIP, otherMAC, otherMAC
	otherTHA := reply(0, node1MAC, vip)
	otherTHA.THA = otherMAC
	tests := []struct {
		name string
		f    ARPFrame
		want bool
	}{
		{"reply to the client", reply(0, node1MAC, vip), true},
		{"malformed Ethernet source still a reply", func() ARPFrame { f := reply(0, node1MAC, vip); f.EthSrc = node2MAC; return f }(), true},
		{"reply for another VIP", reply(0, node1MAC, vip2), false},
		{"reply to another host", toOther, false},
		{"client's IP but another MAC", otherTHA, false},
		{"gratuitous reply", gratuitous(0, node1MAC, vip, OpReply), false},
		{"request", ARPFrame{Op: OpRequest, SHA: node1MAC, SPA: vip, THA: clientMAC, TPA: clientIP}, false},
	}
	c := testClient()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.IsReply(tt.f, vip); got != tt.want {
				t.Errorf("IsReply(%s, %s) = %v, want %v", tt.f, vip, got, tt.want)
			}
		})
	}
}

func TestReplies(t *testing.T) {
	badEthSrc := reply(3, node2MAC, vip)
	badEthSrc.EthSrc = node1MAC
	badEthDst := reply(4, node2MAC, vip)
	badEthDst.EthDst = BroadcastMAC
	toOther := reply(5, node2MAC, vip)
	toOther.TPA, toOther.THA = otherIP, otherMAC
	tests := []struct {
		name     string
		frames   []ARPFrame
		wantSeqs []int
		wantMACs []string
		wantErr  string // substring; "" for none
	}{
		{name: "nothing"},
		{
			name:     "one reply",
			frames:   []ARPFrame{reply(0, node1MAC, vip)},
			wantSeqs: []int{0},
			wantMACs: []string{node1MAC.String()},
		},
		{
			name: "gratuitous, other VIPs, other hosts and requests are not replies",
			frames: []ARPFrame{
				gratuitous(0, node1MAC, vip, OpReply),
				gratuitous(1, node1MAC, vip, OpRequest),
				reply(2, node1MAC, vip2),
				toOther,
				{Seq: 6, Op: OpRequest, SHA: node1MAC, SPA: vip, THA: clientMAC, TPA: clientIP},
			},
		},
		{
			name:     "two nodes, MACs distinct and sorted",
			frames:   []ARPFrame{reply(0, node2MAC, vip), reply(1, node1MAC, vip), reply(2, node2MAC, vip)},
			wantSeqs: []int{0, 1, 2},
			wantMACs: []string{node1MAC.String(), node2MAC.String()},
		},
		{
			name:     "malformed replies are counted and reported",
			frames:   []ARPFrame{reply(0, node1MAC, vip), badEthSrc, badEthDst},
			wantSeqs: []int{0, 3, 4},
			wantMACs: []string{node1MAC.String(), node2MAC.String()},
			wantErr:  "malformed ARP reply: #3",
		},
	}
	c := testClient()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.replies(vip, tt.frames)
			if res.IP != vip {
				t.Errorf("IP = %s, want %s", res.IP, vip)
			}
			var seqs []int
			for _, f := range res.Replies {
				seqs = append(seqs, f.Seq)
			}
			if !slices.Equal(seqs, tt.wantSeqs) {
				t.Errorf("replies %v, want %v:\n%s", seqs, tt.wantSeqs, res)
			}
			if got := res.MACs(); !slices.Equal(got, tt.wantMACs) {
				t.Errorf("MACs() = %v, want %v", got, tt.wantMACs)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestDoubleAnswers(t *testing.T) {
	// A gratuitous announcement and a reply to another host, from a second
	// MAC inside a window: neither makes it a double answer.
	toOther := reply(5, node2MAC, vip)
	toOther.TPA, toOther.THA = otherIP, otherMAC
	tests := []struct {
		name        string
		marks       []int
		frames      []ARPFrame
		wantDoubles []string
	}{
		{name: "no requests"},
		{name: "requests, no replies", marks: []int{0, 0, 0}},
		{
			name:   "each request answered once",
			marks:  []int{0, 1, 2},
			frames: []ARPFrame{reply(0, node1MAC, vip), reply(1, node1MAC, vip), reply(2, node1MAC, vip)},
		},
		{
			name:   "same MAC twice in a window is not a double",
			marks:  []int{0, 2},
			frames: []ARPFrame{reply(0, node1MAC, vip), reply(1, node1MAC, vip), reply(2, node1MAC, vip)},
		},
		{
			name:        "two MACs in one window",
			marks:       []int{0, 1, 3},
			frames:      []ARPFrame{reply(0, node1MAC, vip), reply(1, node1MAC, vip), reply(2, node2MAC, vip), reply(3, node2MAC, vip)},
			wantDoubles: []string{"double answer: request 2 answered by [" + node1MAC.String() + " " + node2MAC.String() + "]"},
		},
		{
			name:        "last window runs to the end of the capture",
			marks:       []int{0, 1},
			frames:      []ARPFrame{reply(0, node1MAC, vip), reply(1, node2MAC, vip), reply(7, node1MAC, vip)},
			wantDoubles: []string{"double answer: request 2 answered by [" + node2MAC.String() + " " + node1MAC.String() + "]"},
		},
		{
			name:  "a reply at a mark belongs to the request of that mark",
			marks: []int{0, 1},
			// Request 1 answered by node1 at 0, request 2 by node2 at 1:
			// a handover, not a double answer.
			frames: []ARPFrame{reply(0, node1MAC, vip), reply(1, node2MAC, vip)},
		},
		{
			name:  "several requests at the same position share the window of the last",
			marks: []int{0, 2, 2},
			frames: []ARPFrame{
				reply(0, node1MAC, vip), reply(1, node1MAC, vip),
				reply(2, node1MAC, vip), reply(3, node2MAC, vip),
			},
			wantDoubles: []string{"double answer: request 3 answered by [" + node1MAC.String() + " " + node2MAC.String() + "]"},
		},
		{
			name:   "replies captured before the first request are ignored",
			marks:  []int{2, 3},
			frames: []ARPFrame{reply(0, node2MAC, vip), reply(1, node2MAC, vip), reply(2, node1MAC, vip), reply(3, node1MAC, vip)},
		},
		{
			name:  "gratuitous, other VIPs and replies to other hosts do not count",
			marks: []int{0, 10},
			frames: []ARPFrame{
				reply(0, node1MAC, vip),
				gratuitous(1, node2MAC, vip, OpReply),
				gratuitous(2, node2MAC, vip, OpRequest),
				reply(3, node2MAC, vip2),
				toOther,
			},
		},
		{
			name:  "several windows with doubles, numbered from 1",
			marks: []int{0, 2, 4},
			frames: []ARPFrame{
				reply(0, node1MAC, vip), reply(1, node2MAC, vip),
				reply(2, node1MAC, vip),
				reply(4, node2MAC, vip), reply(5, node1MAC, vip),
			},
			wantDoubles: []string{
				"double answer: request 1 answered by [" + node1MAC.String() + " " + node2MAC.String() + "]",
				"double answer: request 3 answered by [" + node2MAC.String() + " " + node1MAC.String() + "]",
			},
		},
	}
	c := testClient()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			windows, list := c.DoubleAnswerList(tt.frames, vip, tt.marks)
			var doubles []string
			for _, d := range list {
				doubles = append(doubles, fmt.Sprintf("double answer: request %d answered by %v", d.Request, d.MACs))
			}
			if windows != len(tt.marks) {
				t.Errorf("windows = %d, want %d (one per request)", windows, len(tt.marks))
			}
			if !slices.Equal(doubles, tt.wantDoubles) {
				t.Errorf("doubles:\n got %q\nwant %q", doubles, tt.wantDoubles)
			}
		})
	}
}

func TestProbeResultString(t *testing.T) {
	if got, want := (ProbeResult{IP: vip}).String(), "who-has 198.18.0.200: no reply"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	r := ProbeResult{IP: vip, Replies: []ARPFrame{reply(4, node1MAC, vip), reply(5, node2MAC, vip)}}
	s := r.String()
	for _, want := range []string{"who-has 198.18.0.200: 2 replies from [" + node1MAC.String() + " " + node2MAC.String() + "]", "#4 ", "#5 ", "ARP reply: sender 198.18.0.200"} {
		if !strings.Contains(s, want) {
			t.Errorf("String() lacks %q:\n%s", want, s)
		}
	}
}

func TestCaptureSince(t *testing.T) {
	c := &Capture[int]{frames: []int{10, 11, 12}}
	tests := []struct {
		seq  int
		want []int
	}{
		{0, []int{10, 11, 12}},
		{2, []int{12}},
		{3, nil},
		{7, nil}, // a mark of a longer capture: nothing, no panic
	}
	for _, tt := range tests {
		got, err := c.Since(tt.seq)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Since(%d) = %v, %v; want %v", tt.seq, got, err, tt.want)
		}
	}
	if got := c.Mark(); got != 3 {
		t.Errorf("Mark() = %d, want 3", got)
	}
	got, _ := c.Since(0)
	got[0] = 99
	if c.frames[0] != 10 {
		t.Error("Since returned the capture's own slice, not a copy")
	}
}
