package candidates

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/heraldlb/herald/tables"
)

// ClassL2Announcer is the load balancer class announced besides "unset".
const ClassL2Announcer = tables.LBClassL2Announcer

// LeaseName is the Lease of a Service: cilium-l2announce-<namespace>-<name>.
func LeaseName(serviceKey string) string {
	return tables.L2AnnounceLeasePrefix + strings.Replace(serviceKey, "/", "-", 1)
}

// inputs are the table rows a derivation reads.
type inputs struct {
	self     string
	services []*tables.Service
	policies []*tables.L2Policy
	nodes    []*tables.Node
	// devices are this node's; peerDevices the selected devices other
	// nodes publish to their peers (nil for a node not heard of: its
	// interfaces are not held against it).
	devices     []*tables.Device
	peerDevices map[string][]string
	// readyNodes gives the nodes with a ready endpoint of a Service.
	readyNodes func(serviceKey string) []string
	// served reports whether a Service has a ready endpoint anywhere;
	// keepUnserved (enable-no-service-endpoints-routable) announces the
	// Services without one too.
	served       func(serviceKey string) bool
	keepUnserved bool
}

// derive computes the l2-candidates rows. Pure.
//
// A Service is announced when its class is unset or io.cilium/l2-announcer
// and a policy selects it; the policy contributes the Service's
// LoadBalancer IPs (loadBalancerIPs: true) and external IPs (externalIPs:
// true), and the nodes it selects that have a device its interface patterns
// match. With externalTrafficPolicy: Local only nodes that run a ready
// endpoint of the Service qualify: kube-proxy drops its traffic on any
// other node. A Service with no ready endpoint at all has no node (unless
// keepUnserved): nobody could serve what the answer attracts. Services that
// share an IP, directly or through each other, form one group, named after
// the first; the group's nodes are those of any of them.
func derive(in inputs) []*tables.L2Candidate {
	// Each policy's nodes once, not once per Service.
	policyNodes := make([][]string, len(in.policies))
	for i, p := range in.policies {
		for _, n := range in.nodes {
			if p.SelectsNode(n.Labels) && hasDevice(p, in.deviceNames(n.Name)) {
				policyNodes[i] = append(policyNodes[i], n.Name)
			}
		}
	}
	return groupRows(in.perService(policyNodes))
}

// wantedService is what the policies want announced for one Service: its
// IPs, the nodes that may announce them, and this node's entries.
type wantedService struct {
	ips   []netip.Addr
	nodes map[string]bool
	local map[tables.L2AnnounceKey]*tables.L2AnnounceEntry
}

// perService is, by Service key, what the policies want announced.
func (in inputs) perService(policyNodes [][]string) map[string]*wantedService {
	wanted := map[string]*wantedService{}
	for _, svc := range in.services {
		if !announcedClass(svc) {
			continue
		}
		var ready []string
		if localOnly(svc) {
			ready = in.readyNodes(svc.Key())
		}
		// Without a ready endpoint anywhere, the Service's IPs still join
		// its group, but it brings no node. (Looked up once a policy
		// wants the Service.)
		served, looked := in.keepUnserved, in.keepUnserved
		for i, p := range in.policies {
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
			if len(ips) == 0 {
				continue
			}
			ws := wanted[svc.Key()]
			if ws == nil {
				ws = &wantedService{nodes: map[string]bool{}, local: map[tables.L2AnnounceKey]*tables.L2AnnounceEntry{}}
				wanted[svc.Key()] = ws
			}
			ws.ips = append(ws.ips, ips...)
			if !looked {
				served, looked = in.served(svc.Key()), true
			}
			for _, n := range policyNodes[i] {
				if !served || (localOnly(svc) && !slices.Contains(ready, n)) {
					continue
				}
				ws.nodes[n] = true
				if n == in.self {
					in.addLocal(ws, p, svc.Key(), ips)
				}
			}
		}
	}
	return wanted
}

// addLocal adds this node's entries for ips: one per selected device the
// policy's interfaces match.
func (in inputs) addLocal(ws *wantedService, p *tables.L2Policy, svc string, ips []netip.Addr) {
	for _, ip := range ips {
		for _, d := range in.devices {
			if d.Selected && p.MatchesInterface(d.Name) {
				k := tables.L2AnnounceKey{IP: ip, NetworkInterface: d.Name}
				ws.local[k] = &tables.L2AnnounceEntry{IP: ip, NetworkInterface: d.Name, Ifindex: d.Index, MAC: d.HWAddr.String(), Origins: []string{svc}}
			}
		}
	}
}

// groupRows joins the Services that share an IP into one row each.
func groupRows(wanted map[string]*wantedService) []*tables.L2Candidate {
	ipsOf := map[string][]netip.Addr{}
	for k, ws := range wanted {
		ipsOf[k] = ws.ips
	}
	var rows []*tables.L2Candidate
	for _, members := range groupByIP(ipsOf) {
		c := &tables.L2Candidate{Group: LeaseName(members[0]), Services: members}
		nodes := map[string]bool{}
		local := map[tables.L2AnnounceKey]*tables.L2AnnounceEntry{}
		for _, k := range members {
			ws := wanted[k]
			c.IPs = append(c.IPs, ws.ips...)
			for n := range ws.nodes {
				nodes[n] = true
			}
			for key, e := range ws.local {
				if old := local[key]; old != nil {
					old.Origins = append(old.Origins, e.Origins...)
					slices.Sort(old.Origins)
					continue
				}
				local[key] = e
			}
		}
		slices.SortFunc(c.IPs, netip.Addr.Compare)
		c.IPs = slices.Compact(c.IPs)
		for n := range nodes {
			c.Nodes = append(c.Nodes, n)
		}
		slices.Sort(c.Nodes)
		for _, e := range local {
			c.Local = append(c.Local, e)
		}
		slices.SortFunc(c.Local, func(a, b *tables.L2AnnounceEntry) int {
			return cmp.Or(a.IP.Compare(b.IP), cmp.Compare(a.NetworkInterface, b.NetworkInterface))
		})
		rows = append(rows, c)
	}
	slices.SortFunc(rows, func(a, b *tables.L2Candidate) int { return cmp.Compare(a.Group, b.Group) })
	return rows
}

// deviceNames are a node's selected devices, nil when unknown.
func (in inputs) deviceNames(node string) []string {
	if node != in.self {
		return in.peerDevices[node]
	}
	names := []string{}
	for _, d := range in.devices {
		if d.Selected {
			names = append(names, d.Name)
		}
	}
	return names
}

// hasDevice reports whether a node with these devices can answer for the
// policy: one of them matches its interface patterns. Unknown (nil)
// devices count as matching.
func hasDevice(p *tables.L2Policy, devices []string) bool {
	if devices == nil {
		return true
	}
	return slices.ContainsFunc(devices, p.MatchesInterface)
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

// groupByIP joins the Services that share an IP (union-find); each group
// is sorted, and the groups are in the order of their first Service.
func groupByIP(ipsOf map[string][]netip.Addr) [][]string {
	parent := map[string]string{}
	var find func(string) string
	find = func(k string) string {
		if parent[k] == k {
			return k
		}
		parent[k] = find(parent[k])
		return parent[k]
	}
	keys := make([]string, 0, len(ipsOf))
	for k := range ipsOf {
		keys = append(keys, k)
		parent[k] = k
	}
	slices.Sort(keys)
	owner := map[netip.Addr]string{}
	for _, k := range keys {
		for _, ip := range ipsOf[k] {
			o, ok := owner[ip]
			if !ok {
				owner[ip] = k
				continue
			}
			// The smaller key becomes the root, so a group is named after
			// its first Service whatever the order of discovery.
			ra, rb := find(o), find(k)
			if rb < ra {
				ra, rb = rb, ra
			}
			if ra != rb {
				parent[rb] = ra
			}
		}
	}
	groups := map[string][]string{}
	var roots []string
	for _, k := range keys {
		r := find(k)
		if groups[r] == nil {
			roots = append(roots, r)
		}
		groups[r] = append(groups[r], k)
	}
	out := make([][]string, len(roots))
	for i, r := range roots {
		out[i] = groups[r]
	}
	return out
}
