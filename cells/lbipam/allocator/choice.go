package allocator

import (
	"fmt"
	"slices"

	"github.com/heraldlb/herald/tables"
)

// Pool choice (tables.PoolChoice): among the pools that select a Service,
// a new address comes from the one of the highest priority, then the
// oldest; a reserved pool serves only the Services that name it or
// request its addresses. Addresses a Service holds stay whatever the
// choice says: it only decides where a new one comes from.

// byPriority returns the pools of poolOrder, reusing dst's storage, by
// priority (1 first, none last), in poolOrder's order among equals.
func byPriority(dst, poolOrder []*poolState) []*poolState {
	dst = append(dst[:0], poolOrder...)
	slices.SortStableFunc(dst, func(a, b *poolState) int {
		switch {
		case a.row.Choice.Before(b.row.Choice):
			return -1
		case b.row.Choice.Before(a.row.Choice):
			return 1
		}
		return 0
	})
	return dst
}

// autoAssigns reports whether the pool hands out addresses to a Service
// that does not request one of them: it is not reserved, or the Service
// names it.
func autoAssigns(p *poolState, row *tables.Service) bool {
	return !p.row.Choice.Reserved || row.Annotations.Pool == p.row.Name
}

// reservedMessage explains a Service that only reserved pools select.
func reservedMessage(names []string) string {
	return fmt.Sprintf("IP Pools that match this service are reserved for the services that name them or request their IPs (annotation %s: \"false\"): %s",
		tables.AnnotationPoolAutoAssign, quoteJoin(names))
}
