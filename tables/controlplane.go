package tables

import (
	"fmt"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
)

// The tables of the control-plane VIP mode (herald-agent
// control-plane-vip): whether the local API server makes this node
// eligible, how this node sees the other control-plane nodes, and what
// the election decided.

const (
	ControlPlaneReadinessTableName = "control-plane-readiness"
	ControlPlaneMembersTableName   = "control-plane-members"
	ControlPlaneVIPTableName       = "control-plane-vip"
)

// ControlPlaneReadiness is this node's eligibility: its kube-apiserver's
// /readyz, judged with the thresholds, and its VIPs on local subnets.
type ControlPlaneReadiness struct {
	Node     string    `json:"node"`
	Eligible bool      `json:"eligible"`
	Since    time.Time `json:"since"`
	// Reason says why it is not eligible, or what the last probe said.
	Reason string `json:"reason"`
}

func (r *ControlPlaneReadiness) TableHeader() []string {
	return []string{"Node", "Eligible", "Since", "Reason"}
}

func (r *ControlPlaneReadiness) TableRow() []string {
	return []string{r.Node, fmt.Sprint(r.Eligible), r.Since.UTC().Format(time.RFC3339Nano), r.Reason}
}

var ControlPlaneReadinessNodeIndex = statedb.Index[*ControlPlaneReadiness, string]{
	Name:       "node",
	FromObject: func(r *ControlPlaneReadiness) index.KeySet { return index.NewKeySet(index.String(r.Node)) },
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

func NewControlPlaneReadinessTable(db *statedb.DB) (statedb.RWTable[*ControlPlaneReadiness], error) {
	return statedb.NewTable(db, ControlPlaneReadinessTableName, ControlPlaneReadinessNodeIndex)
}

// ControlPlaneMember is another control-plane node as this one hears it.
type ControlPlaneMember struct {
	Node     string `json:"node"`
	Addr     string `json:"addr"`
	Present  bool   `json:"present"` // heard within the presence window
	Eligible bool   `json:"eligible"`
	Owning   bool   `json:"owning"`
	// LastHeard is when its last beat arrived (zero: never); while it is
	// present, refreshed once a second only.
	LastHeard time.Time `json:"lastHeard"`
	// Mismatch, when set, says how its configuration differs: it takes no
	// part in this node's election.
	Mismatch string `json:"mismatch,omitempty"`
}

func (m *ControlPlaneMember) TableHeader() []string {
	return []string{"Node", "Addr", "Present", "Eligible", "Owning", "LastHeard", "Mismatch"}
}

func (m *ControlPlaneMember) TableRow() []string {
	heard := "never"
	if !m.LastHeard.IsZero() {
		heard = m.LastHeard.UTC().Format(time.RFC3339Nano)
	}
	return []string{m.Node, m.Addr, fmt.Sprint(m.Present), fmt.Sprint(m.Eligible), fmt.Sprint(m.Owning), heard, m.Mismatch}
}

var ControlPlaneMemberNodeIndex = statedb.Index[*ControlPlaneMember, string]{
	Name:       "node",
	FromObject: func(m *ControlPlaneMember) index.KeySet { return index.NewKeySet(index.String(m.Node)) },
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

func NewControlPlaneMembersTable(db *statedb.DB) (statedb.RWTable[*ControlPlaneMember], error) {
	return statedb.NewTable(db, ControlPlaneMembersTableName, ControlPlaneMemberNodeIndex)
}

// ControlPlaneVIP is what this node's election decided: the one row
// herald-dbg shows to answer "who owns the VIP, and why not this node?".
type ControlPlaneVIP struct {
	Node string `json:"node"`
	// Preferred is the node this one wants to own the VIPs (it votes for
	// it); empty while no node may.
	Preferred string `json:"preferred"`
	// Answering: this node's responder answers for the VIPs.
	Answering bool      `json:"answering"`
	Until     time.Time `json:"until"` // the fence deadline while answering
	// Grantee is the node this one granted last, and when.
	Grantee   string    `json:"grantee"`
	GrantedAt time.Time `json:"grantedAt"`
	// Why says why this node answers or not, in words.
	Why string `json:"why"`
}

func (v *ControlPlaneVIP) TableHeader() []string {
	return []string{"Node", "Preferred", "Answering", "Until", "Grantee", "Why"}
}

func (v *ControlPlaneVIP) TableRow() []string {
	until := "-"
	if !v.Until.IsZero() {
		until = v.Until.UTC().Format(time.RFC3339Nano)
	}
	return []string{v.Node, v.Preferred, fmt.Sprint(v.Answering), until, v.Grantee, v.Why}
}

var ControlPlaneVIPNodeIndex = statedb.Index[*ControlPlaneVIP, string]{
	Name:       "node",
	FromObject: func(v *ControlPlaneVIP) index.KeySet { return index.NewKeySet(index.String(v.Node)) },
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

func NewControlPlaneVIPTable(db *statedb.DB) (statedb.RWTable[*ControlPlaneVIP], error) {
	return statedb.NewTable(db, ControlPlaneVIPTableName, ControlPlaneVIPNodeIndex)
}
