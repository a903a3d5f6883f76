package tables

import (
	"encoding/json"
	"net"
	"net/netip"
	"slices"
	"testing"

	"github.com/cilium/statedb"
)

func devMAC(t *testing.T, s string) HardwareAddr {
	t.Helper()
	m, err := net.ParseMAC(s)
	if err != nil {
		t.Fatal(err)
	}
	return HardwareAddr(m)
}

func devAddrs(scope uint8, ss ...string) []DeviceAddress {
	out := make([]DeviceAddress, 0, len(ss))
	for _, s := range ss {
		out = append(out, DeviceAddress{Addr: netip.MustParseAddr(s), Scope: scope})
	}
	return out
}

func TestDeviceTableRow(t *testing.T) {
	const upBcastMcast = net.FlagUp | net.FlagBroadcast | net.FlagMulticast
	tests := []struct {
		name string
		dev  Device
		want []string
	}{
		{
			name: "selected veth with IPv4 and IPv6",
			dev: Device{
				Index: 50, Name: "eth0", Type: "veth", MTU: 1500,
				HWAddr:    devMAC(t, "02:42:ac:13:00:03"),
				Flags:     upBcastMcast,
				Addresses: append(devAddrs(0, "172.19.0.3", "fc00:c111::3"), devAddrs(253, "fe80::42:acff:fe13:3")...),
				Selected:  true,
			},
			want: []string{"eth0", "50", "true", "veth", "1500", "02:42:ac:13:00:03", "up|broadcast|multicast",
				"172.19.0.3, fc00:c111::3, fe80::42:acff:fe13:3", ""},
		},
		{
			name: "loopback without hardware address",
			dev: Device{
				Index: 1, Name: "lo", Type: "device", MTU: 65536,
				Flags:             net.FlagUp | net.FlagLoopback | net.FlagRunning,
				Addresses:         devAddrs(254, "127.0.0.1", "::1"),
				NotSelectedReason: "loopback",
			},
			want: []string{"lo", "1", "false", "device", "65536", "", "up|loopback|running", "127.0.0.1, ::1", "loopback"},
		},
		{
			name: "down device without addresses",
			dev: Device{
				Index: 4, Name: "cilium_vxlan", Type: "vxlan", MTU: 1450,
				HWAddr: devMAC(t, "2a:05:26:8d:79:9c"),
				Flags:  net.FlagBroadcast | net.FlagMulticast,
			},
			want: []string{"cilium_vxlan", "4", "false", "vxlan", "1450", "2a:05:26:8d:79:9c", "broadcast|multicast", "", ""},
		},
		{
			name: "no flags at all",
			dev:  Device{Index: 7, Name: "tun0", Type: "tuntap", MTU: 1500},
			want: []string{"tun0", "7", "false", "tuntap", "1500", "", "", "", ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.dev.TableRow()
			if !slices.Equal(got, tt.want) {
				t.Errorf("TableRow()\n got %q\nwant %q", got, tt.want)
			}
			if h := tt.dev.TableHeader(); len(h) != len(got) {
				t.Errorf("%d header columns, %d row columns", len(h), len(got))
			}
		})
	}
}

func TestDeviceTableHeader(t *testing.T) {
	want := []string{"Name", "Index", "Selected", "Type", "MTU", "HWAddr", "Flags", "Addresses", "NotSelectedReason"}
	if got := (&Device{}).TableHeader(); !slices.Equal(got, want) {
		t.Errorf("TableHeader() = %q, want %q", got, want)
	}
}

// herald-dbg decodes rows from JSON and renders them with TableRow.
func TestDeviceJSONRoundTrip(t *testing.T) {
	in := &Device{
		Index: 3, Name: "eth1", Type: "device", MTU: 9000,
		HWAddr:            devMAC(t, "52:54:00:12:34:56"),
		Flags:             net.FlagUp | net.FlagBroadcast | net.FlagMulticast | net.FlagRunning,
		OperStatus:        "up",
		MasterIndex:       9,
		Addresses:         append(devAddrs(0, "198.18.0.1", "fd00::1"), devAddrs(253, "fe80::1")...),
		NotSelectedReason: "enslaved to br0",
	}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m["hwAddr"] != "52:54:00:12:34:56" {
		t.Errorf("hwAddr encodes as %v, want the text form", m["hwAddr"])
	}
	var out Device
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if !in.Equal(&out) {
		t.Errorf("round trip changed the row:\n in %+v\nout %+v", in, out)
	}
	if !slices.Equal(in.TableRow(), out.TableRow()) {
		t.Errorf("round trip changed the rendering: %q vs %q", in.TableRow(), out.TableRow())
	}

	// Without a MAC the field is left out and reads back as none.
	data, err = json.Marshal(&Device{Index: 1, Name: "lo"})
	if err != nil {
		t.Fatal(err)
	}
	out = Device{}
	if err := json.Unmarshal(data, &out); err != nil || out.HWAddr != nil {
		t.Errorf("device without MAC: %s → %+v, %v", data, out, err)
	}
	if err := json.Unmarshal([]byte(`{"hwAddr":"zz"}`), &out); err == nil {
		t.Error("a malformed MAC decoded without error")
	}
}

func TestDeviceHasGlobalUnicastAddr(t *testing.T) {
	tests := []struct {
		name  string
		addrs []DeviceAddress
		want  bool
	}{
		{"none", nil, false},
		{"link-local only", devAddrs(253, "fe80::1", "169.254.0.1"), false},
		{"loopback", devAddrs(254, "127.0.0.1", "::1"), false},
		{"private IPv4", devAddrs(0, "198.18.5.1"), true},
		{"ULA IPv6", devAddrs(0, "fd00:5::1"), true},
		{"global address of host scope", devAddrs(254, "198.18.5.1"), false},
		{"multicast", devAddrs(0, "ff02::1"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &Device{Addresses: tt.addrs}
			if got := d.HasGlobalUnicastAddr(); got != tt.want {
				t.Errorf("HasGlobalUnicastAddr() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDeviceClone(t *testing.T) {
	d := &Device{Index: 2, Name: "eth0", HWAddr: HardwareAddr{2, 0, 0, 0, 0, 1}, Addresses: devAddrs(0, "198.18.0.1")}
	c := d.Clone()
	c.HWAddr[5] = 9
	c.Addresses[0].Addr = netip.MustParseAddr("198.18.0.2")
	if d.HWAddr[5] != 1 || d.Addresses[0].Addr != netip.MustParseAddr("198.18.0.1") {
		t.Errorf("Clone shares slices with the original: %+v", d)
	}
}

func TestDevicesTableIndexes(t *testing.T) {
	db := statedb.New()
	tbl, err := NewDevicesTable(db)
	if err != nil {
		t.Fatal(err)
	}
	wtxn := db.WriteTxn(tbl)
	for _, d := range []*Device{{Index: 1, Name: "lo"}, {Index: 5, Name: "eth0"}} {
		if _, _, err := tbl.Insert(wtxn, d); err != nil {
			t.Fatal(err)
		}
	}
	txn := wtxn.Commit()
	if d, _, ok := tbl.Get(txn, DeviceNameIndex.Query("eth0")); !ok || d.Index != 5 {
		t.Errorf("by name eth0: %+v, %v", d, ok)
	}
	if d, _, ok := tbl.Get(txn, DeviceIndexIndex.Query(1)); !ok || d.Name != "lo" {
		t.Errorf("by index 1: %+v, %v", d, ok)
	}
	if _, err := DeviceIndexIndex.FromString("5"); err != nil {
		t.Errorf("index FromString: %v", err)
	}
}
