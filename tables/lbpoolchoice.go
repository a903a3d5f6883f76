package tables

import (
	"fmt"
	"strconv"
	"strings"
)

// Pool choice: which pools a Service gets an address from when it names
// none and requests none. Cilium's CiliumLoadBalancerIPPool has no way to
// say it (the oldest pool that selects a Service serves it); MetalLB's
// IPAddressPool has autoAssign and serviceAllocation.priority. Herald
// reads them as annotations of the pool, so that its spec stays Cilium's
// and a manifest stays valid under either.
const (
	// AnnotationPoolAutoAssign "false" reserves the pool for the Services
	// that name it (metallb.io/address-pool) or request its addresses
	// (lbipam.cilium.io/ips): no other Service gets one of them.
	AnnotationPoolAutoAssign = "lbipam.herald.io/auto-assign"
	// AnnotationPoolPriority orders the pools that select a Service:
	// 1 is tried first, then 2, ...; pools without one come after, oldest
	// first. As MetalLB's serviceAllocation.priority.
	AnnotationPoolPriority = "lbipam.herald.io/priority"
)

// PoolChoice is what a pool's annotations say about choosing it.
type PoolChoice struct {
	// Reserved: auto-assign is "false", or no boolean (a typo must not
	// hand the pool's addresses to every Service).
	Reserved bool `json:"reserved,omitempty"`
	// Priority: 1 first; 0 none (after every pool that has one).
	Priority int `json:"priority,omitempty"`
	// Error describes annotations that do not parse, quoting them.
	Error string `json:"error,omitempty"`
}

// ParsePoolChoice reads a pool's choice annotations. It never fails:
// problems are in Error, and the pool is reserved (a bad auto-assign) or
// without priority (a bad priority) meanwhile.
func ParsePoolChoice(annotations map[string]string) PoolChoice {
	var c PoolChoice
	var errs []string
	if v, ok := annotations[AnnotationPoolAutoAssign]; ok {
		auto, err := strconv.ParseBool(strings.TrimSpace(v))
		c.Reserved = !auto || err != nil
		if err != nil {
			errs = append(errs, fmt.Sprintf("annotation %s: %q is not true or false; the pool is reserved until it is fixed", AnnotationPoolAutoAssign, v))
		}
	}
	if v, ok := annotations[AnnotationPoolPriority]; ok {
		p, err := strconv.Atoi(strings.TrimSpace(v))
		switch {
		case err != nil || p < 0:
			errs = append(errs, fmt.Sprintf("annotation %s: %q is not a priority (1 first, 2 next, ...); the pool has none until it is fixed", AnnotationPoolPriority, v))
		default:
			c.Priority = p
		}
	}
	c.Error = strings.Join(errs, "; ")
	return c
}

// Before reports whether a pool with priority a is tried before one with
// priority b: the lower first, those without (0) last.
func (c PoolChoice) Before(o PoolChoice) bool {
	switch {
	case c.Priority == 0:
		return false
	case o.Priority == 0:
		return true
	}
	return c.Priority < o.Priority
}

// String is the choice as herald-dbg shows it: "priority 1, reserved",
// "-" for the default.
func (c PoolChoice) String() string {
	var parts []string
	if c.Priority > 0 {
		parts = append(parts, fmt.Sprintf("priority %d", c.Priority))
	}
	if c.Reserved {
		parts = append(parts, "reserved")
	}
	return dash(strings.Join(parts, ", "))
}
