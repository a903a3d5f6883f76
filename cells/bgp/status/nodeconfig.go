package status

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// nodeSpec is the CiliumBGPNodeConfig spec of this node: its instances and
// peers as the cluster configs and the override resolve them (what
// Cilium's operator writes).
func nodeSpec(instances []*tables.BGPInstance) v2alpha1.CiliumBGPNodeSpec {
	spec := v2alpha1.CiliumBGPNodeSpec{BGPInstances: []v2alpha1.CiliumBGPNodeInstance{}}
	for _, i := range instances {
		ni := v2alpha1.CiliumBGPNodeInstance{Name: i.Name}
		if i.LocalASN != 0 {
			ni.LocalASN = ptr.To(i.LocalASN)
		}
		if i.RouterID.IsValid() {
			ni.RouterID = ptr.To(i.RouterID.String())
		}
		if i.ListenPort > 0 {
			ni.LocalPort = ptr.To(i.ListenPort)
		}
		for _, p := range i.Peers {
			np := v2alpha1.CiliumBGPNodePeer{Name: p.Name}
			if p.Address.IsValid() {
				np.PeerAddress = ptr.To(p.Address.WithZone("").String())
			}
			if p.Interface != "" {
				np.PeerInterface = ptr.To(p.Interface)
			}
			if p.ASN != 0 {
				np.PeerASN = ptr.To(p.ASN)
			}
			if p.LocalAddress.IsValid() {
				np.LocalAddress = ptr.To(p.LocalAddress.String())
			}
			if p.Unnumbered && p.Interface != "" {
				np.AutoDiscovery = &v2alpha1.BGPAutoDiscovery{Mode: v2alpha1.BGPUnnumberedMode,
					Unnumbered: &v2alpha1.BGPUnnumbered{Interface: p.Interface}}
			}
			if p.DiscoveredFamily != "" {
				np.AutoDiscovery = &v2alpha1.BGPAutoDiscovery{Mode: v2alpha1.BGPDefaultGatewayMode,
					DefaultGateway: &v2alpha1.DefaultGateway{AddressFamily: p.DiscoveredFamily}}
			}
			if p.PeerConfig != "" {
				np.PeerConfigRef = &v2alpha1.PeerConfigReference{Group: v2alpha1.GroupName, Kind: v2alpha1.BGPPeerConfigKind, Name: p.PeerConfig}
			}
			ni.Peers = append(ni.Peers, np)
		}
		spec.BGPInstances = append(spec.BGPInstances, ni)
	}
	return spec
}

// nodeStatus is the status of this node's CiliumBGPNodeConfig: every
// session's state (Cilium's fields) and two conditions that say in one
// line whether everything runs and, if not, what and why.
func nodeStatus(instances []*tables.BGPInstance, peers map[string]*tables.BGPPeerState, current []metav1.Condition, generation int64, now time.Time) v2alpha1.CiliumBGPNodeStatus {
	st := v2alpha1.CiliumBGPNodeStatus{}
	var instErrs, peerProblems, nextHopProblems, bfdProblems []string
	configured, established := 0, 0
	for _, i := range instances {
		if i.Error != "" {
			instErrs = append(instErrs, fmt.Sprintf("instance %q: %s", i.Name, i.Error))
			continue
		}
		is := v2alpha1.CiliumBGPNodeInstanceStatus{Name: i.Name, LocalASN: ptr.To(i.LocalASN)}
		for _, p := range i.Peers {
			if p.Error != "" {
				peerProblems = append(peerProblems, fmt.Sprintf("peer %q of instance %q is not configured: %s", p.Name, i.Name, p.Error))
				continue
			}
			configured++
			ps := v2alpha1.CiliumBGPNodePeerStatus{Name: p.Name, PeerAddress: p.Address.WithZone("").String(), PeerASN: ptr.To(p.ASN),
				PeeringState: ptr.To(tables.BGPStateUnknown)}
			s := peers[i.Name+"/"+p.Name]
			if s != nil {
				ps.PeeringState = ptr.To(s.State)
				if s.State == tables.BGPStateEstablished {
					established++
					ps.EstablishedTime = ptr.To(s.Since.UTC().Format(time.RFC3339))
					ps.Timers = &v2alpha1.CiliumBGPTimersState{AppliedHoldTimeSeconds: ptr.To(s.AppliedHoldTimeSeconds), AppliedKeepaliveSeconds: ptr.To(s.AppliedKeepaliveSeconds)}
				}
				for _, r := range s.Routes {
					ps.RouteCount = append(ps.RouteCount, v2alpha1.BGPFamilyRouteCount{Afi: r.AFI, Safi: r.SAFI,
						Advertised: ptr.To(int32(r.Advertised)), Received: ptr.To(int32(r.Received))})
				}
			}
			if p.BFD != nil {
				ps.BFDState = ptr.To(tables.BFDStateDown)
				if s != nil && s.BFD != "" {
					ps.BFDState = ptr.To(s.BFD)
				}
			}
			if s != nil && s.NextHopError != "" {
				nextHopProblems = append(nextHopProblems, fmt.Sprintf("peer %q (%s) of instance %q gets no IPv6 routes: %s", p.Name, p.Address, i.Name, s.NextHopError))
			}
			if s != nil && s.State == tables.BGPStateEstablished && p.BFD != nil && *ps.BFDState != tables.BFDStateUp {
				bfdProblems = append(bfdProblems, fmt.Sprintf("peer %q (%s) of instance %q: BFD session is %s (does the router run BFD for this node?); failover falls back to the hold time",
					p.Name, p.Address, i.Name, *ps.BFDState))
			}
			if s == nil || s.State != tables.BGPStateEstablished {
				msg := fmt.Sprintf("peer %q (%s, AS %d) of instance %q is %s", p.Name, p.Address, p.ASN, i.Name, *ps.PeeringState)
				if s != nil && s.LastError != "" {
					msg += ": " + s.LastError
				}
				msg += " (check that the peer is reachable on port " + fmt.Sprint(p.PeerPort) + ", its ASN and, with an authSecretRef, that both sides have the same password)"
				peerProblems = append(peerProblems, msg)
			}
			is.PeerStatuses = append(is.PeerStatuses, ps)
		}
		st.BGPInstances = append(st.BGPInstances, is)
	}
	slices.Sort(peerProblems)
	slices.Sort(nextHopProblems)
	slices.Sort(bfdProblems)

	running := metav1.Condition{Type: tables.ConditionBGPInstancesRunning, Status: metav1.ConditionTrue, Reason: tables.ReasonBGPOK,
		Message: fmt.Sprintf("%d instances running", len(instances)-len(instErrs)), ObservedGeneration: generation}
	if len(instErrs) > 0 {
		running.Status, running.Reason, running.Message = metav1.ConditionFalse, tables.ReasonBGPInstanceErrors, strings.Join(instErrs, "; ")
	}
	peersCond := peersCondition(configured, established, peerProblems, nextHopProblems, bfdProblems, generation)
	for _, want := range []metav1.Condition{running, peersCond} {
		old, had := findCondition(current, want.Type)
		want, _ = transition(old, had, want, now)
		st.Conditions = append(st.Conditions, want)
	}
	return st
}

// peersCondition is PeersEstablished: False with the problems, the worst
// kind first (sessions down or peers not configured, then peers without
// IPv6 routes for want of a next hop, then BFD sessions not up).
func peersCondition(configured, established int, peerProblems, nextHopProblems, bfdProblems []string, generation int64) metav1.Condition {
	peersCond := metav1.Condition{Type: tables.ConditionBGPPeersEstablished, Status: metav1.ConditionTrue, Reason: tables.ReasonBGPOK,
		Message: fmt.Sprintf("%d of %d sessions established", established, configured), ObservedGeneration: generation}
	switch {
	case len(peerProblems) > 0:
		peersCond.Status, peersCond.Message = metav1.ConditionFalse, strings.Join(slices.Concat(peerProblems, nextHopProblems, bfdProblems), "; ")
		peersCond.Reason = tables.ReasonBGPNotEstablished
		if established == configured {
			peersCond.Reason = tables.ReasonBGPNotConfigured
		}
	case len(nextHopProblems) > 0:
		peersCond.Status, peersCond.Message = metav1.ConditionFalse, strings.Join(append(nextHopProblems, bfdProblems...), "; ")
		peersCond.Reason = tables.ReasonBGPNoIPv6NextHop
	case len(bfdProblems) > 0:
		peersCond.Status, peersCond.Message = metav1.ConditionFalse, strings.Join(bfdProblems, "; ")
		peersCond.Reason = tables.ReasonBFDNotUp
	}
	return peersCond
}
