package listeners

import (
	"net"
	"net/netip"
)

// AddrHolders maps every address of the calling process's network
// namespace to the devices that hold it.
func AddrHolders() (map[netip.Addr][]string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	out := map[netip.Addr][]string{}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			return nil, err
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				out[p.Addr()] = append(out[p.Addr()], ifc.Name)
			}
		}
	}
	return out, nil
}

// Confined reports whether a socket bound to addr takes traffic only from
// loopback or from devices that own says are the caller's: addr is a
// loopback address, or an address that only such devices hold. The
// unspecified address (0.0.0.0, ::) takes traffic from every device, and
// is never confined.
func Confined(addr netip.Addr, holders map[netip.Addr][]string, own func(device string) bool) bool {
	addr = addr.Unmap()
	if addr.IsLoopback() {
		return true
	}
	if addr.IsUnspecified() {
		return false
	}
	devs := holders[addr]
	for _, d := range devs {
		if !own(d) {
			return false
		}
	}
	return len(devs) > 0
}
