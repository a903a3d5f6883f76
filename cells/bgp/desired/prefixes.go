package desired

import (
	"net"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// What each advertisement entry sends: the prefixes of a family, for the
// Services, interfaces and pod CIDRs it selects.

type prefixReason struct {
	prefix netip.Prefix
	reason string
}

// prefixesOf lists what one advertisement entry sends in one family; the
// addresses of Services without a ready endpoint go to withheld instead.
func prefixesOf(in inputs, entry tables.BGPAdvert, ipv6 bool, withheld map[string][]netip.Addr) []prefixReason {
	var out []prefixReason
	fits := func(p netip.Prefix) bool { return p.IsValid() && p.Addr().Is6() == ipv6 }
	switch entry.Type {
	case v2alpha1.BGPPodCIDRAdvert:
		if in.multiPool {
			break // see inputs.multiPool; notices logs it
		}
		for _, p := range in.self.PodCIDRs {
			if fits(p) {
				out = append(out, prefixReason{p, "PodCIDR of node " + in.self.Name})
			}
		}
	case v2alpha1.BGPCiliumPodIPPoolAdvert:
		if in.ciliumNode == nil {
			break
		}
		for _, pool := range in.podPools {
			if !entry.Selects(pool.SelectorLabels()) {
				continue
			}
			for _, p := range in.ciliumNode.AllocatedIn(pool.Name) {
				if fits(p) {
					out = append(out, prefixReason{p, "CiliumPodIPPool " + pool.Name})
				}
			}
		}
	case v2alpha1.BGPInterfaceAdvert:
		for _, p := range interfacePrefixes(in.devices, entry.Interface) {
			if fits(p) {
				out = append(out, prefixReason{p, "interface " + entry.Interface})
			}
		}
	case v2alpha1.BGPServiceAdvert:
		for _, svc := range in.services {
			if !entry.Selects(svc.SelectorLabels()) {
				continue
			}
			served := in.keepUnserved || in.served(svc.Key())
			for _, kind := range entry.Addresses {
				// Unserved, a Local Service counts as if an endpoint ran
				// here: it is withheld for having none anywhere.
				for _, ip := range serviceAddresses(in, svc, kind, !served) {
					p := servicePrefix(entry, svc, kind, ip)
					switch {
					case !fits(p):
					case !served:
						withheld[svc.Key()] = append(withheld[svc.Key()], ip)
					default:
						out = append(out, prefixReason{p, "Service " + svc.Key() + " " + string(kind)})
					}
				}
			}
		}
	}
	return out
}

// interfacePrefixes are the addresses of the interface named name, each
// alone, while it is up (administratively, and operationally up or
// unknown, as loopback and dummy devices always are); as Cilium: IPv4
// global and link-local addresses, IPv6 global ones.
func interfacePrefixes(devices []*tables.Device, name string) []netip.Prefix {
	i := slices.IndexFunc(devices, func(d *tables.Device) bool { return d.Name == name })
	if i < 0 {
		return nil
	}
	d := devices[i]
	if d.Flags&net.FlagUp == 0 || (d.OperStatus != "up" && d.OperStatus != "unknown") {
		return nil
	}
	var out []netip.Prefix
	for _, a := range d.Addresses {
		ip := a.Addr
		if ip.Is4In6() || (ip.Is6() && !ip.IsGlobalUnicast()) || (ip.Is4() && !ip.IsGlobalUnicast() && !ip.IsLinkLocalUnicast()) {
			continue
		}
		out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
	}
	// Host prefixes: the address orders them.
	slices.SortFunc(out, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	return slices.Compact(out)
}

// servicePrefix is the prefix an entry announces a Service address as:
// the address alone, or the prefix of the entry's aggregation length
// holding it. A Service with a Local traffic policy (external; internal
// for ClusterIPs) is never aggregated: only the nodes with a ready
// endpoint announce its addresses, each alone, as Cilium does.
func servicePrefix(entry tables.BGPAdvert, svc *tables.Service, kind v2alpha1.BGPServiceAddressType, ip netip.Addr) netip.Prefix {
	policy := svc.ExternalTrafficPolicy
	if kind == v2alpha1.BGPClusterIPAddr {
		policy = svc.InternalTrafficPolicy
	}
	length := entry.AggregationLengthIPv4
	if ip.Is6() {
		length = entry.AggregationLengthIPv6
	}
	if length == nil || policy == string(corev1.ServiceExternalTrafficPolicyLocal) || int(*length) > ip.BitLen() || *length < 0 {
		return netip.PrefixFrom(ip, ip.BitLen())
	}
	return netip.PrefixFrom(ip, int(*length)).Masked()
}

// serviceAddresses are a Service's addresses of one kind that this node
// advertises. LoadBalancer IPs only of Services of no class or of
// io.cilium/bgp-control-plane; with a Local traffic policy (external for
// LoadBalancer and external IPs, internal for ClusterIPs) only when a ready
// endpoint runs here, kube-proxy dropping that traffic on any other node
// (anyNode: as if one did).
func serviceAddresses(in inputs, svc *tables.Service, kind v2alpha1.BGPServiceAddressType, anyNode bool) []netip.Addr {
	local := func(policy string) bool {
		return !anyNode && policy == string(corev1.ServiceExternalTrafficPolicyLocal)
	}
	switch kind {
	case v2alpha1.BGPLoadBalancerIPAddr:
		if svc.Type != corev1.ServiceTypeLoadBalancer || (svc.LoadBalancerClass != "" && svc.LoadBalancerClass != ClassBGP) {
			return nil
		}
		if local(svc.ExternalTrafficPolicy) && !in.readyHere(svc.Key()) {
			return nil
		}
		return svc.IngressIPs
	case v2alpha1.BGPExternalIPAddr:
		if local(svc.ExternalTrafficPolicy) && !in.readyHere(svc.Key()) {
			return nil
		}
		return svc.ExternalIPs
	case v2alpha1.BGPClusterIPAddr:
		if local(svc.InternalTrafficPolicy) && !in.readyHere(svc.Key()) {
			return nil
		}
		return svc.ClusterIPs
	}
	return nil
}
