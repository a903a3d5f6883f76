package tables

import (
	"fmt"
	"reflect"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BGPResourceStatusTableName is the table of what the conditions of each
// cluster-wide BGP resource should say.
const BGPResourceStatusTableName = "bgp-resource-status"

// BGPResourceStatus is one CiliumBGPClusterConfig, CiliumBGPPeerConfig or
// CiliumBGPAdvertisement: its problems, and the conditions it shows now;
// the bgp-status cell reconciles the two into the object's status.
type BGPResourceStatus struct {
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	Generation int64  `json:"generation"`
	// Conditions are the object's as last reflected: a change by anyone
	// makes the row differ, and be reconciled again.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	Problems   []BGPProblem       `json:"problems"`

	Status reconciler.Status `json:"status"`
}

// BGPProblem is one condition Herald owns on a BGP resource: True with
// the message while there is one, False ("") once resolved.
type BGPProblem struct {
	Type    string `json:"type"`
	Message string `json:"message,omitempty"`
}

// Key is "<kind>/<name>".
func (s *BGPResourceStatus) Key() string { return s.Kind + "/" + s.Name }

// Same reports whether b asks for the same as s (the reconciliation
// status aside).
func (s *BGPResourceStatus) Same(b *BGPResourceStatus) bool {
	x, y := *s, *b
	x.Status, y.Status = reconciler.Status{}, reconciler.Status{}
	return reflect.DeepEqual(x, y)
}

func (s *BGPResourceStatus) Clone() *BGPResourceStatus { c := *s; return &c }

func (s *BGPResourceStatus) GetStatus() reconciler.Status { return s.Status }

func (s *BGPResourceStatus) SetStatus(st reconciler.Status) *BGPResourceStatus {
	s.Status = st
	return s
}

func (s *BGPResourceStatus) TableHeader() []string {
	return []string{"Kind", "Name", "Problems", "Status"}
}

func (s *BGPResourceStatus) TableRow() []string {
	problems := 0
	for _, p := range s.Problems {
		if p.Message != "" {
			problems++
		}
	}
	return []string{s.Kind, s.Name, fmt.Sprint(problems), s.Status.String()}
}

// BGPResourceStatusKeyIndex is the primary index: Key().
var BGPResourceStatusKeyIndex = nameIndex((*BGPResourceStatus).Key)

// NewBGPResourceStatusTable creates the bgp-resource-status table.
func NewBGPResourceStatusTable(db *statedb.DB) (statedb.RWTable[*BGPResourceStatus], error) {
	return statedb.NewTable(db, BGPResourceStatusTableName, BGPResourceStatusKeyIndex)
}
