package candidates

import (
	"maps"
	"slices"

	"github.com/heraldlb/herald/tables"
)

// stranded is a Service with externalTrafficPolicy: Local that the policies
// would have announced, but from none of the nodes they select does it have
// a ready endpoint: nobody answers for its IPs.
type stranded struct {
	service string // "namespace/name"
	// selected counts the nodes a policy selects for it; reporter is the
	// first of them by name, the one agent that records the Event, so that
	// the Service gets one Event and not one per node.
	selected int
	reporter string
}

// strandedServices finds the stranded Services. Pure: the inputs are table
// rows; readyNodes gives the nodes with a ready endpoint of a Service.
// Services whose IPs are not announced anyway (no IP, another class, no
// policy selecting them together with a node) are not stranded.
func strandedServices(services []*tables.Service, policies []*tables.L2Policy, nodes []*tables.Node, readyNodes func(serviceKey string) []string) []stranded {
	// The nodes each policy selects: once, not once per Service (this runs
	// on every change of a Node, a Service or a slice). Per Service, only
	// its few ready nodes are looked up; the union of selected nodes is
	// built only for the rare stranded one.
	selects := make([]map[string]bool, len(policies))
	for i, p := range policies {
		selects[i] = map[string]bool{}
		for _, n := range nodes {
			if p.SelectsNode(n.Labels) {
				selects[i][n.Name] = true
			}
		}
	}
	var out []stranded
services:
	for _, svc := range services {
		if !announcedClass(svc) || !localOnly(svc) {
			continue
		}
		var applicable []int
		for i, p := range policies {
			if len(selects[i]) > 0 && p.SelectsService(svc) && announcesSome(p, svc) {
				applicable = append(applicable, i)
			}
		}
		if len(applicable) == 0 {
			continue
		}
		for _, n := range readyNodes(svc.Key()) {
			for _, i := range applicable {
				if selects[i][n] {
					continue services
				}
			}
		}
		selected := map[string]bool{}
		for _, i := range applicable {
			maps.Copy(selected, selects[i])
		}
		out = append(out, stranded{service: svc.Key(), selected: len(selected), reporter: slices.Min(slices.Collect(maps.Keys(selected)))})
	}
	return out
}

// announcesSome reports whether the policy announces any of the Service's
// IPs.
func announcesSome(p *tables.L2Policy, svc *tables.Service) bool {
	return (p.LoadBalancerIPs && len(svc.IngressIPs) > 0) || (p.ExternalIPs && len(svc.ExternalIPs) > 0)
}
