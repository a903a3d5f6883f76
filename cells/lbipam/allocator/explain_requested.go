package allocator

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/heraldlb/herald/tables"
)

// explainRequested says, for each requested IP the Service lacks, which
// pools hold it and in what state, and who holds it: the Service condition
// keeps to Cilium's words, which name neither.
func (e *Engine) explainRequested(s *svcState) []string {
	var out []string
	for _, a := range s.row.Annotations.RequestedIPs {
		if slices.ContainsFunc(s.held, func(h tables.AllocatedIP) bool { return h.Addr == a }) {
			continue
		}
		var places []string
		for _, p := range e.poolOrder {
			if p.contains(a) {
				places = append(places, fmt.Sprintf("IP Pool '%s'%s", p.row.Name, e.requestedPoolState(p, s.row, a)))
			}
		}
		where := "in no IP Pool"
		if len(places) > 0 {
			where = "in " + strings.Join(places, ", ")
		}
		var holders []string
		if use := e.ips[a]; use != nil {
			for _, u := range sortedUsers(use) {
				if u != s && u.row != nil {
					holders = append(holders, u.row.Key())
				}
			}
		}
		if len(holders) > 0 {
			where += "; held by " + strings.Join(holders, ", ")
		}
		out = append(out, fmt.Sprintf("Requested IP %s: %s.", a, where))
	}
	return out
}

// requestedPoolState notes why a pool holding a requested IP may not give it.
func (e *Engine) requestedPoolState(p *poolState, row *tables.Service, a netip.Addr) string {
	var notes []string
	if !named(p, row) {
		notes = append(notes, "not the pool the Service names")
	}
	if !p.row.Selects(row) {
		notes = append(notes, "its serviceSelector does not match")
	}
	if p.row.Disabled {
		notes = append(notes, "disabled")
	}
	if p.conflict != "" {
		notes = append(notes, "conflicting")
	}
	for _, r := range p.ranges {
		if r.Contains(a) && !r.Allocatable(a) {
			notes = append(notes, "reserved first or last IP")
		}
	}
	if len(notes) == 0 {
		return ""
	}
	return " (" + strings.Join(notes, ", ") + ")"
}
