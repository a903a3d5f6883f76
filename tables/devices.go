package tables

import (
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
)

// DevicesTableName is the table of the node's network devices, as the
// kernel reports them, with the agent's choice of which ones to use.
const DevicesTableName = "devices"

// Device is one network device (link) of the agent's network namespace.
//
// Rows are immutable once inserted: derive a changed copy with Clone.
type Device struct {
	// Index is the kernel's ifindex; the primary key.
	Index int    `json:"index"`
	Name  string `json:"name"`
	// Type is the netlink link type: "veth", "device" (physical devices and
	// lo), "bridge", "vxlan", ...
	Type string `json:"type"`
	MTU  int    `json:"mtu"`
	// HWAddr is the MAC address; empty for devices without one (tun, ip
	// tunnels, lo).
	HWAddr HardwareAddr `json:"hwAddr,omitempty"`
	// Flags are the interface flags (up, broadcast, loopback, ...).
	Flags net.Flags `json:"flags"`
	// OperStatus is the RFC 2863 operational state: "up", "down",
	// "lower-layer-down", "unknown", ...
	OperStatus string `json:"operStatus"`
	// MasterIndex is the ifindex of the bridge or bond the device is a
	// port of; 0 if none.
	MasterIndex int `json:"masterIndex,omitempty"`
	// Addresses of the device, sorted (IPv4 first).
	Addresses []DeviceAddress `json:"addresses,omitempty"`

	// Selected is true if the agent uses the device (L2 announcements).
	Selected bool `json:"selected"`
	// NotSelectedReason says why Selected is false.
	NotSelectedReason string `json:"notSelectedReason,omitempty"`
}

// DeviceAddress is an address assigned to a device.
type DeviceAddress struct {
	Addr netip.Addr `json:"addr"`
	// Scope is the kernel's address scope (RT_SCOPE_*): 0 universe
	// (global), 200 site, 253 link, 254 host.
	Scope uint8 `json:"scope"`
	// PrefixLen is the length of the address's subnet prefix: the subnet
	// on the device's link.
	PrefixLen int `json:"prefixLen,omitempty"`
}

// Subnet is the address's subnet (its prefix, masked).
func (a DeviceAddress) Subnet() netip.Prefix {
	return netip.PrefixFrom(a.Addr, a.PrefixLen).Masked()
}

// ScopeUniverse is the scope of globally valid addresses (RT_SCOPE_UNIVERSE).
const ScopeUniverse uint8 = 0

// HardwareAddr is a MAC address that reads and writes as text
// ("02:42:ac:13:00:03") in JSON and YAML, not as base64 bytes.
type HardwareAddr net.HardwareAddr

func (a HardwareAddr) String() string { return net.HardwareAddr(a).String() }

func (a HardwareAddr) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

func (a *HardwareAddr) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*a = nil
		return nil
	}
	mac, err := net.ParseMAC(string(text))
	if err != nil {
		return err
	}
	*a = HardwareAddr(mac)
	return nil
}

// IsZero reports whether there is no hardware address: none at all, or the
// all-zero one the kernel gives lo.
func (a HardwareAddr) IsZero() bool {
	for _, b := range a {
		if b != 0 {
			return false
		}
	}
	return true
}

// HasGlobalUnicastAddr reports whether the device has a global unicast
// address (IPv4 or IPv6, private ranges included) of global scope.
func (d *Device) HasGlobalUnicastAddr() bool {
	for _, a := range d.Addresses {
		if a.Scope == ScopeUniverse && a.Addr.IsGlobalUnicast() {
			return true
		}
	}
	return false
}

// Clone returns a copy that shares nothing mutable with d.
func (d *Device) Clone() *Device {
	d2 := *d
	d2.HWAddr = slices.Clone(d.HWAddr)
	d2.Addresses = slices.Clone(d.Addresses)
	return &d2
}

// Equal reports whether two rows have the same content.
func (d *Device) Equal(o *Device) bool {
	return d.Index == o.Index && d.Name == o.Name && d.Type == o.Type && d.MTU == o.MTU &&
		slices.Equal(d.HWAddr, o.HWAddr) && d.Flags == o.Flags && d.OperStatus == o.OperStatus &&
		d.MasterIndex == o.MasterIndex && slices.Equal(d.Addresses, o.Addresses) &&
		d.Selected == o.Selected && d.NotSelectedReason == o.NotSelectedReason
}

func (d *Device) TableHeader() []string {
	// Cilium's columns, then why a device is not selected (the first
	// thing to ask when an IP is not announced on it).
	return []string{"Name", "Index", "Selected", "Type", "MTU", "HWAddr", "Flags", "Addresses", "NotSelectedReason"}
}

func (d *Device) TableRow() []string {
	addrs := make([]string, 0, len(d.Addresses))
	for _, a := range d.Addresses {
		addrs = append(addrs, a.Addr.String())
	}
	hw := ""
	if len(d.HWAddr) > 0 {
		hw = d.HWAddr.String()
	}
	flags := ""
	if d.Flags != 0 {
		flags = d.Flags.String()
	}
	return []string{
		d.Name,
		strconv.Itoa(d.Index),
		strconv.FormatBool(d.Selected),
		d.Type,
		strconv.Itoa(d.MTU),
		hw,
		flags,
		strings.Join(addrs, ", "),
		d.NotSelectedReason,
	}
}

// DeviceIndexIndex is the primary index of devices: the ifindex.
var DeviceIndexIndex = statedb.Index[*Device, int]{
	Name: "id",
	FromObject: func(d *Device) index.KeySet {
		return index.NewKeySet(index.Int(d.Index))
	},
	FromKey:    index.Int,
	FromString: index.IntString,
	Unique:     true,
}

// DeviceNameIndex finds a device by name (`db/get -i name devices eth0`).
var DeviceNameIndex = statedb.Index[*Device, string]{
	Name: "name",
	FromObject: func(d *Device) index.KeySet {
		return index.NewKeySet(index.String(d.Name))
	},
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// NewDevicesTable creates the devices table.
func NewDevicesTable(db *statedb.DB) (statedb.RWTable[*Device], error) {
	return statedb.NewTable(db, DevicesTableName, DeviceIndexIndex, DeviceNameIndex)
}
