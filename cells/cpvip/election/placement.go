package election

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/heraldlb/herald/tables"
)

// Origin marks the l2-announce entries of the control-plane VIPs.
const Origin = "control-plane-vip"

// place finds, for every VIP, the selected device whose subnet holds it:
// the link the VIP is answered on. It fails, naming them, if any VIP is on
// no selected device's subnet: the node then announces none of them (it
// is not eligible) rather than half of them.
func place(vips []netip.Addr, devs []*tables.Device) ([]*tables.L2AnnounceEntry, error) {
	var out []*tables.L2AnnounceEntry
	var missing []string
	for _, vip := range vips {
		d := deviceFor(vip, devs)
		if d == nil {
			missing = append(missing, vip.String())
			continue
		}
		out = append(out, &tables.L2AnnounceEntry{IP: vip, NetworkInterface: d.Name, Ifindex: d.Index,
			MAC: d.HWAddr.String(), Origins: []string{Origin}})
	}
	if len(missing) > 0 {
		var subnets []string
		for _, d := range devs {
			if !d.Selected {
				continue
			}
			for _, a := range d.Addresses {
				if a.Scope == tables.ScopeUniverse && a.PrefixLen > 0 {
					subnets = append(subnets, d.Name+":"+a.Subnet().String())
				}
			}
		}
		return nil, fmt.Errorf("VIP %s is on no subnet of a selected device (%s): no VIP is announced from this node",
			strings.Join(missing, ", "), orNone(subnets))
	}
	return out, nil
}

// deviceFor is the selected device with the longest subnet holding vip
// (a device holding the VIP itself as an address does not count: the
// kernel would answer for it too).
func deviceFor(vip netip.Addr, devs []*tables.Device) *tables.Device {
	var best *tables.Device
	bits := -1
	for _, d := range devs {
		if !d.Selected || len(d.HWAddr) == 0 {
			continue
		}
		for _, a := range d.Addresses {
			if a.Scope != tables.ScopeUniverse || a.PrefixLen == 0 || a.Addr == vip {
				continue
			}
			if a.Subnet().Contains(vip) && a.PrefixLen > bits {
				best, bits = d, a.PrefixLen
			}
		}
	}
	return best
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none selected"
	}
	slices.Sort(s)
	return strings.Join(s, ", ")
}
