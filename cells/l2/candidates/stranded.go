package candidates

import (
	"maps"
	"slices"

	"github.com/heraldlb/herald/tables"
)

// strandCause says why nobody answers for a stranded Service.
type strandCause int

const (
	// noReadyEndpoint: the Service has no ready endpoint anywhere, and
	// enable-no-service-endpoints-routable is off.
	noReadyEndpoint strandCause = iota + 1
	// noLocalEndpoint: externalTrafficPolicy is Local and none of the
	// nodes the policies select runs a ready endpoint.
	noLocalEndpoint
)

// stranded is a Service that the policies would have announced, but that
// no node may announce: nobody answers for its IPs.
type stranded struct {
	service string // "namespace/name"
	cause   strandCause
	// selected counts the nodes a policy selects for it; reporter is the
	// first of them by name, the one agent that records the Event, so that
	// the Service gets one Event and not one per node.
	selected int
	reporter string
}

// strandedServices finds the stranded Services. Pure: the inputs are table
// rows (devices are not looked at: a Service stranded for want of an
// endpoint is reported whatever the devices). Services whose IPs are not
// announced anyway (no IP, another class, no policy selecting them
// together with a node) are not stranded.
func strandedServices(in inputs) []stranded {
	// The nodes each policy selects: once, not once per Service (this runs
	// on every change of a Node, a Service or a slice). Per Service, only
	// its few ready nodes are looked up; the union of selected nodes is
	// built only for the rare stranded one.
	selects := make([]map[string]bool, len(in.policies))
	for i, p := range in.policies {
		selects[i] = map[string]bool{}
		for _, n := range in.nodes {
			if p.SelectsNode(n.Labels) {
				selects[i][n.Name] = true
			}
		}
	}
	var out []stranded
	for _, svc := range in.services {
		if !announcedClass(svc) {
			continue
		}
		if !localOnly(svc) && in.keepUnserved {
			continue
		}
		var applicable []int
		for i, p := range in.policies {
			if len(selects[i]) > 0 && p.SelectsService(svc) && announcesSome(p, svc) {
				applicable = append(applicable, i)
			}
		}
		if len(applicable) == 0 {
			continue
		}
		cause := in.strandCause(svc, applicable, selects)
		if cause == 0 {
			continue
		}
		selected := map[string]bool{}
		for _, i := range applicable {
			maps.Copy(selected, selects[i])
		}
		out = append(out, stranded{service: svc.Key(), cause: cause, selected: len(selected), reporter: slices.Min(slices.Collect(maps.Keys(selected)))})
	}
	return out
}

// strandCause says why nobody may announce a Service the applicable
// policies want announced, 0 when somebody may.
func (in inputs) strandCause(svc *tables.Service, applicable []int, selects []map[string]bool) strandCause {
	if !in.keepUnserved && !in.served(svc.Key()) {
		return noReadyEndpoint
	}
	if !localOnly(svc) {
		return 0
	}
	for _, n := range in.readyNodes(svc.Key()) {
		for _, i := range applicable {
			if selects[i][n] {
				return 0
			}
		}
	}
	return noLocalEndpoint
}

// announcesSome reports whether the policy announces any of the Service's
// IPs.
func announcesSome(p *tables.L2Policy, svc *tables.Service) bool {
	return (p.LoadBalancerIPs && len(svc.IngressIPs) > 0) || (p.ExternalIPs && len(svc.ExternalIPs) > 0)
}
