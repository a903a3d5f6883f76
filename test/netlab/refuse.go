package netlab

import (
	"bytes"
	"fmt"
	"net/netip"
	"os/exec"
)

// refuseTable is the nftables table Refuse adds in a host's namespace.
const refuseTable = "herald_refuse"

// Refuse makes every new TCP connection from host name to addr:port fail
// with "connection refused" (a reset), as if nothing listened there, while
// the rest of the network works: a test can change what a server holds
// before the host can reach it again. Allow undoes it.
func (l *LAN) Refuse(name string, addr netip.AddrPort) error {
	h := l.hosts[name]
	if h == nil {
		return fmt.Errorf("netlab: no host %s", name)
	}
	return RefuseIn(h.Netns, addr)
}

// RefuseIn is Refuse for any network namespace.
func RefuseIn(netns string, addr netip.AddrPort) error {
	family := "ip"
	if addr.Addr().Is6() {
		family = "ip6"
	}
	script := fmt.Sprintf(`add table inet %[1]s
add chain inet %[1]s out { type filter hook output priority 0; }
add rule inet %[1]s out %[2]s daddr %[3]s tcp dport %[4]d reject with tcp reset
`, refuseTable, family, addr.Addr(), addr.Port())
	return nft(netns, script)
}

// Allow removes what Refuse added for host name (nothing if it added
// nothing).
func (l *LAN) Allow(name string) error {
	h := l.hosts[name]
	if h == nil {
		return fmt.Errorf("netlab: no host %s", name)
	}
	return AllowIn(h.Netns)
}

// AllowIn is Allow for any network namespace.
func AllowIn(netns string) error {
	// Adding first makes the delete succeed when no table is there.
	return nft(netns, fmt.Sprintf("add table inet %[1]s\ndelete table inet %[1]s\n", refuseTable))
}

func nft(netns, script string) error {
	cmd := exec.Command("ip", "netns", "exec", netns, "nft", "-f", "-")
	cmd.Stdin = bytes.NewBufferString(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft in %s: %w: %s\n%s", netns, err, bytes.TrimSpace(out), script)
	}
	return nil
}
