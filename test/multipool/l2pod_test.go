package multipool

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"

	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/netlab"
)

// TestL2PodAnnouncements: with enable-l2-pod-announcements on one node,
// a pod started there is announced on the LAN: a listener on another host
// of the LAN captures a gratuitous ARP reply for the pod's IPv4 address
// from the node's eth0 MAC. A pod that was already there when the agent
// (re)started is not announced (as Cilium does not announce restored
// endpoints), and the agent counts what it sent.
func TestL2PodAnnouncements(t *testing.T) {
	logAgentsOnFailure(t)
	n := nodes[0]
	host := lan.Host(n.name)
	ns := namespace(t, "l2pod", nil)

	// Already there before the agent announces anything.
	old := startPod(t, n, ns, "old", nil)
	t.Cleanup(func() { old.stop(t) })

	capture := listenARP(t, "l2listen", 100)

	// Restart this node's agent with the feature on; the others and later
	// tests keep the defaults.
	restartAgent(t, n, "--enable-l2-pod-announcements", "--l2-pod-announcements-interface=eth0")
	t.Cleanup(func() { restartAgent(t, n) })

	p := startPod(t, n, ns, "announced", nil)
	t.Cleanup(func() { p.stop(t) })
	ip := p.ipOf(tables.IPv4)
	if !ip.IsValid() {
		t.Fatalf("pod %s has no IPv4 address: %v", p.Name, p.IPs())
	}

	// An ARP Announcement (a request, target MAC zero) and an unsolicited
	// reply (target MAC broadcast), both from the node to broadcast.
	var request, reply capturedARP
	waitFor(t, timeout, func() (bool, string) {
		frames, err := capture.frames()
		if err != nil {
			return false, err.Error()
		}
		for _, f := range frames {
			if f.p.SenderIP == ip && f.p.TargetIP == ip {
				if f.p.Operation == arp.OperationRequest {
					request = f
				} else {
					reply = f
				}
			}
		}
		return request.p != nil && reply.p != nil, fmt.Sprintf("no gratuitous ARP request and reply for %s on the LAN; %d ARP packets captured: %v", ip, len(frames), frames)
	})
	mac := host.MAC.String()
	for _, c := range []struct {
		got       capturedARP
		targetMAC net.HardwareAddr
	}{{request, net.HardwareAddr{0, 0, 0, 0, 0, 0}}, {reply, ethernet.Broadcast}} {
		got := c.got
		if got.p.SenderHardwareAddr.String() != mac || got.eth.Source.String() != mac || !slices.Equal(got.eth.Destination, ethernet.Broadcast) ||
			!slices.Equal(got.p.TargetHardwareAddr, c.targetMAC) {
			t.Errorf("announcement of %s: %s; want it from %s (Ethernet and sender) to broadcast, target MAC %s", ip, got, mac, c.targetMAC)
		}
	}

	// The agent announces in the order it learns of the addresses, and it
	// learnt of the old pod's (restored from its journal at start, before
	// it served the CNI plugin) before the new one's: had it announced the
	// old pod, the capture would hold that before the new pod's.
	frames, _ := capture.frames()
	announced := slices.IndexFunc(frames, func(f capturedARP) bool { return f.p.SenderIP == ip && f.p.TargetIP == ip })
	oldIP := old.ipOf(tables.IPv4)
	for _, f := range frames[:announced] {
		if f.p.SenderIP == oldIP {
			t.Errorf("the restarted agent announced %s, the address of a pod it restored: %s", oldIP, f)
		}
	}

	// One sent: the new pod's only.
	waitMetrics(t, n, map[string]float64{
		`herald_l2_pod_gratuitous_arps_total{result="sent"}`:   1,
		`herald_l2_pod_gratuitous_arps_total{result="failed"}`: 0,
	})
}

// restartAgent stops a node's agent (SIGTERM) and starts it again with
// extra flags (none: the suite's own), then waits until it is ready.
func restartAgent(t *testing.T, n *node, extra ...string) {
	t.Helper()
	reconfigureAgent(t, n, func(a *agentproc.Agent) { a.SetExtraArgs(extra...) })
}

// reconfigureAgent stops a node's agent (SIGTERM), lets change adjust how
// it runs, starts it again and waits until it is ready.
func reconfigureAgent(t *testing.T, n *node, change func(*agentproc.Agent)) {
	t.Helper()
	if err := n.agent.Stop(); err != nil {
		t.Fatal(err)
	}
	change(n.agent)
	if err := n.agent.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := n.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
}

// capturedARP is one ARP packet seen on the listener's eth0.
type capturedARP struct {
	eth *ethernet.Frame
	p   *arp.Packet
}

func (c capturedARP) String() string {
	return fmt.Sprintf("eth %s > %s, ARP op %d: sender %s %s, target %s %s",
		c.eth.Source, c.eth.Destination, c.p.Operation, c.p.SenderIP, c.p.SenderHardwareAddr, c.p.TargetIP, c.p.TargetHardwareAddr)
}

// arpCapture records every ARP packet arriving at a LAN host.
type arpCapture struct {
	c    *arp.Client
	mu   sync.Mutex
	seen []capturedARP
	err  error
	done chan struct{}
}

// listenARP plugs a listener host into the LAN (the n-th address of its
// subnet; reused if an earlier run of the test in this process made it)
// and captures ARP on its eth0 until the test ends.
func listenARP(t *testing.T, name string, nth int) *arpCapture {
	t.Helper()
	h := lan.Host(name)
	if h == nil {
		var err error
		if h, err = lan.Add(name, nth); err != nil {
			t.Fatal(err)
		}
	}
	c := &arpCapture{done: make(chan struct{})}
	err := netlab.InNetns(h.Netns, func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		c.c, err = arp.Dial(ifi)
		return err
	})
	if err != nil {
		t.Fatalf("ARP socket on %s: %v", name, err)
	}
	go func() {
		defer close(c.done)
		for {
			p, eth, err := c.c.Read()
			c.mu.Lock()
			if err != nil {
				c.err = err
				c.mu.Unlock()
				return
			}
			c.seen = append(c.seen, capturedARP{eth: eth, p: p})
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = c.c.Close()
		<-c.done
	})
	return c
}

// frames returns what was captured so far, and why capturing stopped if
// it did.
func (c *arpCapture) frames() ([]capturedARP, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seen), c.err
}
