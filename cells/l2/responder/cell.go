// Package responder answers ARP (IPv4) and Neighbor Solicitations (IPv6)
// for the entries of the l2-announce table from an eBPF program attached to
// every selected device, sends gratuitous ARP or an unsolicited Neighbor
// Advertisement when this node takes an IP over (or a device comes up),
// keeps the host in the solicited-node multicast groups of its IPv6
// entries, and keeps a heartbeat deadline the program checks: it answers
// only until this node's stalest Lease could have passed to another node,
// so a frozen or cut-off agent stops attracting traffic before anyone else
// takes its IPs.
//
// Reads: tables l2-announce, l2-lease-health and devices.
// Writes: the BPF maps l2_responder_v4, l2_responder_v6 and
// l2_responder_config (pinned under <bpf-root>/herald), program
// attachments, multicast memberships, ARP/NDP probes before a new address
// is answered for, gratuitous ARP and Neighbor Advertisement packets; the
// entries' reconciliation status in l2-announce; a Warning Event
// (L2AddressConflict) on the Services whose IP another host uses.
package responder

import (
	"fmt"

	"github.com/cilium/hive/cell"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/bpf"
)

// Config of the responder.
type Config struct {
	// L2ResponderMode is the hook: "tcx" (tc ingress) or "xdp".
	L2ResponderMode string // l2-responder-mode
	// BPFRoot is where bpffs is (mounted there when missing).
	BPFRoot string // bpf-root
}

var defaultConfig = Config{L2ResponderMode: string(bpf.ModeTCX), BPFRoot: bpf.DefaultBPFFSRoot}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.String("l2-responder-mode", def.L2ResponderMode, `Where the ARP responder runs: "tcx" (tc ingress) or "xdp"`)
	flags.String("bpf-root", def.BPFRoot, "Mount point of the BPF filesystem; the responder's maps are pinned under <bpf-root>/herald (<bpf-root>/herald-control-plane for control-plane-vip)")
}

func (c Config) validate() error {
	switch bpf.Mode(c.L2ResponderMode) {
	case bpf.ModeTCX, bpf.ModeXDP:
		return nil
	}
	return fmt.Errorf(`l2-responder-mode: %q is not "tcx" or "xdp"`, c.L2ResponderMode)
}

// AgentPinDir is where under bpf-root the agent's responder pins its maps.
const AgentPinDir = "herald"

// Cell is the L2 announcements' responder, its maps pinned under
// <bpf-root>/herald.
var Cell = NewCell(AgentPinDir)

// NewCell returns a responder whose maps are pinned under <bpf-root>/<pin>:
// the control-plane VIP agent runs one of its own beside the agent's, on
// the same devices, with maps of its own.
func NewCell(pin string) cell.Cell {
	return cell.Module(
		"l2-responder",
		"Answers ARP for announced IPs from eBPF",

		cell.Config(defaultConfig),
		cell.ProvidePrivate(func() pinDir { return pinDir(pin) }),
		cell.Provide(shellCommand),
		cell.Invoke(registerResponder),
	)
}

// pinDir is the directory under bpf-root the maps are pinned in.
type pinDir string
