package l2announcer

import (
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/heraldlb/herald/tables"
)

// ClassL2Announcer is the load balancer class announced besides "unset".
const ClassL2Announcer = "io.cilium/l2-announcer"

// LeasePrefix starts the name of every announcement Lease.
const LeasePrefix = "cilium-l2announce-"

// group is a set of Services that must be answered for by the same node:
// they share at least one IP (directly or through each other). One Lease,
// named after the group's first Service, decides the node for all of them.
type group struct {
	lease    string
	services []string // sorted Service keys
	entries  map[tables.L2AnnounceKey]*tables.L2AnnounceEntry
}

// selection is what this node may announce: every group it is a candidate
// for, by Lease name.
type selection map[string]*group

// selectAnnouncements computes the groups this node campaigns for. Pure: the
// inputs are table rows.
//
// A Service is a candidate when its class is unset or io.cilium/l2-announcer
// and a policy that selects this node selects it; the policy then contributes
// the Service's LoadBalancer IPs (loadBalancerIPs: true) and external IPs
// (externalIPs: true) on the selected devices matching its interface
// patterns. A Service with externalTrafficPolicy: Local is a candidate only
// where hasLocalEndpoint says this node runs one of its ready endpoints:
// kube-proxy drops its traffic on any other node.
func selectAnnouncements(services []*tables.Service, policies []*tables.L2Policy, nodeLabels map[string]string, devices []*tables.Device, hasLocalEndpoint func(serviceKey string) bool) selection {
	var active []*tables.L2Policy
	for _, p := range policies {
		if p.SelectsNode(nodeLabels) {
			active = append(active, p)
		}
	}
	perService := map[string]map[tables.L2AnnounceKey]*tables.L2AnnounceEntry{}
	for _, svc := range services {
		if !announcedClass(svc) || (localOnly(svc) && !hasLocalEndpoint(svc.Key())) {
			continue
		}
		for _, p := range active {
			if !p.SelectsService(svc) {
				continue
			}
			var ips []netip.Addr
			if p.LoadBalancerIPs {
				ips = append(ips, svc.IngressIPs...)
			}
			if p.ExternalIPs {
				ips = append(ips, svc.ExternalIPs...)
			}
			for _, ip := range ips {
				for _, d := range devices {
					if !d.Selected || !p.MatchesInterface(d.Name) {
						continue
					}
					key := tables.L2AnnounceKey{IP: ip, NetworkInterface: d.Name}
					m := perService[svc.Key()]
					if m == nil {
						m = map[tables.L2AnnounceKey]*tables.L2AnnounceEntry{}
						perService[svc.Key()] = m
					}
					m[key] = &tables.L2AnnounceEntry{IP: ip, NetworkInterface: d.Name, Ifindex: d.Index, MAC: d.HWAddr.String()}
				}
			}
		}
	}
	return groupByIP(perService)
}

// announcedClass: L2 announcements are for Services of no class or of
// io.cilium/l2-announcer.
func announcedClass(svc *tables.Service) bool {
	return svc.LoadBalancerClass == "" || svc.LoadBalancerClass == ClassL2Announcer
}

// localOnly: the Service's external traffic must stay on a node with an
// endpoint.
func localOnly(svc *tables.Service) bool {
	return svc.ExternalTrafficPolicy == string(corev1.ServiceExternalTrafficPolicyLocal)
}

// groupByIP joins Services that share an IP into groups (union-find).
func groupByIP(perService map[string]map[tables.L2AnnounceKey]*tables.L2AnnounceEntry) selection {
	parent := map[string]string{}
	var find func(string) string
	find = func(k string) string {
		if parent[k] == k {
			return k
		}
		parent[k] = find(parent[k])
		return parent[k]
	}
	union := func(a, b string) {
		ra, rb := find(a), find(b)
		if ra == rb {
			return
		}
		// The smaller key becomes the root, so a group is named after its
		// first Service whatever the order of discovery.
		if rb < ra {
			ra, rb = rb, ra
		}
		parent[rb] = ra
	}
	ipOwner := map[netip.Addr]string{}
	keys := make([]string, 0, len(perService))
	for k := range perService {
		keys = append(keys, k)
		parent[k] = k
	}
	slices.Sort(keys)
	for _, k := range keys {
		for key := range perService[k] {
			if o, ok := ipOwner[key.IP]; ok {
				union(o, k)
			} else {
				ipOwner[key.IP] = k
			}
		}
	}
	sel := selection{}
	for _, k := range keys {
		root := find(k)
		lease := LeaseName(root)
		g := sel[lease]
		if g == nil {
			g = &group{lease: lease, entries: map[tables.L2AnnounceKey]*tables.L2AnnounceEntry{}}
			sel[lease] = g
		}
		g.services = append(g.services, k)
		for key, e := range perService[k] {
			if old := g.entries[key]; old != nil {
				e = old
			}
			if !slices.Contains(e.Origins, k) {
				e.Origins = append(e.Origins, k)
				slices.Sort(e.Origins)
			}
			g.entries[key] = e
		}
	}
	return sel
}

// LeaseName is the Lease of a Service: cilium-l2announce-<namespace>-<name>.
func LeaseName(serviceKey string) string {
	return LeasePrefix + strings.Replace(serviceKey, "/", "-", 1)
}
