package l2

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/test/arpwatch"
	"github.com/heraldlb/herald/test/netlab"
)

// The VIPs the conflict tests ask LB IPAM for (lbipam.cilium.io/ips), so
// that the rogue host can take them first.
var (
	conflictVIP  = netip.MustParseAddr("198.18.0.220")
	conflictVIP6 = netip.MustParseAddr("fd00:18:0:1::d0")
)

// rogueAddr configures ip on the rogue host's eth0 ("add") or removes it
// ("del"): while it is there, the rogue's kernel answers ARP and neighbour
// solicitations for it, as a misconfigured host on the LAN would.
func rogueAddr(t testing.TB, op string, ip netip.Addr) {
	t.Helper()
	prefix := ip.String() + "/32"
	args := []string{"-n", rogueHost.Netns, "addr", op, prefix, "dev", devName}
	if ip.Is6() {
		args = []string{"-n", rogueHost.Netns, "-6", "addr", op, ip.String() + "/128", "dev", devName, "nodad"}
		if op == "del" {
			args = args[:len(args)-1]
		}
	}
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// rogueGratuitousARP makes the rogue host announce ip as its own.
func rogueGratuitousARP(t testing.TB, ip netip.Addr) {
	t.Helper()
	err := netlab.InNetns(rogueHost.Netns, func() error {
		ifi, err := net.InterfaceByName(devName)
		if err != nil {
			return err
		}
		c, err := packet.Listen(ifi, packet.Raw, unix.ETH_P_ARP, nil)
		if err != nil {
			return err
		}
		defer c.Close()
		// A gratuitous request: sender and target IP both ip, target MAC
		// zero; 42 bytes, unpadded.
		b := arpwatch.ARPFrame{
			EthDst: arpwatch.BroadcastMAC,
			EthSrc: rogueHost.MAC,
			Op:     arpwatch.OpRequest,
			SHA:    rogueHost.MAC,
			SPA:    ip,
			TPA:    ip,
		}.Marshal()
		_, err = c.WriteTo(b, &packet.Addr{HardwareAddr: arpwatch.BroadcastMAC})
		return err
	})
	if err != nil {
		t.Fatalf("gratuitous ARP from the rogue host: %v", err)
	}
}

// createServiceAt creates a LoadBalancer Service of the scenario asking
// LB IPAM for ip.
func (s *scenario) createServiceAt(name string, ip netip.Addr) {
	s.t.Helper()
	family := corev1.IPv4Protocol
	if ip.Is6() {
		family = corev1.IPv6Protocol
	}
	s.createServiceWith(name, func(svc *corev1.Service) {
		singleStack(family)(svc)
		svc.Annotations = map[string]string{"lbipam.cilium.io/ips": ip.String()}
	})
}

// waitConflictEvent waits for an L2AddressConflict Event on the Service
// that names the rogue host's MAC and contains what.
func (s *scenario) waitConflictEvent(svc, what string) {
	s.t.Helper()
	waitFor(s.t, func() (bool, string) {
		events, err := kube.CoreV1().Events(s.ns).List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + svc + ",reason=L2AddressConflict",
		})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range events.Items {
			if strings.Contains(e.Message, rogueHost.MAC.String()) && strings.Contains(e.Message, what) {
				s.t.Logf("Event %s from %s: %s", e.Reason, e.Source.Host, e.Message)
				return true, ""
			}
		}
		return false, fmt.Sprintf("no L2AddressConflict Event on %s/%s naming %s and %q (%d such events)", s.ns, svc, rogueHost.MAC, what, len(events.Items))
	})
}

// assertNotAnswering checks that no node's responder map has vip (its
// l2-announce row may exist, in error: the address is wanted, not
// programmed).
func assertNotAnswering(t testing.TB, vip netip.Addr) {
	t.Helper()
	for _, n := range nodes {
		entries, err := n.mapEntriesFor(vip)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 0 {
			t.Errorf("%s answers for %s although another host uses it: %v", n.Name, vip, entries)
		}
	}
}

// conflictsCounted returns herald_l2_address_conflicts_total{when} of n.
func conflictsCounted(t testing.TB, n *node, when string) float64 {
	t.Helper()
	m, err := n.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	v, _ := m.Value("herald_l2_address_conflicts_total", map[string]string{"when": when})
	return v
}

// TestAddressConflict: a host on the LAN already uses the VIP. The owner's
// probe finds it, so the owner does not answer; the Service gets an Event
// naming the other MAC, the node counts it. Once the host gives the address
// up, the owner probes again and announces. When the host claims it again
// while the owner announces, the owner's eBPF program notices (Event,
// metric) and the owner does not fight back with announcements.
func TestAddressConflict(t *testing.T) {
	s := newScenario(t)
	s.createPolicy("all", nil)

	rogueAddr(t, "add", conflictVIP)
	t.Cleanup(func() {
		_ = exec.Command("ip", "-n", rogueHost.Netns, "addr", "del", conflictVIP.String()+"/32", "dev", devName).Run()
	})
	s.createServiceAt("taken", conflictVIP)
	vip := s.waitVIP("taken")
	if vip != conflictVIP {
		t.Fatalf("VIP %s, asked for %s", vip, conflictVIP)
	}
	s.waitConflictEvent("taken", "is in use by another host")
	var owner *node
	for _, n := range nodes {
		if conflictsCounted(t, n, "probe") > 0 {
			owner = n
		}
	}
	if owner == nil {
		t.Fatal("no node counted the conflict in herald_l2_address_conflicts_total{when=probe}")
	}
	assertNotAnswering(t, vip)
	if res := probe(t, vip); len(res.MACs()) != 1 || res.MACs()[0] != rogueHost.MAC.String() {
		t.Fatalf("while the rogue host has %s, only it may answer: %s", vip, res)
	}

	t.Logf("the rogue host gives %s up", vip)
	rogueAddr(t, "del", conflictVIP)
	owner = s.waitOwner("taken", vip)
	expectAnsweredOnlyBy(t, vip, owner)

	t.Logf("the rogue host claims %s again with a gratuitous ARP", vip)
	before := conflictsCounted(t, owner, "announcing")
	mark := client.Mark()
	rogueGratuitousARP(t, vip)
	s.waitConflictEvent("taken", "speaks for")
	if got := conflictsCounted(t, owner, "announcing"); got != before+1 {
		t.Errorf("herald_l2_address_conflicts_total{when=announcing} of %s: %v, want %v", owner.Name, got, before+1)
	}
	// No war: the owner does not announce again.
	time.Sleep(2 * time.Second)
	frames, err := client.Since(mark)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if f.Gratuitous(vip) && f.SHA.String() == owner.host.MAC.String() {
			t.Errorf("%s announced %s again after the conflict: %s", owner.Name, vip, f)
		}
	}
}

// TestAddressConflictIPv6: the same probe for an IPv6 VIP, by duplicate
// address detection: a host that has the address answers, the owner does
// not announce it until the host gives it up.
func TestAddressConflictIPv6(t *testing.T) {
	s := newScenario(t)
	s.createPolicy("all", nil)
	rogueAddr(t, "add", conflictVIP6)
	t.Cleanup(func() {
		_ = exec.Command("ip", "-n", rogueHost.Netns, "-6", "addr", "del", conflictVIP6.String()+"/128", "dev", devName).Run()
	})
	s.createServiceAt("taken6", conflictVIP6)
	vip := s.waitVIPIn("taken6", poolCIDR6)
	s.waitConflictEvent("taken6", "is in use by another host")
	assertNotAnswering(t, vip)

	rogueAddr(t, "del", conflictVIP6)
	owner := s.waitOwner("taken6", vip)
	expectNDPAnsweredOnlyBy(t, vip, owner)
}
