package tables

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
	"github.com/cilium/statedb/reconciler"
)

// PodCIDRDecisionsTableName is the table of the pod CIDR allocator's
// decisions, one per CiliumNode; a reconciler writes them to the
// CiliumNodes.
const PodCIDRDecisionsTableName = "pod-cidr-decisions"

// PodIPAMLease is the Lease the pod CIDR allocator holds.
const PodIPAMLease = "herald-pod-ipam"

// PodCIDRDecision is what the allocator wants on one CiliumNode: CIDRs to
// add to spec.ipam.pools.allocated (the node's agent removes those it
// releases), the text of status.ipam.operator-status.error, or, for a node
// whose Node is gone, the CiliumNode's deletion.
type PodCIDRDecision struct {
	Node  string      `json:"node"`
	Add   []PoolCIDRs `json:"add,omitempty"`
	Error string      `json:"error,omitempty"`
	// Delete: the Node is gone; the CiliumNode is deleted, which frees its
	// CIDRs (what Kubernetes' garbage collector does through the owner
	// reference where kube-controller-manager runs).
	Delete bool `json:"delete,omitempty"`
	// UID of the CiliumNode decided upon: a decision is never applied to a
	// newer object of the same name.
	UID  string `json:"uid"`
	Term uint64 `json:"term"`

	Status reconciler.Status `json:"status"`
}

// Adds reports whether the decision adds p under pool.
func (d *PodCIDRDecision) Adds(pool string, p netip.Prefix) bool {
	for _, a := range d.Add {
		if a.Pool == pool {
			for _, c := range a.CIDRs {
				if c == p {
					return true
				}
			}
		}
	}
	return false
}

// SameDecision compares everything but the reconciliation status.
func (d *PodCIDRDecision) SameDecision(o *PodCIDRDecision) bool {
	if d.Node != o.Node || d.Error != o.Error || d.Delete != o.Delete || d.UID != o.UID || len(d.Add) != len(o.Add) {
		return false
	}
	for i := range d.Add {
		if d.Add[i].Pool != o.Add[i].Pool || len(d.Add[i].CIDRs) != len(o.Add[i].CIDRs) {
			return false
		}
		for j := range d.Add[i].CIDRs {
			if d.Add[i].CIDRs[j] != o.Add[i].CIDRs[j] {
				return false
			}
		}
	}
	return true
}

func (d *PodCIDRDecision) Clone() *PodCIDRDecision { c := *d; return &c }

func (d *PodCIDRDecision) GetStatus() reconciler.Status { return d.Status }

func (d *PodCIDRDecision) SetStatus(s reconciler.Status) *PodCIDRDecision {
	d.Status = s
	return d
}

func (d *PodCIDRDecision) TableHeader() []string {
	return []string{"Node", "Add", "Delete", "Error", "Status"}
}

func (d *PodCIDRDecision) TableRow() []string {
	var add []string
	for _, a := range d.Add {
		for _, c := range a.CIDRs {
			add = append(add, fmt.Sprintf("%s (%s)", c, a.Pool))
		}
	}
	return []string{d.Node, dash(strings.Join(add, ", ")), fmt.Sprint(d.Delete), dash(d.Error), d.Status.Kind.String()}
}

// PodCIDRDecisionNodeIndex is the primary index: the node's name.
var PodCIDRDecisionNodeIndex = statedb.Index[*PodCIDRDecision, string]{
	Name: "node",
	FromObject: func(d *PodCIDRDecision) index.KeySet {
		return index.NewKeySet(index.String(d.Node))
	},
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// NewPodCIDRDecisionsTable creates the pod-cidr-decisions table.
func NewPodCIDRDecisionsTable(db *statedb.DB) (statedb.RWTable[*PodCIDRDecision], error) {
	return statedb.NewTable(db, PodCIDRDecisionsTableName, PodCIDRDecisionNodeIndex)
}
