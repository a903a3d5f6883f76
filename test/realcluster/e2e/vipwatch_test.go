package e2e

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldlb/herald/test/arpwatch"
	"github.com/heraldlb/herald/test/suite"
)

// probeEvery is how often the client asks who has each watched VIP.
const probeEvery = 20 * time.Millisecond

var (
	arpOnce   sync.Once
	arpClient *arpwatch.ARPClient
	arpErr    error
)

// client is the client namespace's ARP client, opened once: it captures
// every ARP frame arriving there for the rest of the run.
func client(t testing.TB) *arpwatch.ARPClient {
	t.Helper()
	arpOnce.Do(func() { arpClient, arpErr = arpwatch.OpenARPClient(cl.ClientHost.Netns, cl.ClientHost.IP) })
	if arpErr != nil {
		t.Fatal(arpErr)
	}
	return arpClient
}

// vipWatch asks who has each VIP every probeEvery from the client, and
// judges the replies: never two MACs for one request, and how long each
// VIP went unanswered.
type vipWatch struct {
	c       *arpwatch.ARPClient
	start   int
	began   time.Time
	probers map[netip.Addr]*arpwatch.MarkedProber
}

func watchVIPs(t testing.TB, vips ...netip.Addr) *vipWatch {
	t.Helper()
	return watchVIPsEvery(t, probeEvery, vips...)
}

// watchVIPsEvery is watchVIPs asking every interval: many VIPs at once
// are asked less often, so that the nodes answering (and MetalLB's
// speakers, which answer from user space) are not flooded.
func watchVIPsEvery(t testing.TB, interval time.Duration, vips ...netip.Addr) *vipWatch {
	t.Helper()
	c := client(t)
	w := &vipWatch{c: c, start: c.Mark(), began: time.Now(), probers: map[netip.Addr]*arpwatch.MarkedProber{}}
	for _, v := range vips {
		w.probers[v] = c.StartMarkedProber(v, interval)
	}
	return w
}

// vipReport is what the client saw of one VIP while watched.
type vipReport struct {
	VIP      netip.Addr
	Requests int
	Doubles  []arpwatch.Double // requests answered by more than one MAC
	// Owners are the MACs that answered, in the order they took over.
	Owners []string
	// LongestGap is the longest time without a reply (from the first
	// request, to the last reply).
	LongestGap time.Duration
	// Handovers are the gaps at each change of owner, in order.
	Handovers []time.Duration
	// Changes are when each owner answered first, in the order of Owners.
	Changes []time.Time
}

// ownerAt is the MAC that answered last before at ("" if none did).
func (r vipReport) ownerAt(at time.Time) string {
	owner := ""
	for i, c := range r.Changes {
		if c.Before(at) {
			owner = r.Owners[i]
		}
	}
	return owner
}

func (r vipReport) String() string {
	return fmt.Sprintf("%s: %d requests, owners %v, longest gap %s, handovers %v, %d double answers",
		r.VIP, r.Requests, r.Owners, r.LongestGap.Round(time.Millisecond), roundAll(r.Handovers), len(r.Doubles))
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

// unansweredSince returns the watched VIPs that no reply has come for
// since t.
func (w *vipWatch) unansweredSince(t testing.TB, since time.Time) []netip.Addr {
	t.Helper()
	frames, err := w.c.Since(w.start)
	if err != nil {
		t.Fatalf("capture: %v", err)
	}
	var out []netip.Addr
	for v := range w.probers {
		if !slices.ContainsFunc(frames, func(f arpwatch.ARPFrame) bool { return f.At.After(since) && w.c.IsReply(f, v) }) {
			out = append(out, v)
		}
	}
	return out
}

// stop stops asking and reports each VIP; the test fails on any double
// answer.
func (w *vipWatch) stop(t testing.TB) map[netip.Addr]vipReport {
	t.Helper()
	reports := w.report(t)
	for v, r := range reports {
		for _, d := range r.Doubles {
			t.Errorf("%s: %s", v, d)
		}
	}
	return reports
}

// report stops asking and reports each VIP, double answers included, for
// the caller to judge.
func (w *vipWatch) report(t testing.TB) map[netip.Addr]vipReport {
	t.Helper()
	marks := map[netip.Addr][]int{}
	for v, p := range w.probers {
		m, err := p.Stop()
		if err != nil {
			t.Fatalf("probing %s: %v", v, err)
		}
		marks[v] = m
	}
	time.Sleep(arpwatch.ProbeWindow)
	frames, err := w.c.Since(w.start)
	if err != nil {
		t.Fatalf("capture: %v", err)
	}
	out := map[netip.Addr]vipReport{}
	for v, m := range marks {
		r := vipReport{VIP: v, Requests: len(m)}
		_, r.Doubles = w.c.DoubleAnswerList(frames, v, m)
		last := w.began
		lastMAC := ""
		for _, f := range frames {
			if !w.c.IsReply(f, v) {
				continue
			}
			gap := f.At.Sub(last)
			r.LongestGap = max(r.LongestGap, gap)
			if mac := f.SHA.String(); mac != lastMAC {
				if lastMAC != "" {
					r.Handovers = append(r.Handovers, gap)
				}
				r.Owners = append(r.Owners, mac)
				r.Changes = append(r.Changes, f.At)
				lastMAC = mac
			}
			last = f.At
		}
		out[v] = r
	}
	return out
}

// ownerOf returns the node whose MAC answers who-has vip (waiting until
// one does), and fails if two do.
func ownerOf(t testing.TB, vip netip.Addr) string {
	t.Helper()
	var owner string
	waitFor(t, timeout, func() (bool, string) {
		r, err := client(t).Probe(vip)
		if err != nil {
			return false, err.Error()
		}
		macs := r.MACs()
		if len(macs) > 1 {
			t.Fatalf("two MACs answer for %s: %s", vip, r)
		}
		if len(macs) == 0 {
			return false, "nobody answers who-has " + vip.String()
		}
		owner = nodeByMAC(t, macs[0])
		return owner != "", fmt.Sprintf("%s is answered by %s, no node's MAC", vip, macs[0])
	})
	return owner
}

// nodeByMAC returns the name of the node with this LAN MAC ("" if none).
// The MACs are read once: they never change, and judging a capture looks
// up every frame.
func nodeByMAC(t testing.TB, mac string) string {
	t.Helper()
	macsOnce.Do(func() {
		nodeMACs = map[string]string{}
		for _, n := range cl.Nodes {
			m, err := n.MAC()
			if err != nil {
				macsErr = err
				return
			}
			nodeMACs[strings.ToLower(m.String())] = n.Name
		}
	})
	if macsErr != nil {
		t.Fatal(macsErr)
	}
	return nodeMACs[strings.ToLower(mac)]
}

var (
	macsOnce sync.Once
	nodeMACs map[string]string // MAC → node
	macsErr  error
)

// percentile of durations (p in 0..100), nearest rank (suite.Percentile).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := make([]float64, len(ds))
	for i, d := range ds {
		s[i] = float64(d)
	}
	slices.Sort(s)
	return time.Duration(suite.Percentile(s, p))
}
