package tables

import (
	"fmt"
	"slices"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
	"github.com/cilium/statedb/reconciler"
)

// PodIPPoolStatusTableName is the table of the status the pod CIDR
// allocator computes for each CiliumPodIPPool.
const PodIPPoolStatusTableName = "pod-ip-pool-status"

// Condition types on CiliumPodIPPools (Herald's: Cilium's pools have no
// status). Each is absent until it first applies, True while it does, and
// False (reason resolved) after.
const (
	ConditionPodPoolConflict     = "cilium.io/PoolConflict"
	ConditionPodPoolExhausted    = "cilium.io/Exhausted"
	ConditionPodPoolRemovedInUse = "cilium.io/RemovedCIDRsInUse"
	ConditionPodPoolTerminating  = "cilium.io/Terminating"
	ConditionPodPoolClaimedTwice = "cilium.io/CIDRClaimedTwice"
	ConditionPodPoolInvalidSpec  = "cilium.io/InvalidSpec"
	ReasonPodPoolExhausted       = "exhausted"
	ReasonPodPoolInUse           = "in_use"
	ReasonPodPoolClaimedTwice    = "claimed_twice"
)

// PodPoolFamilyStatus counts one family of a pool.
type PodPoolFamilyStatus struct {
	CIDRsAllocated int32  `json:"cidrsAllocated"`
	CIDRsTotal     string `json:"cidrsTotal"`
	AddressesInUse int64  `json:"addressesInUse"`
	Nodes          int32  `json:"nodes"`
}

// PodIPPoolStatus is what the allocator wants on one pool: counts, the
// messages of its conditions ("" = does not apply) and whether it must keep
// its finalizer.
type PodIPPoolStatus struct {
	Name string `json:"name"`
	UID  string `json:"uid"`

	IPv4 *PodPoolFamilyStatus `json:"ipv4,omitempty"`
	IPv6 *PodPoolFamilyStatus `json:"ipv6,omitempty"`

	Conflict     string `json:"conflict,omitempty"`
	Exhausted    string `json:"exhausted,omitempty"`
	RemovedInUse string `json:"removedInUse,omitempty"`
	Terminating  string `json:"terminating,omitempty"`
	ClaimedTwice string `json:"claimedTwice,omitempty"`
	InvalidSpec  string `json:"invalidSpec,omitempty"`

	// InUse: some node holds a CIDR of the pool; the pool keeps its
	// finalizer while it is.
	InUse bool `json:"inUse"`

	Term   uint64            `json:"term"`
	Status reconciler.Status `json:"status"`
}

// SameStatus compares everything but Term and the reconciliation status.
func (s *PodIPPoolStatus) SameStatus(o *PodIPPoolStatus) bool {
	eq := func(a, b *PodPoolFamilyStatus) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	return s.Name == o.Name && s.UID == o.UID && eq(s.IPv4, o.IPv4) && eq(s.IPv6, o.IPv6) &&
		slices.Equal([]string{s.Conflict, s.Exhausted, s.RemovedInUse, s.Terminating, s.ClaimedTwice, s.InvalidSpec},
			[]string{o.Conflict, o.Exhausted, o.RemovedInUse, o.Terminating, o.ClaimedTwice, o.InvalidSpec}) &&
		s.InUse == o.InUse
}

func (s *PodIPPoolStatus) Clone() *PodIPPoolStatus { c := *s; return &c }

func (s *PodIPPoolStatus) GetStatus() reconciler.Status { return s.Status }

func (s *PodIPPoolStatus) SetStatus(st reconciler.Status) *PodIPPoolStatus {
	s.Status = st
	return s
}

func (s *PodIPPoolStatus) TableHeader() []string {
	return []string{"Name", "IPv4", "IPv6", "InUse", "Problems", "Status"}
}

func (s *PodIPPoolStatus) TableRow() []string {
	fam := func(f *PodPoolFamilyStatus) string {
		if f == nil {
			return "-"
		}
		return fmt.Sprintf("%d/%s CIDRs, %d addresses, %d nodes", f.CIDRsAllocated, f.CIDRsTotal, f.AddressesInUse, f.Nodes)
	}
	var problems []string
	for _, p := range []string{s.InvalidSpec, s.Conflict, s.ClaimedTwice, s.Exhausted, s.RemovedInUse, s.Terminating} {
		if p != "" {
			problems = append(problems, p)
		}
	}
	return []string{s.Name, fam(s.IPv4), fam(s.IPv6), fmt.Sprint(s.InUse), dash(joinSemi(problems)), s.Status.Kind.String()}
}

func joinSemi(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += "; "
		}
		out += s
	}
	return out
}

// PodIPPoolStatusNameIndex is the primary index: the pool's name.
var PodIPPoolStatusNameIndex = statedb.Index[*PodIPPoolStatus, string]{
	Name: "name",
	FromObject: func(s *PodIPPoolStatus) index.KeySet {
		return index.NewKeySet(index.String(s.Name))
	},
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// NewPodIPPoolStatusTable creates the pod-ip-pool-status table.
func NewPodIPPoolStatusTable(db *statedb.DB) (statedb.RWTable[*PodIPPoolStatus], error) {
	return statedb.NewTable(db, PodIPPoolStatusTableName, PodIPPoolStatusNameIndex)
}
