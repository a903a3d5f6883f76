// Package devices keeps the table devices equal to the network devices
// of the agent's network namespace, and chooses the ones the agent uses
// (Selected): L2 announcements answer ARP/NDP on selected devices only.
// L2 pod announcements find their interface here by name, selected or not.
// Runs while a cell needs it (tables.DeviceNeed: L2 announcements, L2
// pod announcements or the BGP control plane on).
//
// Reads: netlink (links and addresses; the initial dump, then updates).
// Writes: table devices.
//
// Config: --devices, names or regular expressions (matching the whole
// name) of the devices to use. Empty selects every device that has a MAC
// address and a global unicast address.
package devices

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/tables"
)

// Config of the device table.
type Config struct {
	// Devices are the names or Go regular expressions (full match) of the
	// devices to use; empty means "devices with a MAC and a global
	// unicast address".
	Devices []string // devices
}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.StringSlice("devices", def.Devices,
		"Devices to use, as names or regular expressions matching the whole name (eth0, eth[0-9]+); "+
			"empty selects every device with a MAC address and a global unicast address")
}

// Cell watches the network namespace the agent runs in.
var Cell = module(currentNetNS)

// module assembles the cell around the network namespace to watch (a
// constructor of netNS); tests pass one they created.
func module(newNetNS any) cell.Cell {
	return cell.Module(
		"devices",
		"Network devices from netlink",

		cell.Config(Config{}),
		// Only this cell writes the table; others get Table[*tables.Device].
		cell.ProvidePrivate(tables.NewDevicesTable, newNetNS),
		cell.Provide(statedb.RWTable[*tables.Device].ToTable),
		cell.Invoke(registerWatcher),
	)
}
