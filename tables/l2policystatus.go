package tables

import (
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
	"github.com/cilium/statedb/reconciler"
)

// L2PolicyStatusTableName is the table of what each
// CiliumL2AnnouncementPolicy's status should say about its own fields.
const L2PolicyStatusTableName = "l2-policy-status"

// L2PolicyStatus is the parse errors of one policy's fields, which its
// status conditions io.cilium/bad-service-selector,
// io.cilium/bad-node-selector and io.cilium/bad-interface-regex report.
type L2PolicyStatus struct {
	Policy               string `json:"policy"`
	UID                  string `json:"uid"`
	Generation           int64  `json:"generation"`
	ServiceSelectorError string `json:"serviceSelectorError,omitempty"`
	NodeSelectorError    string `json:"nodeSelectorError,omitempty"`
	InterfaceError       string `json:"interfaceError,omitempty"`

	Status reconciler.Status `json:"status"`
}

// L2PolicyStatusOf is the row for a policy.
func L2PolicyStatusOf(p *L2Policy) *L2PolicyStatus {
	return &L2PolicyStatus{Policy: p.Name, UID: p.UID, Generation: p.Generation,
		ServiceSelectorError: p.ServiceSelectorError, NodeSelectorError: p.NodeSelectorError, InterfaceError: p.InterfaceError}
}

// Same reports whether b asks for the same status as s.
func (s *L2PolicyStatus) Same(b *L2PolicyStatus) bool {
	return s.Policy == b.Policy && s.UID == b.UID && s.Generation == b.Generation &&
		s.ServiceSelectorError == b.ServiceSelectorError && s.NodeSelectorError == b.NodeSelectorError && s.InterfaceError == b.InterfaceError
}

func (s *L2PolicyStatus) Clone() *L2PolicyStatus { c := *s; return &c }

func (s *L2PolicyStatus) GetStatus() reconciler.Status { return s.Status }

func (s *L2PolicyStatus) SetStatus(st reconciler.Status) *L2PolicyStatus {
	s.Status = st
	return s
}

func (s *L2PolicyStatus) TableHeader() []string {
	return []string{"Policy", "ServiceSelectorError", "NodeSelectorError", "InterfaceError", "Status"}
}

func (s *L2PolicyStatus) TableRow() []string {
	return []string{s.Policy, dash(s.ServiceSelectorError), dash(s.NodeSelectorError), dash(s.InterfaceError), s.Status.String()}
}

// L2PolicyStatusIndex is the primary index.
var L2PolicyStatusIndex = statedb.Index[*L2PolicyStatus, string]{
	Name: "policy",
	FromObject: func(s *L2PolicyStatus) index.KeySet {
		return index.NewKeySet(index.String(s.Policy))
	},
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// NewL2PolicyStatusTable creates the l2-policy-status table.
func NewL2PolicyStatusTable(db *statedb.DB) (statedb.RWTable[*L2PolicyStatus], error) {
	return statedb.NewTable(db, L2PolicyStatusTableName, L2PolicyStatusIndex)
}
