package tables

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// LBPoolsTableName is the table of CiliumLoadBalancerIPPools.
const LBPoolsTableName = "lb-pools"

// LBPoolBlock is one block of a pool: a CIDR or a start/stop range, as the
// inclusive range [From, To].
type LBPoolBlock struct {
	// CIDR is the block's cidr as written; empty for start/stop blocks.
	CIDR string     `json:"cidr,omitempty"`
	From netip.Addr `json:"from"`
	To   netip.Addr `json:"to"`
}

// IsCIDR reports whether the block was given as a CIDR.
func (b LBPoolBlock) IsCIDR() bool { return b.CIDR != "" }

// Describe names the block the way conflict messages quote it.
func (b LBPoolBlock) Describe() string {
	if b.IsCIDR() {
		return fmt.Sprintf("CIDR '%s'", b.CIDR)
	}
	if b.From == b.To {
		return fmt.Sprintf("range '%s'", b.From)
	}
	return fmt.Sprintf("range '%s-%s'", b.From, b.To)
}

// Overlaps reports whether two blocks share an address.
func (b LBPoolBlock) Overlaps(o LBPoolBlock) bool {
	return b.From.BitLen() == o.From.BitLen() && !b.To.Less(o.From) && !o.To.Less(b.From)
}

// OverlapsPrefix reports whether the block shares an address with a CIDR
// (a CiliumPodIPPool's).
func (b LBPoolBlock) OverlapsPrefix(p netip.Prefix) bool {
	from, to := PrefixRange(p)
	return b.Overlaps(LBPoolBlock{From: from, To: to})
}

// LBPool is a CiliumLoadBalancerIPPool with its blocks and selector parsed.
type LBPool struct {
	Name              string    `json:"name"`
	UID               string    `json:"uid"`
	CreationTimestamp time.Time `json:"creationTimestamp"`
	Generation        int64     `json:"generation"`
	ResourceVersion   string    `json:"resourceVersion"`

	Blocks []LBPoolBlock `json:"blocks,omitempty"`
	// BlockErrors lists blocks that do not parse or whose start is after
	// their stop; such blocks are ignored (the pool keeps the others).
	BlockErrors []string `json:"blockErrors,omitempty"`

	AllowFirstLastIPs bool `json:"allowFirstLastIPs"`
	Disabled          bool `json:"disabled"`
	// Choice: reserved, priority (lbpoolchoice.go).
	Choice PoolChoice `json:"choice"`

	ServiceSelector *metav1.LabelSelector `json:"serviceSelector,omitempty"`
	// SelectorError is set when the selector is invalid (a key or value
	// that is no valid label key or value, an operator without values...):
	// such a pool selects no Service. It names the field and the rule.
	SelectorError string `json:"selectorError,omitempty"`
	selector      labels.Selector

	// Conditions are the pool's status conditions as last seen.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Selects reports whether the pool's service selector matches the Service.
func (p *LBPool) Selects(svc *Service) bool {
	if p.SelectorError != "" {
		return false
	}
	if p.selector == nil {
		sel, err := selectorFrom(p.ServiceSelector)
		if err != nil {
			return false
		}
		return sel.Matches(labels.Set(svc.SelectorLabels()))
	}
	return p.selector.Matches(labels.Set(svc.SelectorLabels()))
}

// SameSpec reports whether two rows of one pool describe the same pool for
// allocation: everything but the version and the status. LB IPAM writes the
// status of every pool it hands addresses out of, and each write comes back
// as a new row; only a new spec changes what can be allocated.
func (p *LBPool) SameSpec(o *LBPool) bool {
	return p.Name == o.Name && p.UID == o.UID &&
		p.CreationTimestamp.Equal(o.CreationTimestamp) &&
		slices.Equal(p.Blocks, o.Blocks) && slices.Equal(p.BlockErrors, o.BlockErrors) &&
		p.AllowFirstLastIPs == o.AllowFirstLastIPs && p.Disabled == o.Disabled && p.Choice == o.Choice &&
		p.SelectorError == o.SelectorError &&
		equality.Semantic.DeepEqual(p.ServiceSelector, o.ServiceSelector)
}

// Condition returns the status condition of the given type.
func (p *LBPool) Condition(typ string) (metav1.Condition, bool) {
	for _, c := range p.Conditions {
		if c.Type == typ {
			return c, true
		}
	}
	return metav1.Condition{}, false
}

func (p *LBPool) TableHeader() []string {
	return []string{"Name", "Disabled", "AllowFirstLast", "Choice", "Selector", "Blocks", "Error"}
}

func (p *LBPool) TableRow() []string {
	blocks := make([]string, 0, len(p.Blocks))
	for _, b := range p.Blocks {
		if b.IsCIDR() {
			blocks = append(blocks, b.CIDR)
		} else {
			blocks = append(blocks, b.From.String()+"-"+b.To.String())
		}
	}
	errs := append(slices.Clone(p.BlockErrors), p.SelectorError, p.Choice.Error)
	sel := "<all>"
	if p.ServiceSelector != nil {
		sel = metav1.FormatLabelSelector(p.ServiceSelector)
	}
	return []string{
		p.Name, fmt.Sprint(p.Disabled), fmt.Sprint(p.AllowFirstLastIPs), p.Choice.String(), sel,
		strings.Join(blocks, ","), dash(strings.Trim(strings.Join(errs, "; "), "; ")),
	}
}

// LBPoolNameIndex is the primary index of lb-pools.
var LBPoolNameIndex = statedb.Index[*LBPool, string]{
	Name: "name",
	FromObject: func(p *LBPool) index.KeySet {
		return index.NewKeySet(index.String(p.Name))
	},
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// NewLBPoolsTable creates the lb-pools table.
func NewLBPoolsTable(db *statedb.DB) (statedb.RWTable[*LBPool], error) {
	return statedb.NewTable(db, LBPoolsTableName, LBPoolNameIndex)
}

// LBPoolFromK8s converts a pool into a row, parsing blocks and selector.
func LBPoolFromK8s(p *v2alpha1.CiliumLoadBalancerIPPool) *LBPool {
	out := &LBPool{
		Name:              p.Name,
		UID:               string(p.UID),
		CreationTimestamp: p.CreationTimestamp.Time,
		Generation:        p.Generation,
		ResourceVersion:   p.ResourceVersion,
		AllowFirstLastIPs: p.Spec.AllowFirstLastIPs != v2alpha1.AllowFirstLastIPNo,
		Disabled:          p.Spec.Disabled,
		Choice:            ParsePoolChoice(p.Annotations),
		Conditions:        slices.Clone(p.Status.Conditions),
	}
	if p.Spec.ServiceSelector != nil {
		out.ServiceSelector = p.Spec.ServiceSelector.DeepCopy()
	}
	if err := validateSelector(out.ServiceSelector, field.NewPath("spec", "serviceSelector")); err != nil {
		out.SelectorError = err.Error()
	} else if sel, err := selectorFrom(out.ServiceSelector); err != nil {
		out.SelectorError = "spec.serviceSelector: " + err.Error()
	} else {
		out.selector = sel
	}
	for i, b := range p.Spec.Blocks {
		blk, err := ParseBlock(b.Cidr, b.Start, b.Stop)
		if err != nil {
			out.BlockErrors = append(out.BlockErrors, fmt.Sprintf("spec.blocks[%d]: %v", i, err))
			continue
		}
		out.Blocks = append(out.Blocks, blk)
	}
	return out
}

// ParseBlock parses one pool block given as cidr or start/stop.
func ParseBlock(cidr, start, stop string) (LBPoolBlock, error) {
	b, err := parseBlock(cidr, start, stop)
	if err == nil && b.From.Is6() && !b.To.Less(mapped4From) && !mapped4To.Less(b.From) {
		return LBPoolBlock{}, fmt.Errorf("%s to %s overlaps ::ffff:0:0/96, the IPv4-mapped addresses: a Service would get an IPv4 address written as IPv6", b.From, b.To)
	}
	return b, err
}

// The IPv4-mapped IPv6 addresses (RFC 4291 2.5.5.2).
var (
	mapped4From = netip.AddrFrom16(netip.MustParseAddr("::ffff:0.0.0.0").As16())
	mapped4To   = netip.AddrFrom16(netip.MustParseAddr("::ffff:255.255.255.255").As16())
)

func parseBlock(cidr, start, stop string) (LBPoolBlock, error) {
	switch {
	case cidr != "" && (start != "" || stop != ""):
		return LBPoolBlock{}, fmt.Errorf("a block has either cidr or start/stop, not both")
	case cidr != "":
		p, err := ParseCIDR(cidr)
		if err != nil {
			return LBPoolBlock{}, err
		}
		from, to := PrefixRange(p)
		return LBPoolBlock{CIDR: cidr, From: from, To: to}, nil
	case start != "":
		from, to, err := ParseRange(start, stop)
		if err != nil {
			return LBPoolBlock{}, err
		}
		return LBPoolBlock{From: from, To: to}, nil
	default:
		return LBPoolBlock{}, fmt.Errorf("a block needs cidr or start")
	}
}
