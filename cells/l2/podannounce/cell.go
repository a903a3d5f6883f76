// Package podannounce is L2 pod announcements: every IPv4 address the
// node IPAM gives a pod of this node is announced once, when it is
// allocated, with a gratuitous ARP reply on one configured interface,
// carrying that interface's MAC. Neighbours that still hold the address
// in their ARP cache (it lived elsewhere before) update it at once.
// IPv6 addresses are not announced: the spec sends ARP only, no
// unsolicited Neighbor Advertisements.
//
// Reads: table pod-ip-allocations (its changes, as they come) and table
// devices (the interface, by name: ifindex, MAC, up or down).
// Writes: gratuitous ARP packets; the counter
// herald_l2_pod_gratuitous_arps_total.
//
// Config: enable-l2-pod-announcements and l2-pod-announcements-interface;
// on without an interface stops the agent at start. While on, it asks the
// devices cell for the device table (tables.DeviceNeed). Only pods of multi-pool IPAM have
// their addresses in pod-ip-allocations: without ipam: multi-pool the cell
// logs a warning and does nothing.
//
// Not announced again: addresses restored from the journal when the agent
// restarts, nor when the interface comes back (as in Cilium). An
// announcement that could not go out (interface missing, down, or the
// send failed) waits and is retried until it does or the address is
// released.
package podannounce

import (
	"fmt"

	"github.com/cilium/hive/cell"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/tables"
)

// Config of L2 pod announcements.
type Config struct {
	// EnableL2PodAnnouncements sends a gratuitous ARP for every pod
	// address this node allocates.
	EnableL2PodAnnouncements bool // enable-l2-pod-announcements
	// L2PodAnnouncementsInterface is the name of the interface the
	// announcements go out on, with its MAC.
	L2PodAnnouncementsInterface string // l2-pod-announcements-interface
}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.Bool("enable-l2-pod-announcements", def.EnableL2PodAnnouncements, "Announce the IPv4 addresses of this node's pods with gratuitous ARP on l2-pod-announcements-interface (with ipam: multi-pool)")
	flags.String("l2-pod-announcements-interface", def.L2PodAnnouncementsInterface,
		"Interface the gratuitous ARP of enable-l2-pod-announcements goes out on, with its MAC address (e.g. eth0)")
}

// validate checks the interface, given that the feature is on: the spec
// has no default interface, and guessing one could announce pod addresses
// on the wrong network.
func (c Config) validate() error {
	if c.L2PodAnnouncementsInterface == "" {
		return fmt.Errorf("l2-pod-announcements-interface must name the interface to announce pod addresses on (e.g. eth0) when enable-l2-pod-announcements is true")
	}
	return nil
}

var Cell = cell.Module(
	"l2-pod-announce",
	"Gratuitous ARP for the addresses of the pods of this node",

	cell.Config(Config{}),
	cell.Provide(needDevices),
	cell.Invoke(register),
)

// needDevices asks for the device table while the feature is on: the
// interface is found there by name.
func needDevices(c Config) (out struct {
	cell.Out
	Need tables.DeviceNeed `group:"device-needs"`
}) {
	out.Need = tables.DeviceNeed{By: "l2-pod-announcements", Needed: c.EnableL2PodAnnouncements}
	return out
}
