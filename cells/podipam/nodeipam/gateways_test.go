package nodeipam

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// TestEnsureGatewaysWritesOnlyWhatIsMissing: each ADD checks the bridge;
// a gateway that is there (address and prefix length) is left alone, one
// that was removed, or sits there with another prefix length, is put back.
func TestEnsureGatewaysWritesOnlyWhatIsMissing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root to create a network namespace; run it as root, as make test does")
	}
	v4, v6 := netip.MustParsePrefix("198.18.200.0/24"), netip.MustParsePrefix("fd00:200::/64")
	a := &agent{}
	a.forwarding.Store(true) // not this test's subject: leave the sysctls alone

	inNewNetns(t, func() error {
		if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br-test"}}); err != nil {
			return err
		}
		link, err := netlink.LinkByName("br-test")
		if err != nil {
			return err
		}
		// expectMissing checks which gateways missingGateways reports.
		expectMissing := func(when string, want ...netip.Prefix) error {
			got, err := missingGateways(link, []netip.Prefix{v4, v6})
			if err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("%s: missing %v, want %v", when, got, want)
			}
			return nil
		}
		ensure := func() error { return a.ensureGateways("br-test", []netip.Prefix{v4, v6}) }
		steps := []func() error{
			func() error { return expectMissing("bare bridge", v4, v6) },
			ensure,
			func() error { return expectMissing("after ensureGateways") },
			ensure, // nothing to write
			func() error { return expectMissing("after ensureGateways again") },
			// Someone removes the IPv4 gateway: the next ADD puts it back.
			func() error { return netlink.AddrDel(link, gatewayAddr(v4)) },
			func() error { return expectMissing("IPv4 gateway removed", v4) },
			ensure,
			func() error { return expectMissing("after ensureGateways") },
			// The gateway's address with another prefix length gives the
			// pods no connected route: it does not count.
			func() error { return netlink.AddrDel(link, gatewayAddr(v4)) },
			func() error {
				return netlink.AddrAdd(link, &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP("198.18.200.1").To4(), Mask: net.CIDRMask(32, 32)}})
			},
			func() error { return expectMissing("gateway with prefix length 32", v4) },
		}
		for i, step := range steps {
			if err := step(); err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
		}
		return nil
	})
}

// inNewNetns runs fn on a thread in a new network namespace, which goes
// away with the thread: the thread is never unlocked, so Go ends it.
func inNewNetns(t *testing.T, fn func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		ns, err := netns.New() // creates it and moves this thread into it
		if err != nil {
			errc <- fmt.Errorf("cannot create a network namespace: %w", err)
			return
		}
		defer ns.Close()
		errc <- fn()
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}
