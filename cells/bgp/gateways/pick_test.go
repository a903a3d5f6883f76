package gateways

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/heraldlb/herald/tables"
)

func TestPick(t *testing.T) {
	a := netip.MustParseAddr
	def := netip.Prefix{}
	for _, c := range []struct {
		name   string
		routes []route
		want   []*tables.BGPDefaultGateway
	}{
		{"none", nil, []*tables.BGPDefaultGateway{}},
		{"only connected routes", []route{{dst: netip.MustParsePrefix("198.18.44.0/24"), device: "eth0"}}, []*tables.BGPDefaultGateway{}},
		{"a non-default route with a gateway", []route{{dst: netip.MustParsePrefix("198.18.60.0/24"), gateway: a("198.18.44.2"), device: "eth0"}}, []*tables.BGPDefaultGateway{}},
		{"a default route without gateway (a device route)", []route{{dst: def, device: "tun0"}}, []*tables.BGPDefaultGateway{}},
		{"both families", []route{
			{dst: def, gateway: a("fd00:18:0:44::2"), device: "eth0", metric: 1024},
			{dst: netip.MustParsePrefix("0.0.0.0/0"), gateway: a("198.18.44.2"), device: "eth0"},
		}, []*tables.BGPDefaultGateway{
			{Family: "ipv4", Gateway: a("198.18.44.2"), Device: "eth0"},
			{Family: "ipv6", Gateway: a("fd00:18:0:44::2"), Device: "eth0", Metric: 1024},
		}},
		{"the lowest metric", []route{
			{dst: def, gateway: a("198.18.44.3"), device: "eth1", metric: 200},
			{dst: def, gateway: a("198.18.44.9"), device: "eth0", metric: 100},
		}, []*tables.BGPDefaultGateway{{Family: "ipv4", Gateway: a("198.18.44.9"), Device: "eth0", Metric: 100}}},
		{"equal metrics: the lowest gateway", []route{
			{dst: def, gateway: a("198.18.44.9"), device: "eth0"},
			{dst: def, gateway: a("198.18.44.3"), device: "eth1"},
		}, []*tables.BGPDefaultGateway{{Family: "ipv4", Gateway: a("198.18.44.3"), Device: "eth1"}}},
		{"a link-local gateway carries its device", []route{{dst: def, gateway: a("fe80::1"), device: "eth0"}},
			[]*tables.BGPDefaultGateway{{Family: "ipv6", Gateway: a("fe80::1").WithZone("eth0"), Device: "eth0"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := pick(c.routes); !reflect.DeepEqual(got, c.want) {
				t.Errorf("pick = %v, want %v", got, c.want)
			}
		})
	}
}
