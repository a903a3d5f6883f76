package tables

import (
	"net/netip"
	"reflect"
	"testing"
)

// Same compares every field: a row that differs in any one is written.
func TestL2OwnerSame(t *testing.T) {
	base := func() *L2Owner {
		return &L2Owner{Group: "g", IPs: []netip.Addr{netip.MustParseAddr("198.18.0.1")}, Owner: "node1",
			Holder: "node1/t1", Announced: true, Why: "held by this node"}
	}
	if n := reflect.TypeFor[L2Owner]().NumField(); n != 6 {
		t.Errorf("L2Owner has %d fields, Same compares 6: compare the new ones too", n)
	}
	if !base().Same(base()) {
		t.Fatal("a row is not the same as its copy")
	}
	for name, change := range map[string]func(*L2Owner){
		"group":     func(o *L2Owner) { o.Group = "h" },
		"ips":       func(o *L2Owner) { o.IPs = append(o.IPs, netip.MustParseAddr("fd00::1")) },
		"owner":     func(o *L2Owner) { o.Owner = "node2" },
		"holder":    func(o *L2Owner) { o.Holder = "node1/t2" },
		"announced": func(o *L2Owner) { o.Announced = false },
		"why":       func(o *L2Owner) { o.Why = "-" },
	} {
		b := base()
		change(b)
		if base().Same(b) || b.Same(base()) {
			t.Errorf("rows differing in %s are the same", name)
		}
	}
}
