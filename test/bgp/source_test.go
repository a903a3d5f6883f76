package bgp

import (
	"fmt"
	"net/netip"
	"os/exec"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// transport.sourceInterface: node1's IPv4 session starts from the address
// of its device hbgp-src, which the router peers with (a static route to
// it via node1); node2 and node3, without such a device, go on from their
// own addresses. Unset again, node1 is back on its own address.
func TestSourceInterface(t *testing.T) {
	ensureAgents(t)
	n := nodes[0]
	const dev, src = "hbgp-src", "198.18.62.1"
	n.addLocalDevice(t, dev, netip.MustParsePrefix(src+"/32"))
	if out, err := exec.Command("ip", "-n", routerHost.Netns, "route", "add", src+"/32", "via", n.host.IP.String()).CombinedOutput(); err != nil {
		t.Fatalf("route to %s on the router: %v: %s", src, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "-n", routerHost.Netns, "route", "del", src+"/32").Run() })
	if err := router.Configure(fmt.Sprintf("router bgp %d", routerASN),
		fmt.Sprintf("neighbor %s remote-as %d", src, nodeASN), fmt.Sprintf("neighbor %s timers connect 1", src),
		fmt.Sprintf("neighbor %s disable-connected-check", src),
		"address-family ipv4 unicast", fmt.Sprintf("neighbor %s activate", src)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = router.Configure(fmt.Sprintf("router bgp %d", routerASN), fmt.Sprintf("no neighbor %s", src))
	})

	setSourceInterface(t, dev)
	t.Cleanup(func() { setSourceInterface(t, "") })
	want := map[string]string{src: "Established", n.host.IP.String(): "not Established"}
	for _, other := range nodes[1:] {
		want[other.host.IP.String()] = "Established"
	}
	waitNeighbors(t, want)

	setSourceInterface(t, "")
	want[src], want[n.host.IP.String()] = "not Established", "Established"
	waitNeighbors(t, want)
}

// setSourceInterface sets (or, with "", unsets) transport.sourceInterface
// of the IPv4 peer config.
func setSourceInterface(t *testing.T, dev string) {
	t.Helper()
	pc, err := herald.CiliumV2alpha1().CiliumBGPPeerConfigs().Get(ctxT(t), peerConfigV4, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pc.Spec.Transport == nil {
		pc.Spec.Transport = &v2alpha1.CiliumBGPTransport{}
	}
	pc.Spec.Transport.SourceInterface = dev
	if _, err := herald.CiliumV2alpha1().CiliumBGPPeerConfigs().Update(ctxT(t), pc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitNeighbors waits until each of the router's neighbors is in the
// state wanted ("Established" or "not Established").
func waitNeighbors(t *testing.T, want map[string]string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("router neighbors %v", want), func() (bool, string) {
		ns, err := router.Neighbors()
		if err != nil {
			return false, err.Error()
		}
		for addr, w := range want {
			up := ns[addr].State == "Established"
			if up != (w == "Established") {
				return false, fmt.Sprintf("%s is %q", addr, ns[addr].State)
			}
		}
		return true, ""
	})
}
