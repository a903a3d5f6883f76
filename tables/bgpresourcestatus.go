package tables

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// BGPResourceStatusTableName is the table of what the conditions of each
// cluster-wide BGP resource should say.
const BGPResourceStatusTableName = "bgp-resource-status"

// BGPResourceStatus is one CiliumBGPClusterConfig, CiliumBGPPeerConfig or
// CiliumBGPAdvertisement: the conditions it should show, and those it shows now;
// the bgp-status cell reconciles the two into the object's status.
type BGPResourceStatus struct {
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	Generation int64  `json:"generation"`
	// Conditions are the object's as last reflected: a change by anyone
	// makes the row differ, and be reconciled again.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Want are the conditions Herald keeps on the resource, each always
	// present as Cilium keeps its own (False while all is well). Empty
	// with enable-bgp-control-plane-status-report off: the types of
	// BGPManagedConditions are then removed, as Cilium's operator removes
	// its own.
	Want []BGPCondition `json:"want"`

	Status reconciler.Status `json:"status"`
}

// BGPCondition is one condition Herald keeps on a BGP resource.
type BGPCondition struct {
	Type    string `json:"type"`
	True    bool   `json:"true,omitempty"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
}

// BGPManagedConditions are the condition types Herald writes on a kind of
// BGP resource: Cilium's (cilium.io/v2alpha1's All*Conditions) and
// Herald's InvalidSpec; the others' are left alone.
func BGPManagedConditions(kind string) []string {
	switch kind {
	case v2alpha1.BGPClusterConfigKind:
		return append(slices.Clone(v2alpha1.AllBGPClusterConfigConditions), ConditionBGPInvalidSpec)
	case v2alpha1.BGPPeerConfigKind:
		return append(slices.Clone(v2alpha1.AllBGPPeerConfigConditions), ConditionBGPInvalidSpec)
	case v2alpha1.BGPAdvertisementKind:
		return []string{ConditionBGPInvalidSpec}
	}
	return nil
}

// Problems counts the conditions that are True.
func (s *BGPResourceStatus) Problems() int {
	n := 0
	for _, c := range s.Want {
		if c.True {
			n++
		}
	}
	return n
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
	return []string{s.Kind, s.Name, fmt.Sprint(s.Problems()), s.Status.String()}
}

// BGPResourceStatusKeyIndex is the primary index: Key().
var BGPResourceStatusKeyIndex = nameIndex((*BGPResourceStatus).Key)

// NewBGPResourceStatusTable creates the bgp-resource-status table.
func NewBGPResourceStatusTable(db *statedb.DB) (statedb.RWTable[*BGPResourceStatus], error) {
	return statedb.NewTable(db, BGPResourceStatusTableName, BGPResourceStatusKeyIndex)
}
