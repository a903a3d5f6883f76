package cpvip

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/heraldlb/herald/test/arpwatch"
	"github.com/heraldlb/herald/test/netlab"
)

// WatchEvery is the probe interval the failover proofs use.
const WatchEvery = 10 * time.Millisecond

// VIPWatch asks, from the client's namespace, who has the VIP every
// interval, and records each reply's MAC and arrival time, until Stop or
// its context ends.
type VIPWatch struct {
	vip   netip.Addr
	every time.Duration
	// capture positions and the classification of its frames, by family
	start   int
	mark    func() int
	send    func() error
	replies func() ([]seqReply, error)
	double  func(sent []sentProbe) []arpwatch.Double // nil: doubles(probes)
	close   func()

	mu   sync.Mutex
	sent []sentProbe
	err  error

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	rec    *VIPRecord
}

// WatchVIP starts probing for vip (IPv4: ARP requests; IPv6: Neighbor
// Solicitations to its solicited-node group) every interval, from the
// client's eth0, capturing every answer there (test/arpwatch).
func (cp *ControlPlane) WatchVIP(ctx context.Context, vip netip.Addr, every time.Duration) (*VIPWatch, error) {
	return WatchVIPFrom(ctx, cp.Client, vip, every)
}

// WatchVIPFrom watches vip from client, a host of any harness's LAN (the
// real cluster's too).
func WatchVIPFrom(ctx context.Context, client *netlab.Host, vip netip.Addr, every time.Duration) (*VIPWatch, error) {
	w := &VIPWatch{vip: vip, every: every, done: make(chan struct{})}
	if vip.Is4() {
		c, err := arpwatch.OpenARPClient(client.Netns, client.IP)
		if err != nil {
			return nil, fmt.Errorf("ARP client: %w", err)
		}
		w.watchARP(c)
	} else {
		c, err := arpwatch.OpenNDPClient(client.Netns, client.IP6)
		if err != nil {
			return nil, fmt.Errorf("NDP client: %w", err)
		}
		w.watchNDP(c, client.IP6)
	}
	w.start = w.mark()
	ctx, w.cancel = context.WithCancel(ctx)
	go w.probe(ctx)
	return w, nil
}

func (w *VIPWatch) watchARP(c *arpwatch.ARPClient) {
	w.mark, w.close = c.Mark, c.Close
	w.send = func() error { return c.Request(w.vip) }
	w.replies = func() ([]seqReply, error) {
		frames, err := c.Since(w.start)
		var out []seqReply
		for _, f := range frames {
			if c.IsReply(f, w.vip) {
				out = append(out, seqReply{seq: f.Seq, Reply: Reply{At: f.At, MAC: f.SHA.String()}})
			}
		}
		return out, err
	}
	w.double = func(sent []sentProbe) []arpwatch.Double {
		frames, _ := c.Since(w.start)
		marks := make([]int, len(sent))
		for i, s := range sent {
			marks[i] = s.mark
		}
		_, ds := c.DoubleAnswerList(frames, w.vip, marks)
		return ds
	}
}

func (w *VIPWatch) watchNDP(c *arpwatch.NDPClient, self netip.Addr) {
	w.mark, w.close = c.Mark, c.Close
	w.send = func() error { return c.Solicit(w.vip) }
	w.replies = func() ([]seqReply, error) {
		frames, err := c.Since(w.start)
		var out []seqReply
		for _, f := range frames {
			// A solicited advertisement for the VIP to the client; the
			// MAC is its target link-layer address (RFC 4861 requires it
			// in answers to multicast solicitations).
			if f.NA.TargetAddress != w.vip || !f.NA.Solicited || f.Dst != self {
				continue
			}
			mac := f.TLLA()
			if mac == nil {
				mac = f.EthSrc
			}
			out = append(out, seqReply{seq: f.Seq, Reply: Reply{At: f.At, MAC: mac.String()}})
		}
		return out, err
	}
}

func (w *VIPWatch) probe(ctx context.Context) {
	defer close(w.done)
	tick := time.NewTicker(w.every)
	defer tick.Stop()
	for {
		s := sentProbe{mark: w.mark(), at: time.Now()}
		err := w.send()
		w.mu.Lock()
		if err != nil {
			w.err = fmt.Errorf("sending a probe for %s: %w", w.vip, err)
		} else {
			w.sent = append(w.sent, s)
		}
		w.mu.Unlock()
		if err != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Current is the MAC of the latest reply so far ("" if none came yet):
// the owner before a fault.
func (w *VIPWatch) Current() string {
	replies, _ := w.replies()
	if len(replies) == 0 {
		return ""
	}
	return replies[len(replies)-1].MAC
}

// Stop stops probing, waits arpwatch.ProbeWindow for the last answers and
// returns the record. Later calls return the same record.
func (w *VIPWatch) Stop() *VIPRecord {
	w.once.Do(func() {
		w.cancel()
		<-w.done
		time.Sleep(arpwatch.ProbeWindow)
		replies, capErr := w.replies()
		w.mu.Lock()
		sent, err := w.sent, w.err
		w.mu.Unlock()
		w.rec = &VIPRecord{VIP: w.vip, Every: w.every, Probes: assign(sent, replies), Err: errors.Join(err, capErr)}
		if w.double != nil {
			w.rec.Doubles = w.double(sent)
		} else {
			w.rec.Doubles = doubles(w.rec.Probes)
		}
		w.close()
	})
	return w.rec
}

// TakenOver is when a MAC other than from first answered at or after
// since, if one did so far: the live side of VIPRecord.Failover, which a
// trial polls to know when to stop. Unlike Current it sees a takeover
// while the old owner answers too.
func (w *VIPWatch) TakenOver(since time.Time, from string) (time.Time, bool) {
	replies, _ := w.replies()
	for _, r := range replies {
		if !r.At.Before(since) && r.MAC != from {
			return r.At, true
		}
	}
	return time.Time{}, false
}
