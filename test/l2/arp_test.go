package l2

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"
)

// ARP opcodes (RFC 826).
const (
	arpRequest = 1
	arpReply   = 2
)

// probeWindow is how long a probe collects the replies to its request. The
// responder answers within microseconds; the window only has to cover
// scheduling delays on a loaded machine.
const probeWindow = 300 * time.Millisecond

// arpFrame is one ARP packet (IPv4 over Ethernet) seen on the client's eth0.
type arpFrame struct {
	seq    int // position in the capture
	at     time.Time
	ethSrc net.HardwareAddr
	ethDst net.HardwareAddr
	op     uint16
	sha    net.HardwareAddr
	spa    netip.Addr
	tha    net.HardwareAddr
	tpa    netip.Addr
}

func (f arpFrame) String() string {
	op := fmt.Sprintf("op %d", f.op)
	switch f.op {
	case arpRequest:
		op = "request"
	case arpReply:
		op = "reply"
	}
	return fmt.Sprintf("#%d %s eth %s > %s, ARP %s: sender %s %s, target %s %s",
		f.seq, f.at.Format("15:04:05.000"), f.ethSrc, f.ethDst, op, f.spa, f.sha, f.tpa, f.tha)
}

// gratuitous reports whether the frame announces ip unasked (sender and
// target IP both ip), as a reply or a request.
func (f arpFrame) gratuitous(ip netip.Addr) bool {
	return f.spa == ip && f.tpa == ip
}

// about reports whether the frame is a node speaking for ip: an ARP reply
// (to anyone) or a gratuitous announcement with ip as sender address.
func (f arpFrame) about(ip netip.Addr) bool {
	return f.spa == ip && (f.op == arpReply || f.gratuitous(ip))
}

// parseARP parses an Ethernet frame carrying ARP for IPv4 over Ethernet.
func parseARP(b []byte) (arpFrame, bool) {
	const ethLen, arpLen = 14, 28
	if len(b) < ethLen+arpLen || binary.BigEndian.Uint16(b[12:14]) != unix.ETH_P_ARP {
		return arpFrame{}, false
	}
	a := b[ethLen:]
	if binary.BigEndian.Uint16(a[0:2]) != 1 || binary.BigEndian.Uint16(a[2:4]) != unix.ETH_P_IP || a[4] != 6 || a[5] != 4 {
		return arpFrame{}, false
	}
	return arpFrame{
		ethDst: net.HardwareAddr(slices.Clone(b[0:6])),
		ethSrc: net.HardwareAddr(slices.Clone(b[6:12])),
		op:     binary.BigEndian.Uint16(a[6:8]),
		sha:    net.HardwareAddr(slices.Clone(a[8:14])),
		spa:    netip.AddrFrom4([4]byte(a[14:18])),
		tha:    net.HardwareAddr(slices.Clone(a[18:24])),
		tpa:    netip.AddrFrom4([4]byte(a[24:28])),
	}, true
}

// arpClient sends ARP requests from the client namespace's eth0 and
// captures every ARP frame arriving there, for the whole run.
type arpClient struct {
	*capture[arpFrame]
	ip netip.Addr
}

// openARPClient opens the capture inside netns ns.
func openARPClient(ns string, ip netip.Addr) (*arpClient, error) {
	c, err := openCapture(ns, unix.ETH_P_ARP, func(b []byte, seq int, at time.Time) (arpFrame, bool) {
		f, ok := parseARP(b)
		f.seq, f.at = seq, at
		return f, ok
	})
	if err != nil {
		return nil, err
	}
	return &arpClient{capture: c, ip: ip}, nil
}

// request broadcasts "who has ip, tell <client>" as a host would.
func (c *arpClient) request(ip netip.Addr) error {
	b := make([]byte, 60) // minimum Ethernet frame, zero padded
	copy(b[0:6], broadcastMAC)
	copy(b[6:12], c.mac)
	binary.BigEndian.PutUint16(b[12:14], unix.ETH_P_ARP)
	a := b[14:]
	binary.BigEndian.PutUint16(a[0:2], 1) // Ethernet
	binary.BigEndian.PutUint16(a[2:4], unix.ETH_P_IP)
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:8], arpRequest)
	copy(a[8:14], c.mac)
	sip := c.ip.As4()
	copy(a[14:18], sip[:])
	// Target hardware address: zero, as in any request.
	tip := ip.As4()
	copy(a[24:28], tip[:])
	_, err := c.conn.WriteTo(b, &packet.Addr{HardwareAddr: broadcastMAC})
	return err
}

var broadcastMAC = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// probeResult is what answered one request.
type probeResult struct {
	ip      netip.Addr
	replies []arpFrame
}

// macs are the distinct sender MACs of the replies, sorted.
func (r probeResult) macs() []string {
	var out []string
	for _, f := range r.replies {
		if m := f.sha.String(); !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

func (r probeResult) String() string {
	if len(r.replies) == 0 {
		return fmt.Sprintf("who-has %s: no reply", r.ip)
	}
	var s []string
	for _, f := range r.replies {
		s = append(s, f.String())
	}
	return fmt.Sprintf("who-has %s: %d replies from %v:\n    %s", r.ip, len(r.replies), r.macs(), strings.Join(s, "\n    "))
}

// probe asks once who has ip and collects the replies addressed to the
// client within probeWindow. A reply is counted only if it is well formed:
// Ethernet source equal to the ARP sender MAC, Ethernet and ARP target equal
// to the client; a malformed one is an error.
func (c *arpClient) probe(ip netip.Addr) (probeResult, error) {
	start := c.mark()
	if err := c.request(ip); err != nil {
		return probeResult{}, fmt.Errorf("sending ARP request: %w", err)
	}
	time.Sleep(probeWindow)
	frames, err := c.since(start)
	if err != nil {
		return probeResult{}, fmt.Errorf("capture stopped: %w", err)
	}
	res := probeResult{ip: ip}
	var bad []error
	for _, f := range frames {
		if f.op != arpReply || f.spa != ip || f.gratuitous(ip) {
			continue
		}
		if f.tpa != c.ip || !slices.Equal(f.tha, c.mac) {
			continue // for someone else (no one else asks in these tests)
		}
		res.replies = append(res.replies, f)
		if !slices.Equal(f.ethSrc, f.sha) || !slices.Equal(f.ethDst, c.mac) {
			bad = append(bad, fmt.Errorf("malformed ARP reply: %s", f))
		}
	}
	return res, errors.Join(bad...)
}

// startProber asks who has ip every interval, without waiting for answers,
// until stop is called; the capture records the replies. It finds answers
// that last less than a probe window.
func (c *arpClient) startProber(ip netip.Addr, interval time.Duration) (stop func() error) {
	quit := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			if err := c.request(ip); err != nil {
				errc <- err
				return
			}
			select {
			case <-quit:
				errc <- nil
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() {
			close(quit)
			err = <-errc
		})
		return err
	}
}

// isReplyToClient reports whether f is an ARP reply for vip to the
// client's requests (not a gratuitous announcement).
func isReplyToClient(f arpFrame, vip netip.Addr) bool {
	return f.op == arpReply && f.spa == vip && !f.gratuitous(vip) &&
		f.tpa == client.ip && slices.Equal(f.tha, client.mac)
}

// markedProber asks who has vip every interval, like startProber, and
// notes the capture position at each request: the capture does not see the
// client's own frames, so these marks delimit the request windows.
type markedProber struct {
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once
	marks []int
	err   error
}

func startMarkedProber(vip netip.Addr, interval time.Duration) *markedProber {
	p := &markedProber{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			mark := client.mark()
			if err := client.request(vip); err != nil {
				p.err = err
				return
			}
			p.marks = append(p.marks, mark)
			select {
			case <-p.quit:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// stop stops asking and returns the capture position of each request.
func (p *markedProber) stop() ([]int, error) {
	p.once.Do(func() { close(p.quit) })
	<-p.done
	return p.marks, p.err
}

// doubleAnswers splits the capture into request windows, each from the
// capture position of one request for vip to that of the next (the last
// one to the end), puts every reply in its window and counts the windows
// with replies from more than one MAC, described in doubles. Windows go by
// capture order, so a reply can not fall into the window of a request sent
// before it.
func doubleAnswers(frames []arpFrame, vip netip.Addr, marks []int) (windows int, doubles []string) {
	macs := make([][]string, len(marks)) // distinct MACs replying, by window
	for _, f := range frames {
		if !isReplyToClient(f, vip) {
			continue
		}
		// The last request captured at or before f.
		w := sort.Search(len(marks), func(i int) bool { return marks[i] > f.seq }) - 1
		if w < 0 {
			continue // answers a request of before the trial
		}
		if m := f.sha.String(); !slices.Contains(macs[w], m) {
			macs[w] = append(macs[w], m)
		}
	}
	for w, ms := range macs {
		if len(ms) > 1 {
			doubles = append(doubles, fmt.Sprintf("double answer: request %d answered by %v", w+1, ms))
		}
	}
	return len(marks), doubles
}
