package tables

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
	"github.com/cilium/statedb/reconciler"
)

// LBAllocationsTableName is the table of LB IPAM's decisions per Service.
const LBAllocationsTableName = "lb-allocations"

// AllocatedIP is one address given to a Service and the pool it came from.
type AllocatedIP struct {
	Addr netip.Addr `json:"addr"`
	Pool string     `json:"pool"`
}

// ReleasedIP is an address a Service lost in the latest decision, and why.
type ReleasedIP struct {
	Addr   netip.Addr `json:"addr"`
	Reason string     `json:"reason"`
}

// LBAllocation is what LB IPAM decided for one Service: the IPs it holds
// and the io.cilium/lb-ipam-request-satisfied condition. The service status
// reconciler makes the Service's status match it.
type LBAllocation struct {
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Generation int64  `json:"generation"`

	// Managed is false once the Service is no longer Herald's (type or class
	// changed): its IPs and condition are then removed from its status.
	Managed bool `json:"managed"`

	IPs       []AllocatedIP `json:"ips,omitempty"`
	Satisfied bool          `json:"satisfied"`
	Reason    string        `json:"reason,omitempty"`
	Message   string        `json:"message,omitempty"`
	// Disagreement is the message of the annotations-disagree condition:
	// which MetalLB annotations are overruled (by a Cilium one, or by
	// MetalLB's newer spelling). "" = none.
	Disagreement string `json:"disagreement,omitempty"`
	// Released lists what the latest decision took away, for Events.
	Released []ReleasedIP `json:"released,omitempty"`

	// Term is the LB IPAM leader's term this was decided in
	// (tables.Leadership): it is written only while that term lasts.
	Term uint64 `json:"term"`

	Status reconciler.Status `json:"status"`
}

// Key is the Service's "namespace/name".
func (a *LBAllocation) Key() string { return a.Namespace + "/" + a.Name }

// Addrs returns the allocated addresses in order.
func (a *LBAllocation) Addrs() []netip.Addr {
	out := make([]netip.Addr, len(a.IPs))
	for i, ip := range a.IPs {
		out[i] = ip.Addr
	}
	return out
}

// SameDecision reports whether b decides the same as a (ignoring status).
func (a *LBAllocation) SameDecision(b *LBAllocation) bool {
	if a.Managed != b.Managed || a.Satisfied != b.Satisfied || a.Reason != b.Reason ||
		a.Message != b.Message || a.Disagreement != b.Disagreement ||
		a.Generation != b.Generation || len(a.IPs) != len(b.IPs) ||
		len(a.Released) != len(b.Released) {
		return false
	}
	for i := range a.IPs {
		if a.IPs[i] != b.IPs[i] {
			return false
		}
	}
	for i := range a.Released {
		if a.Released[i] != b.Released[i] {
			return false
		}
	}
	return true
}

func (a *LBAllocation) Clone() *LBAllocation {
	b := *a
	return &b
}

func (a *LBAllocation) GetStatus() reconciler.Status { return a.Status }

func (a *LBAllocation) SetStatus(s reconciler.Status) *LBAllocation {
	a.Status = s
	return a
}

func (a *LBAllocation) TableHeader() []string {
	return []string{"Service", "IPs", "Satisfied", "Reason", "Message", "Status"}
}

func (a *LBAllocation) TableRow() []string {
	ips := make([]string, len(a.IPs))
	for i, ip := range a.IPs {
		ips[i] = fmt.Sprintf("%s (%s)", ip.Addr, ip.Pool)
	}
	satisfied := fmt.Sprint(a.Satisfied)
	if !a.Managed {
		satisfied = "unmanaged"
	}
	return []string{a.Key(), dash(strings.Join(ips, ", ")), satisfied, dash(a.Reason), dash(a.Message), a.Status.Kind.String()}
}

// LBAllocationKeyIndex is the primary index: the Service's "namespace/name".
var LBAllocationKeyIndex = statedb.Index[*LBAllocation, string]{
	Name: "key",
	FromObject: func(a *LBAllocation) index.KeySet {
		return index.NewKeySet(index.String(a.Key()))
	},
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// NewLBAllocationsTable creates the lb-allocations table.
func NewLBAllocationsTable(db *statedb.DB) (statedb.RWTable[*LBAllocation], error) {
	return statedb.NewTable(db, LBAllocationsTableName, LBAllocationKeyIndex)
}
