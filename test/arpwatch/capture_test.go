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
// socket in one pass, so once the witness has it, the capture's socket has
// it too. Needs root: two network namespaces on a bridge.
func TestMarkCountsFramesNotReadYet(t *testing.T) {
	lan, err := netlab.New("hcap-", netip.MustParsePrefix("198.19.250.0/24"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lan.Teardown() })
	if err := lan.Setup("a", "b"); err != nil {
		t.Fatal(err)
	}
	a, b := lan.Host("a"), lan.Host("b")
	// Nobody has this address: no host answers, the requests are the only
	// frames the captures keep.
	nobody := netip.MustParseAddr("198.19.250.200")
	open := func() *Capture[ARPFrame] {
		c, err := OpenCapture(a.Netns, unix.ETH_P_ARP, func(raw []byte, seq int, at time.Time) (ARPFrame, bool) {
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
	c, witness := open(), open()
	sender, err := OpenARPClient(b.Netns, b.IP)
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close()

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
