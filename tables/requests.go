package tables

import "github.com/cilium/hive/cell"

// Besides Reflection and Election, two more things a feature asks of
// others through value groups, so that no cell reads another feature's
// switch.

// DeviceNeed tells the devices cell whether a cell needs the devices
// table (value group "device-needs"): it watches netlink only while some
// cell does.
type DeviceNeed struct {
	By     string // who needs it, for the log
	Needed bool
}

// LBClass is a loadBalancerClass a feature serves (value group
// "lb-classes"): LB IPAM gives IPs to Services of that class only while a
// feature on asks for it.
type LBClass struct {
	Class string
}

// The classes of the spec's announcers.
const (
	LBClassL2Announcer = "io.cilium/l2-announcer"
	LBClassBGP         = "io.cilium/bgp-control-plane"
)

// LBClasses is what a feature's provider returns to ask for classes.
type LBClasses struct {
	cell.Out

	Classes []LBClass `group:"lb-classes,flatten"`
}
