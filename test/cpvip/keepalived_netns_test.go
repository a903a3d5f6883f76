package cpvip

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/heraldlb/herald/test/arpwatch"
	"github.com/heraldlb/herald/test/netlab"
)

// The keepalived test's own LAN: two nodes and a client, no API server.
const (
	kaPrefix = "hka-"
	kaClient = 50 // the client's host number
)

var (
	kaSubnet  = netip.MustParsePrefix("198.18.41.0/24")
	kaSubnet6 = netip.MustParsePrefix("fd00:18:0:41::/64")
	kaVIP     = netip.MustParseAddr("198.18.41.100")
	kaVIP6    = netip.MustParseAddr("fd00:18:0:41::100")
	kaNodes   = []string{"ka1", "ka2"}
)

// kaWait bounds every wait of the test: it checks outcomes, not durations.
const kaWait = 60 * time.Second

// kaNode is one node of the test: its host, its keepalived, the file
// whose existence is its health, and with a file check, its prober.
type kaNode struct {
	host    *netlab.Host
	ka      *Keepalived
	prober  *KeepalivedProber
	healthy string
}

func (n *kaNode) setHealthy(t *testing.T, ok bool) {
	t.Helper()
	var err error
	if ok {
		err = os.WriteFile(n.healthy, nil, 0o644)
	} else {
		err = os.Remove(n.healthy)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestKeepalivedInNetns runs keepalived (VRRPv3, unicast, nopreempt) on two
// nodes of a LAN of its own and watches the VIP from a client on the wire:
// exactly one MAC answers each VIP (IPv4, IPv6); when the owner's health check fails the other
// node takes over; when the owner's keepalived is killed with SIGKILL the
// other node takes over. It does so with both kinds of check: keepalived's
// own script, and a check file written by a prober. It logs how long each
// takeover took and any request two MACs answered; it asserts only
// outcomes.
func TestKeepalivedInNetns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (network namespaces, AF_PACKET)")
	}
	if _, err := os.Stat(KeepalivedBin); err != nil {
		t.Fatalf("%v: install keepalived (make tools)", err)
	}
	unlock, err := netlab.Lock("keepalived")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	t.Run("script", func(t *testing.T) { kaScenario(t, false) })
	t.Run("file", func(t *testing.T) { kaScenario(t, true) })
}

func kaScenario(t *testing.T, fileCheck bool) {
	lan, clientHost := kaLAN(t)
	nodes := kaStart(t, lan, fileCheck)
	client, err := arpwatch.OpenARPClient(clientHost.Netns, clientHost.IP)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	client6, err := arpwatch.OpenNDPClient(clientHost.Netns, clientHost.IP6)
	if err != nil {
		t.Fatal(err)
	}
	defer client6.Close()
	defer func() {
		if t.Failed() {
			for _, n := range nodes {
				t.Log(n.ka.Logs(60))
				if n.prober != nil {
					t.Log(n.prober.Logs(20))
				}
			}
		}
	}()

	owner, other := kaOwner(t, client, nodes)
	t.Logf("owner %s (%s), backup %s", owner.host.Name, owner.host.MAC, other.host.Name)
	if s := owner.ka.State("vip4"); s != "MASTER" {
		t.Errorf("%s answers the VIP but its keepalived logged state %q", owner.host.Name, s)
	}
	// The IPv6 VIP has an election of its own: one node, either.
	kaEventually(t, "one node answering the IPv6 VIP", func() bool {
		macs := kaProbe6(t, client6)
		return len(macs) == 1 && (macs[0] == owner.host.MAC.String() || macs[0] == other.host.MAC.String())
	})

	t.Run("check fails", func(t *testing.T) {
		kaTakeover(t, client, owner, other, func() { owner.setHealthy(t, false) })
		if res := kaProbeOne(t, client); !slices.Equal(res.MACs(), []string{other.host.MAC.String()}) {
			t.Errorf("after %s's check failed: %s", owner.host.Name, res)
		}
		if s := owner.ka.State("vip4"); s != "FAULT" {
			t.Errorf("%s's check fails, its keepalived logged state %q", owner.host.Name, s)
		}
		kaEventually(t, other.host.Name+" alone answering the IPv6 VIP", func() bool {
			return slices.Equal(kaProbe6(t, client6), []string{other.host.MAC.String()})
		})
	})
	if t.Failed() {
		return
	}

	// The failed node recovers and waits as backup (nopreempt: it does not
	// take the VIP back).
	owner.setHealthy(t, true)
	kaEventually(t, fmt.Sprintf("%s back in BACKUP state", owner.host.Name), func() bool { return owner.ka.State("vip4") == "BACKUP" })
	owner, other = other, owner

	t.Run("kill -9", func(t *testing.T) {
		// keepalived dies without a word; the VIP stays on its interface
		// and its kernel goes on answering for it: the doubles logged.
		kaTakeover(t, client, owner, other, func() {
			if err := owner.ka.Kill(); err != nil {
				t.Error(err)
			}
		})
	})

	for _, n := range nodes {
		if err := n.ka.Stop(); err != nil {
			t.Error(err)
		}
		if n.prober != nil {
			if err := n.prober.Stop(); err != nil {
				t.Error(err)
			}
		}
	}
}

// kaLAN builds the test's LAN and returns it with its client host; it is
// torn down when the test ends.
func kaLAN(t *testing.T) (*netlab.LAN, *netlab.Host) {
	t.Helper()
	lan, err := netlab.New(kaPrefix, kaSubnet)
	if err != nil {
		t.Fatal(err)
	}
	if err := lan.EnableIPv6(kaSubnet6); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, err := range lan.Teardown() {
			t.Error(err)
		}
	})
	if err := lan.Setup(kaNodes...); err != nil {
		t.Fatal(err)
	}
	client, err := lan.Add("client", kaClient)
	if err != nil {
		t.Fatal(err)
	}
	return lan, client
}

// kaStart starts keepalived on every node, healthy, with equal
// priorities; with fileCheck, each node's prober first.
func kaStart(t *testing.T, lan *netlab.LAN, fileCheck bool) []*kaNode {
	t.Helper()
	var nodes []*kaNode
	for _, name := range kaNodes {
		h := lan.Host(name)
		dir := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		n := &kaNode{host: h, healthy: filepath.Join(dir, "healthy")}
		n.setHealthy(t, true)
		probe := []string{"/usr/bin/test", "-e", n.healthy}
		// keepalived's own check: its shortest interval.
		check := KeepalivedCheck{Script: probe, Interval: time.Second, Timeout: time.Second, Fall: 3, Rise: 3}
		if fileCheck {
			check = KeepalivedCheck{File: filepath.Join(dir, "check")}
			p, err := StartKeepalivedProber(h.Netns, dir, KeepalivedProberOptions{
				File: check.File, Probe: probe, Interval: 100 * time.Millisecond, Fall: 3, Rise: 10,
			})
			if err != nil {
				t.Fatal(err)
			}
			n.prober = p
			t.Cleanup(func() {
				if err := p.Kill(); err != nil {
					t.Error(err)
				}
			})
		}
		var peers, peers6 []netip.Addr
		for _, p := range kaNodes {
			if p != name {
				peers, peers6 = append(peers, lan.Host(p).IP), append(peers6, lan.Host(p).IP6)
			}
		}
		conf, err := KeepalivedConfig(KeepalivedOptions{
			Node: name, Interface: arpwatch.Device,
			VIP: kaVIP, SourceIP: h.IP, Peers: peers,
			VIP6: kaVIP6, SourceIP6: h.IP6, Peers6: peers6,
			RouterID: 41, Priority: 100, AdvertInterval: 100 * time.Millisecond,
			Check: check,
		})
		if err != nil {
			t.Fatal(err)
		}
		if n.ka, err = StartKeepalived(h.Netns, dir, conf); err != nil {
			t.Fatal(err)
		}
		// Kill, not Stop: a failed test must not wait for clean shutdowns.
		t.Cleanup(func() {
			if err := n.ka.Kill(); err != nil {
				t.Error(err)
			}
		})
		nodes = append(nodes, n)
	}
	return nodes
}

// kaOwner waits until three probes in a row are answered by one and the
// same MAC, one of the nodes', and returns that node and the other one.
func kaOwner(t *testing.T, client *arpwatch.ARPClient, nodes []*kaNode) (owner, other *kaNode) {
	t.Helper()
	var last arpwatch.ProbeResult
	same := 0
	kaEventually(t, "one node answering the VIP", func() bool {
		res := kaProbeOne(t, client)
		if macs := res.MACs(); len(macs) == 1 && slices.Equal(macs, last.MACs()) {
			same++
		} else {
			same = 0
		}
		last = res
		return same >= 2
	})
	for i, n := range nodes {
		if n.host.MAC.String() == last.MACs()[0] {
			return n, nodes[1-i]
		}
	}
	t.Fatalf("the VIP is answered by a MAC of no node: %s", last)
	return nil, nil
}

func kaProbeOne(t *testing.T, client *arpwatch.ARPClient) arpwatch.ProbeResult {
	t.Helper()
	res, err := client.Probe(kaVIP)
	if err != nil {
		t.Fatalf("%v\n%s", err, res)
	}
	return res
}

// kaProbe6 solicits the IPv6 VIP once and returns the distinct MACs that
// answered, sorted.
func kaProbe6(t *testing.T, client6 *arpwatch.NDPClient) []string {
	t.Helper()
	macs, err := client6.Probe(kaVIP6)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(macs)
	return slices.Compact(macs)
}

// kaTakeover asks who has the VIP every 10 ms, runs fault, and waits until
// the backup answers; then it goes on asking for a second, to see whether
// the old owner still answers too. It logs the time from the fault to the
// backup's first answer, the old owner's last answer after the fault, and
// the requests answered by both.
func kaTakeover(t *testing.T, client *arpwatch.ARPClient, owner, backup *kaNode, fault func()) {
	t.Helper()
	start := client.Mark()
	prober := client.StartMarkedProber(kaVIP, 10*time.Millisecond)
	time.Sleep(100 * time.Millisecond) // a few answers by the owner first
	t0 := time.Now()
	fault()
	var firstNew time.Time
	kaEventually(t, backup.host.Name+" answering the VIP", func() bool {
		frames, _ := client.Since(start)
		for _, f := range frames {
			if client.IsReply(f, kaVIP) && slices.Equal(f.SHA, backup.host.MAC) && f.At.After(t0) {
				firstNew = f.At
				return true
			}
		}
		return false
	})
	time.Sleep(time.Second)
	marks, frames, err := prober.Finish(start)
	if err != nil {
		t.Fatal(err)
	}
	lastOld := "none"
	for _, f := range frames {
		if client.IsReply(f, kaVIP) && slices.Equal(f.SHA, owner.host.MAC) && f.At.After(t0) {
			lastOld = f.At.Sub(t0).String()
		}
	}
	windows, doubles := client.DoubleAnswerList(frames, kaVIP, marks)
	t.Logf("%s: %s answered %s after the fault; %s's last answer after the fault: %s; %d of %d requests answered by two MACs (load %s)",
		t.Name(), backup.host.Name, firstNew.Sub(t0), owner.host.Name, lastOld, len(doubles), windows, kaLoadavg())
}

// kaEventually polls cond every 100 ms until it holds, or fails the test
// after kaWait.
func kaEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(kaWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", what, kaWait)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func kaLoadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return string(b[:len(b)-1])
}
