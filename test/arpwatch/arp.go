package arpwatch

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

	"golang.org/x/sys/unix"
)

// ARP opcodes (RFC 826).
const (
	OpRequest = 1
	OpReply   = 2
)

// ProbeWindow is how long a probe collects the replies to its request, and
// how long to wait after the last request of a prober before reading the
// capture. The responder answers within microseconds; the window only has
// to cover scheduling delays on a loaded machine.
const ProbeWindow = 300 * time.Millisecond

// BroadcastMAC is the Ethernet broadcast address, the destination of ARP
// requests and gratuitous announcements.
var BroadcastMAC = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// Frame sizes: an Ethernet header, an ARP packet for IPv4 over Ethernet,
// and the minimum Ethernet frame (without FCS) a NIC would pad to.
const (
	ethLen      = 14
	arpLen      = 28
	minFrameLen = 60
)

// ARPFrame is one ARP packet (IPv4 over Ethernet) with its Ethernet
// addresses, which a well-formed reply keeps consistent with the ARP ones.
type ARPFrame struct {
	Seq    int       // position in the capture
	At     time.Time // when the kernel received it
	EthSrc net.HardwareAddr
	EthDst net.HardwareAddr
	Op     uint16           // OpRequest, OpReply
	SHA    net.HardwareAddr // sender hardware address
	SPA    netip.Addr       // sender protocol (IPv4) address
	THA    net.HardwareAddr // target hardware address
	TPA    netip.Addr       // target protocol (IPv4) address
}

func (f ARPFrame) String() string {
	op := fmt.Sprintf("op %d", f.Op)
	switch f.Op {
	case OpRequest:
		op = "request"
	case OpReply:
		op = "reply"
	}
	return fmt.Sprintf("#%d %s eth %s > %s, ARP %s: sender %s %s, target %s %s",
		f.Seq, f.At.Format("15:04:05.000"), f.EthSrc, f.EthDst, op, f.SPA, f.SHA, f.TPA, f.THA)
}

// Gratuitous reports whether the frame announces ip unasked (sender and
// target IP both ip), as a reply or a request.
func (f ARPFrame) Gratuitous(ip netip.Addr) bool {
	return f.SPA == ip && f.TPA == ip
}

// About reports whether the frame is a node speaking for ip: an ARP reply
// (to anyone) or a gratuitous announcement with ip as sender address.
// Requests from ip's owner asking for other addresses are not about ip.
func (f ARPFrame) About(ip netip.Addr) bool {
	return f.SPA == ip && (f.Op == OpReply || f.Gratuitous(ip))
}

// ParseARP parses an Ethernet frame carrying ARP for IPv4 over Ethernet;
// anything else (another EtherType, hardware or protocol type, a short
// frame) is not an ARPFrame. Seq and At are left zero: they belong to the
// capture.
func ParseARP(b []byte) (ARPFrame, bool) {
	if len(b) < ethLen+arpLen || binary.BigEndian.Uint16(b[12:14]) != unix.ETH_P_ARP {
		return ARPFrame{}, false
	}
	a := b[ethLen:]
	if binary.BigEndian.Uint16(a[0:2]) != 1 || binary.BigEndian.Uint16(a[2:4]) != unix.ETH_P_IP || a[4] != 6 || a[5] != 4 {
		return ARPFrame{}, false
	}
	return ARPFrame{
		EthDst: net.HardwareAddr(slices.Clone(b[0:6])),
		EthSrc: net.HardwareAddr(slices.Clone(b[6:12])),
		Op:     binary.BigEndian.Uint16(a[6:8]),
		SHA:    net.HardwareAddr(slices.Clone(a[8:14])),
		SPA:    netip.AddrFrom4([4]byte(a[14:18])),
		THA:    net.HardwareAddr(slices.Clone(a[18:24])),
		TPA:    netip.AddrFrom4([4]byte(a[24:28])),
	}, true
}

// Marshal encodes the frame as Ethernet + ARP for IPv4 over Ethernet, 42
// bytes, unpadded; ParseARP reads it back. A nil hardware address is
// written as zeros (the target of a request). SPA and TPA must be IPv4.
// Tests that play a misbehaving host use it to send frames of their own.
func (f ARPFrame) Marshal() []byte {
	b := make([]byte, ethLen+arpLen)
	copy(b[0:6], f.EthDst)
	copy(b[6:12], f.EthSrc)
	binary.BigEndian.PutUint16(b[12:14], unix.ETH_P_ARP)
	a := b[ethLen:]
	binary.BigEndian.PutUint16(a[0:2], 1) // Ethernet
	binary.BigEndian.PutUint16(a[2:4], unix.ETH_P_IP)
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:8], f.Op)
	copy(a[8:14], f.SHA)
	spa := f.SPA.As4()
	copy(a[14:18], spa[:])
	copy(a[18:24], f.THA)
	tpa := f.TPA.As4()
	copy(a[24:28], tpa[:])
	return b
}

// ARPClient is a host on the LAN that resolves addresses: it sends ARP
// requests from a namespace's eth0 and captures every ARP frame arriving
// there, for the whole run (the embedded Capture: Mark, Since, Close).
type ARPClient struct {
	*Capture[ARPFrame]
	ip netip.Addr
}

// OpenARPClient opens the capture inside network namespace netns; ip is
// the address of its eth0, which the requests carry as sender address and
// the replies come back to.
func OpenARPClient(netns string, ip netip.Addr) (*ARPClient, error) {
	c, err := OpenCapture(netns, unix.ETH_P_ARP, func(b []byte, seq int, at time.Time) (ARPFrame, bool) {
		f, ok := ParseARP(b)
		f.Seq, f.At = seq, at
		return f, ok
	})
	if err != nil {
		return nil, err
	}
	return &ARPClient{Capture: c, ip: ip}, nil
}

// Request broadcasts "who has ip, tell <client>" as a host would, padded to
// the minimum Ethernet frame as a NIC sends it. It does not wait for the
// replies: the capture records them.
func (c *ARPClient) Request(ip netip.Addr) error {
	f := ARPFrame{
		EthDst: BroadcastMAC,
		EthSrc: c.mac,
		Op:     OpRequest,
		SHA:    c.mac,
		SPA:    c.ip,
		// Target hardware address: zero, as in any request.
		TPA: ip,
	}
	b := append(f.Marshal(), make([]byte, minFrameLen-ethLen-arpLen)...)
	return c.Send(b, BroadcastMAC)
}

// ProbeResult is what answered one request.
type ProbeResult struct {
	IP      netip.Addr // the address asked for
	Replies []ARPFrame // the replies to the client, in capture order
}

// MACs are the distinct sender MACs of the replies, sorted.
func (r ProbeResult) MACs() []string {
	var out []string
	for _, f := range r.Replies {
		if m := f.SHA.String(); !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

func (r ProbeResult) String() string {
	if len(r.Replies) == 0 {
		return fmt.Sprintf("who-has %s: no reply", r.IP)
	}
	var s []string
	for _, f := range r.Replies {
		s = append(s, f.String())
	}
	return fmt.Sprintf("who-has %s: %d replies from %v:\n    %s", r.IP, len(r.Replies), r.MACs(), strings.Join(s, "\n    "))
}

// Probe asks once who has ip and collects the replies addressed to the
// client within ProbeWindow. A reply is counted only if it is well formed:
// Ethernet source equal to the ARP sender MAC, Ethernet and ARP target equal
// to the client; a malformed one is an error (returned with the result,
// which lists it).
func (c *ARPClient) Probe(ip netip.Addr) (ProbeResult, error) {
	start := c.Mark()
	if err := c.Request(ip); err != nil {
		return ProbeResult{}, fmt.Errorf("sending ARP request: %w", err)
	}
	time.Sleep(ProbeWindow)
	frames, err := c.Since(start)
	if err != nil {
		return ProbeResult{}, fmt.Errorf("capture stopped: %w", err)
	}
	return c.replies(ip, frames)
}

// replies picks out of frames the replies for ip to the client, as Probe
// counts them, and reports the malformed ones.
func (c *ARPClient) replies(ip netip.Addr, frames []ARPFrame) (ProbeResult, error) {
	res := ProbeResult{IP: ip}
	var bad []error
	for _, f := range frames {
		if f.Op != OpReply || f.SPA != ip || f.Gratuitous(ip) {
			continue
		}
		if f.TPA != c.ip || !slices.Equal(f.THA, c.mac) {
			continue // for someone else (no one else asks in these tests)
		}
		res.Replies = append(res.Replies, f)
		if !slices.Equal(f.EthSrc, f.SHA) || !slices.Equal(f.EthDst, c.mac) {
			bad = append(bad, fmt.Errorf("malformed ARP reply: %s", f))
		}
	}
	return res, errors.Join(bad...)
}

// StartProber asks who has ip every interval, without waiting for answers,
// until stop is called; the capture records the replies. Unlike Probe it
// finds answers that last less than a probe window. stop returns the error
// that made the prober give up sending, if any.
func (c *ARPClient) StartProber(ip netip.Addr, interval time.Duration) (stop func() error) {
	quit := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			if err := c.Request(ip); err != nil {
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

// IsReply reports whether f is an ARP reply for vip to the client's own
// requests: not a gratuitous announcement, not a reply to another host.
func (c *ARPClient) IsReply(f ARPFrame, vip netip.Addr) bool {
	return f.Op == OpReply && f.SPA == vip && !f.Gratuitous(vip) &&
		f.TPA == c.ip && slices.Equal(f.THA, c.mac)
}

// MarkedProber asks who has a VIP every interval, like StartProber, and
// notes the capture position at each request: the capture does not see the
// client's own frames, so these marks delimit the request windows that
// DoubleAnswers needs.
type MarkedProber struct {
	c     *ARPClient
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once
	marks []int
	err   error
}

// StartMarkedProber starts asking who has vip every interval, until Stop.
func (c *ARPClient) StartMarkedProber(vip netip.Addr, interval time.Duration) *MarkedProber {
	p := &MarkedProber{c: c, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			mark := c.Mark()
			if err := c.Request(vip); err != nil {
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

// Stop stops asking and returns the capture position of each request sent,
// in order, and the error that made the prober give up sending, if any.
// The replies to the last requests may still be on their way: wait
// ProbeWindow before reading the capture.
func (p *MarkedProber) Stop() ([]int, error) {
	p.once.Do(func() { close(p.quit) })
	<-p.done
	return p.marks, p.err
}

// Finish stops the prober, waits ProbeWindow for the replies to its last
// requests, and returns the capture position of each request sent (as
// Stop) and the frames the client captured since start: what
// DoubleAnswers takes.
func (p *MarkedProber) Finish(start int) (marks []int, frames []ARPFrame, err error) {
	if marks, err = p.Stop(); err != nil {
		return nil, nil, fmt.Errorf("probing: %w", err)
	}
	time.Sleep(ProbeWindow)
	if frames, err = p.c.Since(start); err != nil {
		return nil, nil, fmt.Errorf("capture: %w", err)
	}
	return marks, frames, nil
}

// Double is one request of a trial answered by more than one MAC.
type Double struct {
	Request int       // 1-based, in the trial's marks
	At      time.Time // the first reply to it
	MACs    []string  // in the order their replies arrived
}

func (d Double) String() string {
	return fmt.Sprintf("double answer: request %d (replies from %s) answered by %v", d.Request, d.At.Format("15:04:05.000"), d.MACs)
}

// DoubleAnswerList splits the capture into request windows, each from the
// capture position of one request for vip to that of the next (the last
// one to the end), puts every reply to the client in its window and
// returns the windows with replies from more than one MAC. windows is the
// number of requests. marks are the positions a MarkedProber returned;
// frames come from Since of a position at or before the first mark.
// Windows go by capture order, so a reply can not fall into the window of
// a request sent after it; replies captured before the first request are
// ignored (they answer an earlier one).
func (c *ARPClient) DoubleAnswerList(frames []ARPFrame, vip netip.Addr, marks []int) (windows int, doubles []Double) {
	macs := make([][]string, len(marks))   // distinct MACs replying, by window
	first := make([]time.Time, len(marks)) // the window's first reply
	for _, f := range frames {
		if !c.IsReply(f, vip) {
			continue
		}
		// The last request captured at or before f.
		w := sort.Search(len(marks), func(i int) bool { return marks[i] > f.Seq }) - 1
		if w < 0 {
			continue // answers a request of before the trial
		}
		if m := f.SHA.String(); !slices.Contains(macs[w], m) {
			macs[w] = append(macs[w], m)
		}
		if first[w].IsZero() {
			first[w] = f.At
		}
	}
	for w, ms := range macs {
		if len(ms) > 1 {
			doubles = append(doubles, Double{Request: w + 1, At: first[w], MACs: ms})
		}
	}
	return len(marks), doubles
}

// DoubleAnswers is DoubleAnswerList with each double as a line for a
// test's log.
func (c *ARPClient) DoubleAnswers(frames []ARPFrame, vip netip.Addr, marks []int) (windows int, doubles []string) {
	windows, ds := c.DoubleAnswerList(frames, vip, marks)
	for _, d := range ds {
		doubles = append(doubles, d.String())
	}
	return windows, doubles
}
