package devices

import (
	"log/slog"
	"net"
	"slices"
	"testing"

	"github.com/cilium/statedb"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/heraldlb/herald/tables"
)

func linkUpdate(typ uint16, family uint8, l netlink.Link) netlink.LinkUpdate {
	return netlink.LinkUpdate{
		IfInfomsg: nl.IfInfomsg{IfInfomsg: unix.IfInfomsg{Family: family, Index: int32(l.Attrs().Index)}},
		Header:    unix.NlMsghdr{Type: typ},
		Link:      l,
	}
}

func veth(idx int, name string, master int) *netlink.Veth {
	return &netlink.Veth{LinkAttrs: netlink.LinkAttrs{
		Index: idx, Name: name, MTU: 1500, MasterIndex: master,
		HardwareAddr: net.HardwareAddr{2, 0, 0, 0, 0, byte(idx)},
		Flags:        net.FlagUp | net.FlagBroadcast | net.FlagMulticast,
		OperState:    netlink.OperUp,
	}}
}

func addrUpdate(idx int, cidr string, scope int, add bool) netlink.AddrUpdate {
	ip, ipnet, err := net.ParseCIDR(cidr)
	if err != nil {
		panic(err)
	}
	ipnet.IP = ip
	return netlink.AddrUpdate{LinkAddress: *ipnet, LinkIndex: idx, Scope: scope, NewAddr: add}
}

func TestModel(t *testing.T) {
	m := newModel()
	// The address subscription may be ahead of the link subscription.
	m.applyAddr(addrUpdate(5, "fd00:5::1/64", 0, true))
	m.applyAddr(addrUpdate(5, "fe80::1/64", unix.RT_SCOPE_LINK, true))
	m.applyAddr(addrUpdate(5, "198.18.5.1/24", 0, true))
	if rows := m.devices(nil); len(rows) != 0 {
		t.Fatalf("addresses without their link make rows: %v", rows)
	}
	m.applyLink(linkUpdate(unix.RTM_NEWLINK, unix.AF_UNSPEC, veth(5, "veth-a", 0)))
	d := m.devices(nil)[5]
	if d == nil || d.Name != "veth-a" || d.Type != "veth" || d.OperStatus != "up" || !d.Selected {
		t.Fatalf("veth-a: %+v", d)
	}
	var got []string
	for _, a := range d.Addresses {
		got = append(got, a.Addr.String())
	}
	if want := []string{"198.18.5.1", "fd00:5::1", "fe80::1"}; !slices.Equal(got, want) {
		t.Errorf("addresses %v, want %v (sorted, IPv4 first)", got, want)
	}

	// A bridge port names its master; the bridge's AF_BRIDGE RTM_DELLINK
	// when the port leaves it is no deletion.
	m.applyLink(linkUpdate(unix.RTM_NEWLINK, unix.AF_UNSPEC, veth(6, "veth-b", 7)))
	if d := m.devices(nil)[6]; d.NotSelectedReason != "enslaved to ifindex 7" {
		t.Errorf("port of an unknown master: %q", d.NotSelectedReason)
	}
	m.applyLink(linkUpdate(unix.RTM_NEWLINK, unix.AF_UNSPEC, &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Index: 7, Name: "br0"}}))
	if d := m.devices(nil)[6]; d.NotSelectedReason != "enslaved to br0" {
		t.Errorf("port of br0: %q", d.NotSelectedReason)
	}
	if _, ok := m.applyLink(linkUpdate(unix.RTM_DELLINK, unix.AF_BRIDGE, veth(6, "veth-b", 7))); ok {
		t.Error("AF_BRIDGE update counted as a link update")
	}
	if _, ok := m.devices(nil)[6]; !ok {
		t.Error("AF_BRIDGE RTM_DELLINK deleted the port")
	}

	// Address and link removal.
	m.applyAddr(addrUpdate(5, "fd00:5::1/64", 0, false))
	if n := len(m.devices(nil)[5].Addresses); n != 2 {
		t.Errorf("%d addresses after a removal, want 2", n)
	}
	m.applyLink(linkUpdate(unix.RTM_DELLINK, unix.AF_UNSPEC, veth(6, "veth-b", 7)))
	if _, ok := m.devices(nil)[6]; ok {
		t.Error("deleted link still there")
	}
}

// Two devices swapping names must not leave the unique name index
// pointing at the wrong row.
func TestWriteRenameSwap(t *testing.T) {
	db := statedb.New()
	tbl, err := tables.NewDevicesTable(db)
	if err != nil {
		t.Fatal(err)
	}
	w := &watcher{db: db, table: tbl, log: slog.New(slog.DiscardHandler)}
	m := newModel()
	m.applyLink(linkUpdate(unix.RTM_NEWLINK, unix.AF_UNSPEC, veth(5, "eth0", 0)))
	m.applyLink(linkUpdate(unix.RTM_NEWLINK, unix.AF_UNSPEC, veth(6, "eth1", 0)))
	w.write(m)
	m.applyLink(linkUpdate(unix.RTM_NEWLINK, unix.AF_UNSPEC, veth(5, "eth1", 0)))
	m.applyLink(linkUpdate(unix.RTM_NEWLINK, unix.AF_UNSPEC, veth(6, "eth0", 0)))
	w.write(m)

	txn := db.ReadTxn()
	for name, idx := range map[string]int{"eth0": 6, "eth1": 5} {
		d, _, ok := tbl.Get(txn, tables.DeviceNameIndex.Query(name))
		if !ok || d.Index != idx {
			t.Errorf("%s: %+v, %v; want ifindex %d", name, d, ok, idx)
		}
	}
	if n := tbl.NumObjects(txn); n != 2 {
		t.Errorf("%d rows, want 2", n)
	}

	// Unchanged rows are not rewritten.
	rev := tbl.Revision(txn)
	w.write(m)
	if tbl.Revision(db.ReadTxn()) != rev {
		t.Error("writing the same state changed the table")
	}
}
