package allocator

import (
	"slices"
	"strings"

	"github.com/heraldlb/herald/tables"
)

// Change is what a pool edit would do to one Service.
type Change struct {
	Service  string
	Verdict  string // "gain", "keep", "lose", "move"
	Before   []string
	After    []string
	Reason   string // the new decision's reason when not satisfied
	Released string // why an IP would go, when it does
}

// Plan compares LB IPAM's decisions for the current snapshot with those it
// would take once the given pools were applied (added or replaced by name)
// or deleted. Only Services whose IPs or satisfaction would change, and
// those that keep IPs from the edited pools, are listed.
func Plan(fams Families, resp Responsibility, pools []*tables.LBPool, services []*tables.Service, apply []*tables.LBPool, deletes []string) []Change {
	before := Simulate(fams, resp, pools, services)
	after := Simulate(fams, resp, pools, services)
	for _, name := range deletes {
		after.DeletePool(name)
	}
	edited := map[string]bool{}
	for _, p := range apply {
		if old, ok := after.pools[p.Name]; ok {
			p.CreationTimestamp = old.row.CreationTimestamp // an edit keeps its age
		}
		after.UpsertPool(p)
		edited[p.Name] = true
	}
	for _, name := range deletes {
		edited[name] = true
	}
	after.Evaluate()

	keys := make([]string, 0, len(before.svcs))
	for k := range before.svcs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []Change
	for _, k := range keys {
		b, _ := before.Decision(k)
		a, _ := after.Decision(k)
		if (b == nil || !b.Managed) && (a == nil || !a.Managed) {
			continue
		}
		c := Change{Service: k, Before: render(b), After: render(a)}
		touchesEdited := false
		for _, d := range []*tables.LBAllocation{b, a} {
			if d != nil {
				for _, ip := range d.IPs {
					touchesEdited = touchesEdited || edited[ip.Pool]
				}
			}
		}
		switch {
		case slices.Equal(c.Before, c.After):
			if !touchesEdited {
				continue
			}
			c.Verdict = "keep"
		case len(c.Before) == 0:
			c.Verdict = "gain"
		case len(c.After) == 0:
			c.Verdict = "lose"
		default:
			c.Verdict = "move"
		}
		if a != nil && a.Managed && !a.Satisfied {
			c.Reason = a.Reason + ": " + a.Message
		}
		if a != nil && (b == nil || !slices.Equal(a.Released, b.Released)) {
			var why []string
			for _, r := range a.Released {
				why = append(why, r.Addr.String()+": "+r.Reason)
			}
			c.Released = strings.Join(why, "; ")
		}
		out = append(out, c)
	}
	return out
}

func render(d *tables.LBAllocation) []string {
	if d == nil || !d.Managed {
		return nil
	}
	out := make([]string, len(d.IPs))
	for i, ip := range d.IPs {
		out[i] = ip.Addr.String() + " (" + ip.Pool + ")"
	}
	return out
}
