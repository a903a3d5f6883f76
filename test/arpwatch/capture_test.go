package arpwatch

import (
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/heraldlb/herald/test/netlab"
)

// TestMarkCountsFramesNotReadYet: a frame that arrived before Mark counts
// as before it even when the capture's reader has not recorded it yet, as
// on a busy machine where the reader lags. Otherwise a prober would take a
// late-read reply for the answer to its next request, and the request it
// answered for unanswered. A second capture on the same interface tells
// when a frame has arrived: the kernel queues a frame on every packet
// socket in one pass, newest socket first, so once the witness (opened
// before the capture) has it, the capture's socket has it too. Needs root:
// two network namespaces on a bridge.
func TestMarkCountsFramesNotReadYet(t *testing.T) {
	a, sender, open := captureLAN(t)
	witness := open(a)
	c := open(a)

	const requests = 300
	for sent := 1; sent <= requests; sent++ {
		if err := sender.Request(nobody); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for witness.Mark() < sent {
			if time.Now().After(deadline) {
				t.Fatalf("request %d never arrived", sent)
			}
			time.Sleep(100 * time.Microsecond)
		}
		if got := c.Mark(); got != sent {
			t.Fatalf("Mark = %d after request %d arrived, want %d", got, sent, sent)
		}
	}
}

// TestFramesCarryTheirReceiveTime: a frame's time is when it arrived, not
// when the reader got to it. The test holds the reader back until the
// frame is queued on the socket and notes the time; the frame must be
// stamped between its sending and that time. A reader that stamps frames
// as it records them stamps them after.
func TestFramesCarryTheirReceiveTime(t *testing.T) {
	a, sender, open := captureLAN(t)
	c := open(a)
	for sent := 1; sent <= 20; sent++ {
		c.mu.Lock()
		before := time.Now()
		if err := sender.Request(nobody); err != nil {
			c.mu.Unlock()
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for !c.queued() {
			if time.Now().After(deadline) {
				c.mu.Unlock()
				t.Fatalf("request %d never arrived", sent)
			}
			time.Sleep(100 * time.Microsecond)
		}
		queued := time.Now()
		c.mu.Unlock()
		if got := c.Mark(); got != sent {
			t.Fatalf("Mark = %d after request %d arrived, want %d", got, sent, sent)
		}
		frames, err := c.Since(sent - 1)
		if err != nil {
			t.Fatal(err)
		}
		if at := frames[0].At; at.Before(before) || at.After(queued) {
			t.Fatalf("request %d stamped %s, want between its sending (%s) and when it was queued (%s)",
				sent, at.Format(stampFormat), before.Format(stampFormat), queued.Format(stampFormat))
		}
	}
}

const stampFormat = "15:04:05.000000"

// nobody is an address no host of captureLAN has: no host answers, the
// requests for it are the only frames the captures keep.
var nobody = netip.MustParseAddr("198.19.250.200")

// captureLAN sets up two hosts on a bridge and returns host a, a client on
// host b that sends the requests, and a function that opens a capture on
// a host keeping the requests for nobody. Needs root.
func captureLAN(t *testing.T) (*netlab.Host, *ARPClient, func(*netlab.Host) *Capture[ARPFrame]) {
	lan, err := netlab.New("hcap-", netip.MustParsePrefix("198.19.250.0/24"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lan.Teardown() })
	if err := lan.Setup("a", "b"); err != nil {
		t.Fatal(err)
	}
	a, b := lan.Host("a"), lan.Host("b")
	sender, err := OpenARPClient(b.Netns, b.IP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sender.Close)
	open := func(h *netlab.Host) *Capture[ARPFrame] {
		c, err := OpenCapture(h.Netns, unix.ETH_P_ARP, func(raw []byte, seq int, at time.Time) (ARPFrame, bool) {
			f, ok := ParseARP(raw)
			f.Seq, f.At = seq, at
			return f, ok && f.TPA == nobody
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	return a, sender, open
}
