package l2announcer

import (
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
	var out []stranded
	for _, svc := range services {
		if !announcedClass(svc) || !localOnly(svc) {
			continue
		}
		ready := readyNodes(svc.Key())
		var selected []string
		for _, n := range nodes {
			if slices.ContainsFunc(policies, func(p *tables.L2Policy) bool {
				return p.SelectsNode(n.Labels) && p.SelectsService(svc) && announcesSome(p, svc)
			}) {
				selected = append(selected, n.Name)
			}
		}
		if len(selected) == 0 || slices.ContainsFunc(selected, func(n string) bool { return slices.Contains(ready, n) }) {
			continue
		}
		slices.Sort(selected)
		out = append(out, stranded{service: svc.Key(), selected: len(selected), reporter: selected[0]})
	}
	return out
}

// announcesSome reports whether the policy announces any of the Service's
// IPs.
func announcesSome(p *tables.L2Policy, svc *tables.Service) bool {
	return (p.LoadBalancerIPs && len(svc.IngressIPs) > 0) || (p.ExternalIPs && len(svc.ExternalIPs) > 0)
}
