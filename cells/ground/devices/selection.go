package devices

import (
	"fmt"
	"net"
	"regexp"
	"strings"

	"github.com/heraldlb/herald/tables"
)

// Reasons a device is not selected, as shown in the devices table.
const (
	reasonLoopback        = "loopback"
	reasonNoMAC           = "no hardware address"
	reasonNotMatched      = "not matched by --devices"
	reasonDown            = "down"
	reasonNoGlobalUnicast = "no global unicast address"
	reasonEnslavedFormat  = "enslaved to %s"
)

// patterns are the compiled --devices entries; nil means "not given".
type patterns []*regexp.Regexp

// parsePatterns compiles the --devices entries. Each matches the whole
// device name, so "eth0" is exactly eth0 and "eth[0-9]+" is eth0, eth12...
func parsePatterns(entries []string) (patterns, error) {
	var out patterns
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if _, err := regexp.Compile(e); err != nil {
			return nil, fmt.Errorf("devices: invalid pattern %q: %w", e, err)
		}
		out = append(out, regexp.MustCompile(`^(?:`+e+`)$`))
	}
	return out, nil
}

func (p patterns) match(name string) bool {
	for _, re := range p {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

// selectDevice decides whether the agent uses the device. master is the
// name of the device's master (bridge, bond) if it has one. The rules, in
// order:
//   - loopback devices and devices without a MAC (tun, ip tunnels) never;
//   - with --devices, only the devices it matches;
//   - never ports of a bridge or bond (the master is the one to use);
//   - never devices that are down (they stay listed);
//   - without --devices, only devices with a global unicast address.
func selectDevice(d *tables.Device, master string, pats patterns) (selected bool, reason string) {
	switch {
	case d.Flags&net.FlagLoopback != 0:
		return false, reasonLoopback
	case !hasMAC(d.HWAddr):
		return false, reasonNoMAC
	case len(pats) > 0 && !pats.match(d.Name):
		return false, reasonNotMatched
	case d.MasterIndex != 0:
		return false, fmt.Sprintf(reasonEnslavedFormat, master)
	case d.Flags&net.FlagUp == 0:
		return false, reasonDown
	case len(pats) == 0 && !d.HasGlobalUnicastAddr():
		return false, reasonNoGlobalUnicast
	}
	return true, ""
}

// hasMAC reports whether the device has an Ethernet address. Devices
// without one (tun, lo) cannot answer ARP or NDP; nor can IP tunnels, whose
// "hardware address" is their IP address.
func hasMAC(a tables.HardwareAddr) bool {
	return len(a) == 6 && !a.IsZero()
}
