package devices

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/heraldlb/herald/tables"
)

// The model of the host's links and addresses that netlink updates are
// applied to, and the devices table rows derived from it: pure, tested in
// model_test.go.

type addrKey struct {
	index int
	addr  netip.Addr
}

// initialState is what existed right after subscribing and has not yet
// arrived through the subscriptions.
type initialState struct {
	links map[int]struct{}
	addrs map[addrKey]struct{}
}

func (s *initialState) sawLink(idx int)   { delete(s.links, idx) }
func (s *initialState) sawAddr(k addrKey) { delete(s.addrs, k) }
func (s *initialState) complete() bool    { return len(s.links) == 0 && len(s.addrs) == 0 }

// model is the kernel's state as the updates tell it.
type model struct {
	links map[int]*tables.Device // link attributes; no addresses or selection
	// addrs are kept apart from links: the two subscriptions are separate
	// sockets, so an address may arrive before its link. The kernel
	// deletes a link's addresses (RTM_DELADDR) before the link.
	addrs map[int]map[netip.Addr]addrInfo // ifindex → address → scope, prefix length
}

func newModel() *model {
	return &model{links: map[int]*tables.Device{}, addrs: map[int]map[netip.Addr]addrInfo{}}
}

// applyLink applies a link update; ok is false if it is not about a link
// of its own (bridge port details).
func (m *model) applyLink(u netlink.LinkUpdate) (idx int, ok bool) {
	// The bridge sends AF_BRIDGE messages about its ports, including an
	// RTM_DELLINK when a port leaves it; the device itself stays.
	if u.Family == unix.AF_BRIDGE || u.Link == nil {
		return 0, false
	}
	idx = u.Link.Attrs().Index
	if u.Header.Type == unix.RTM_DELLINK {
		delete(m.links, idx)
	} else {
		m.links[idx] = deviceFromLink(u.Link)
	}
	return idx, true
}

// addrInfo is what the model keeps of an address besides the address.
type addrInfo struct {
	scope uint8
	bits  int // the prefix length: the subnet is on the device's link
}

func (m *model) applyAddr(u netlink.AddrUpdate) (addrKey, bool) {
	ip, ok := netip.AddrFromSlice(u.LinkAddress.IP)
	if !ok {
		return addrKey{}, false
	}
	k := addrKey{u.LinkIndex, ip.Unmap()}
	if u.NewAddr {
		if m.addrs[k.index] == nil {
			m.addrs[k.index] = map[netip.Addr]addrInfo{}
		}
		bits, _ := u.LinkAddress.Mask.Size()
		m.addrs[k.index][k.addr] = addrInfo{scope: uint8(u.Scope), bits: bits}
	} else {
		delete(m.addrs[k.index], k.addr)
		if len(m.addrs[k.index]) == 0 {
			delete(m.addrs, k.index)
		}
	}
	return k, true
}

// devices returns the rows for the current state, selection included.
func (m *model) devices(pats patterns) map[int]*tables.Device {
	out := make(map[int]*tables.Device, len(m.links))
	for idx, link := range m.links {
		d := link.Clone()
		for a, info := range m.addrs[idx] {
			d.Addresses = append(d.Addresses, tables.DeviceAddress{Addr: a, Scope: info.scope, PrefixLen: info.bits})
		}
		slices.SortFunc(d.Addresses, func(a, b tables.DeviceAddress) int { return a.Addr.Compare(b.Addr) })
		master := ""
		if d.MasterIndex != 0 {
			if ml, ok := m.links[d.MasterIndex]; ok {
				master = ml.Name
			} else {
				master = fmt.Sprintf("ifindex %d", d.MasterIndex)
			}
		}
		d.Selected, d.NotSelectedReason = selectDevice(d, master, pats)
		out[idx] = d
	}
	return out
}

func deviceFromLink(l netlink.Link) *tables.Device {
	a := l.Attrs()
	d := &tables.Device{
		Index:       a.Index,
		Name:        a.Name,
		Type:        l.Type(),
		MTU:         a.MTU,
		Flags:       a.Flags,
		OperStatus:  a.OperState.String(),
		MasterIndex: a.MasterIndex,
	}
	// lo's all-zero address is no address.
	if hw := tables.HardwareAddr(a.HardwareAddr); !hw.IsZero() {
		d.HWAddr = slices.Clone(hw)
	}
	return d
}
