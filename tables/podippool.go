package tables

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// PodIPPoolsTableName is the table of CiliumPodIPPools.
const PodIPPoolsTableName = "pod-ip-pools"

// PodIPPoolFinalizer keeps a pool that nodes still hold CIDRs of from being
// deleted; the pod CIDR allocator removes it once no node holds any.
const PodIPPoolFinalizer = "cilium.io/pod-ip-pool-in-use"

// PodPoolFamily is one family of a pool: its CIDRs and the size of the
// CIDRs nodes get from them.
type PodPoolFamily struct {
	CIDRs    []netip.Prefix `json:"cidrs"`
	MaskSize int            `json:"maskSize"`
}

// PodIPPool is a CiliumPodIPPool with its CIDRs parsed.
type PodIPPool struct {
	Name              string    `json:"name"`
	UID               string    `json:"uid"`
	ResourceVersion   string    `json:"resourceVersion"`
	Generation        int64     `json:"generation"`
	CreationTimestamp time.Time `json:"creationTimestamp"`
	// Deleting: the pool has a deletionTimestamp; no node gets new CIDRs
	// from it and it goes once nodes released theirs.
	Deleting   bool     `json:"deleting,omitempty"`
	Finalizers []string `json:"finalizers,omitempty"`
	// Labels are what BGP advertisements of type CiliumPodIPPool select.
	Labels map[string]string `json:"labels,omitempty"`

	IPv4 *PodPoolFamily `json:"ipv4,omitempty"`
	IPv6 *PodPoolFamily `json:"ipv6,omitempty"`
	// SpecErrors lists what does not parse or does not fit (a CIDR of the
	// wrong family, a mask shorter than a CIDR); the API server's schema
	// rejects these first, except on objects stored before it did.
	SpecErrors []string `json:"specErrors,omitempty"`

	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// StatusIPv4 and StatusIPv6 are the counts in the pool's status.
	StatusIPv4 *PodPoolFamilyStatus `json:"statusIPv4,omitempty"`
	StatusIPv6 *PodPoolFamilyStatus `json:"statusIPv6,omitempty"`
}

// Family returns the pool's spec for a family (nil if it has none).
func (p *PodIPPool) Family(f Family) *PodPoolFamily {
	if f == IPv4 {
		return p.IPv4
	}
	return p.IPv6
}

// HasFinalizer reports whether the pool carries Herald's finalizer.
// SelectorLabels are the labels BGP advertisements of type CiliumPodIPPool
// match: the pool's own plus the special keys for its name and namespace,
// as Cilium adds them, so that a pool can be selected by name.
func (p *PodIPPool) SelectorLabels() map[string]string {
	l := make(map[string]string, len(p.Labels)+2)
	for k, v := range p.Labels {
		l[k] = v
	}
	l[LabelPodIPPoolName] = p.Name
	l[LabelPodIPPoolNamespace] = ""
	return l
}

func (p *PodIPPool) HasFinalizer() bool { return slices.Contains(p.Finalizers, PodIPPoolFinalizer) }

func (p *PodIPPool) TableHeader() []string {
	return []string{"Name", "IPv4", "IPv6", "Deleting", "Errors"}
}

func (p *PodIPPool) TableRow() []string {
	fam := func(f *PodPoolFamily) string {
		if f == nil {
			return "-"
		}
		cs := make([]string, len(f.CIDRs))
		for i, c := range f.CIDRs {
			cs[i] = c.String()
		}
		return fmt.Sprintf("%s /%d", strings.Join(cs, ","), f.MaskSize)
	}
	return []string{p.Name, fam(p.IPv4), fam(p.IPv6), fmt.Sprint(p.Deleting), dash(strings.Join(p.SpecErrors, "; "))}
}

// PodIPPoolNameIndex is the primary index of pod-ip-pools.
var PodIPPoolNameIndex = statedb.Index[*PodIPPool, string]{
	Name: "name",
	FromObject: func(p *PodIPPool) index.KeySet {
		return index.NewKeySet(index.String(p.Name))
	},
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// NewPodIPPoolsTable creates the pod-ip-pools table.
func NewPodIPPoolsTable(db *statedb.DB) (statedb.RWTable[*PodIPPool], error) {
	return statedb.NewTable(db, PodIPPoolsTableName, PodIPPoolNameIndex)
}

// parsePodPoolFamily parses one family of a pool spec. Bad CIDRs are
// reported and left out; the family stays usable with the others.
func parsePodPoolFamily(f Family, cidrs []string, mask int, path string) (*PodPoolFamily, []string) {
	out := &PodPoolFamily{MaskSize: mask}
	var errs []string
	bits := 32
	if f == IPv6 {
		bits = 128
	}
	if mask < 1 || mask > bits {
		errs = append(errs, fmt.Sprintf("%s.maskSize: %d is not between 1 and %d", path, mask, bits))
	}
	if why := PodCIDRMaskSizeProblem(f, mask); why != "" {
		errs = append(errs, fmt.Sprintf("%s.maskSize: %s. Nothing is allocated from the pool's %s CIDRs", path, why, f))
	}
	for i, s := range cidrs {
		p, err := netip.ParsePrefix(s)
		switch {
		case err != nil:
			errs = append(errs, fmt.Sprintf("%s.cidrs[%d]: %v", path, i, err))
			continue
		case FamilyOf(p.Addr()) != f || p.Addr().Is4In6():
			errs = append(errs, fmt.Sprintf("%s.cidrs[%d]: %s is not an %s CIDR", path, i, s, f))
			continue
		case p.Bits() > mask:
			errs = append(errs, fmt.Sprintf("%s.cidrs[%d]: %s is smaller than the maskSize /%d", path, i, s, mask))
			continue
		}
		out.CIDRs = append(out.CIDRs, p.Masked())
	}
	return out, errs
}

// PodIPPoolFromK8s converts a CiliumPodIPPool into a row.
func PodIPPoolFromK8s(p *v2alpha1.CiliumPodIPPool) *PodIPPool {
	out := &PodIPPool{
		Name: p.Name, UID: string(p.UID), ResourceVersion: p.ResourceVersion, Generation: p.Generation,
		CreationTimestamp: p.CreationTimestamp.Time, Deleting: p.DeletionTimestamp != nil,
		Finalizers: slices.Clone(p.Finalizers), Labels: maps(p.Labels), Conditions: slices.Clone(p.Status.Conditions),
		StatusIPv4: familyStatusFromK8s(p.Status.IPv4), StatusIPv6: familyStatusFromK8s(p.Status.IPv6),
	}
	if s := p.Spec.IPv4; s != nil {
		var errs []string
		out.IPv4, errs = parsePodPoolFamily(IPv4, poolCIDRStrings(s.CIDRs), int(s.MaskSize), "spec.ipv4")
		out.SpecErrors = append(out.SpecErrors, errs...)
	}
	if s := p.Spec.IPv6; s != nil {
		var errs []string
		out.IPv6, errs = parsePodPoolFamily(IPv6, poolCIDRStrings(s.CIDRs), int(s.MaskSize), "spec.ipv6")
		out.SpecErrors = append(out.SpecErrors, errs...)
	}
	if out.IPv4 == nil && out.IPv6 == nil {
		out.SpecErrors = append(out.SpecErrors, "spec: neither ipv4 nor ipv6 is set")
	}
	return out
}

func poolCIDRStrings(cs []v2alpha1.PoolCIDR) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}

func familyStatusFromK8s(s *v2alpha1.PoolFamilyStatus) *PodPoolFamilyStatus {
	if s == nil {
		return nil
	}
	return &PodPoolFamilyStatus{CIDRsAllocated: s.CIDRsAllocated, CIDRsTotal: s.CIDRsTotal, AddressesInUse: s.AddressesInUse, Nodes: s.Nodes}
}
