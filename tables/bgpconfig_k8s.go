package tables

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// The conversions of the BGP resources into rows. The API server's schema
// checks ranges and enums; what it cannot check (selectors, addresses in
// strings, communities, timers that contradict each other) is reported in
// the rows' errors, which conditions and logs show.

// BGPClusterConfigFromK8s converts a CiliumBGPClusterConfig.
func BGPClusterConfigFromK8s(c *v2alpha1.CiliumBGPClusterConfig) *BGPClusterConfig {
	out := &BGPClusterConfig{Name: c.Name, UID: string(c.UID), Generation: c.Generation, CreationTimestamp: c.CreationTimestamp.Time,
		NodeSelector: c.Spec.NodeSelector.DeepCopy(), NodeSelectorError: checkSelector(c.Spec.NodeSelector, "spec.nodeSelector"),
		Conditions: slices.Clone(c.Status.Conditions), nodeSel: parseSelector(c.Spec.NodeSelector)}
	for _, i := range c.Spec.BGPInstances {
		inst := BGPInstanceSpec{Name: i.Name}
		if i.LocalASN != nil {
			inst.LocalASN = *i.LocalASN
		}
		if i.LocalPort != nil {
			inst.LocalPort = *i.LocalPort
		}
		for _, p := range i.Peers {
			peer := BGPPeerSpec{Name: p.Name}
			if p.PeerAddress != nil {
				a, err := netip.ParseAddr(*p.PeerAddress)
				if err != nil {
					peer.AddressError = fmt.Sprintf("%q is not an IP address", *p.PeerAddress)
				} else {
					// A zone names the interface toward a link-local peer,
					// as peerInterface does.
					peer.Address, peer.Interface = a.Unmap().WithZone(""), a.Zone()
				}
			}
			if p.PeerASN != nil {
				peer.ASN = *p.PeerASN
			}
			if ad := p.AutoDiscovery; ad != nil && p.PeerAddress == nil {
				switch {
				case ad.Mode == v2alpha1.BGPDefaultGatewayMode && ad.DefaultGateway != nil:
					peer.DiscoverFamily = ad.DefaultGateway.AddressFamily
				case ad.Mode == v2alpha1.BGPUnnumberedMode && ad.Unnumbered != nil:
					peer.Unnumbered, peer.Interface = true, ad.Unnumbered.Interface
				case ad.Mode == v2alpha1.BGPUnnumberedMode && ad.DefaultGateway != nil:
					peer.Unnumbered, peer.UnnumberedFamily = true, ad.DefaultGateway.AddressFamily
				}
			}
			if p.PeerInterface != nil && !peer.Unnumbered {
				peer.Interface = *p.PeerInterface
			}
			if peer.Interface != "" && !peer.Unnumbered {
				if peer.AddressError == "" && peer.Address.IsValid() && !(peer.Address.Is6() && peer.Address.IsLinkLocalUnicast()) {
					peer.AddressError = fmt.Sprintf("%s is not an IPv6 link-local address, which an interface (peerInterface, or a zone of peerAddress) needs", peer.Address)
				}
			}
			if p.PeerConfigRef != nil {
				peer.PeerConfig = p.PeerConfigRef.Name
			}
			inst.Peers = append(inst.Peers, peer)
		}
		out.Instances = append(out.Instances, inst)
	}
	return out
}

// BGPPeerConfigFromK8s converts a CiliumBGPPeerConfig, with Cilium's
// defaults for what it leaves out.
func BGPPeerConfigFromK8s(c *v2alpha1.CiliumBGPPeerConfig) *BGPPeerConfig {
	out := DefaultBGPPeerConfig()
	out.Name, out.UID, out.Generation = c.Name, string(c.UID), c.Generation
	out.Conditions = slices.Clone(c.Status.Conditions)
	s := c.Spec
	set := func(dst *int32, src *int32) {
		if src != nil {
			*dst = *src
		}
	}
	if s.Transport != nil {
		set(&out.PeerPort, s.Transport.PeerPort)
		out.SourceInterface = s.Transport.SourceInterface
	}
	if s.Timers != nil {
		set(&out.ConnectRetrySeconds, s.Timers.ConnectRetryTimeSeconds)
		set(&out.HoldTimeSeconds, s.Timers.HoldTimeSeconds)
		set(&out.KeepAliveSeconds, s.Timers.KeepAliveTimeSeconds)
	}
	if s.AuthSecretRef != nil {
		out.AuthSecret = *s.AuthSecretRef
	}
	if s.GracefulRestart != nil {
		out.GracefulRestart = s.GracefulRestart.Enabled
		set(&out.RestartTimeSeconds, s.GracefulRestart.RestartTimeSeconds)
	}
	set(&out.EBGPMultihop, s.EBGPMultihop)
	if s.BFD != nil {
		out.BFD = bfdFromK8s(s.BFD)
		out.Errors = append(out.Errors, out.BFD.check()...)
	}
	if out.KeepAliveSeconds > out.HoldTimeSeconds {
		out.Errors = append(out.Errors, fmt.Sprintf("spec.timers: keepAliveTimeSeconds %d is longer than holdTimeSeconds %d", out.KeepAliveSeconds, out.HoldTimeSeconds))
	}
	if len(s.Families) > 0 {
		out.Families = nil
		for i, f := range s.Families {
			out.Families = append(out.Families, BGPFamily{AFI: f.Afi, SAFI: f.Safi,
				Advertisements:      f.Advertisements.DeepCopy(),
				AdvertisementsError: checkSelector(f.Advertisements, fmt.Sprintf("spec.families[%d].advertisements", i)),
				advSel:              parseSelector(f.Advertisements)})
		}
	}
	return out
}

// SelectorErrors are the family selectors that do not parse.
func (c *BGPPeerConfig) SelectorErrors() []string {
	var errs []string
	for _, f := range c.Families {
		if f.AdvertisementsError != "" {
			errs = append(errs, f.AdvertisementsError)
		}
	}
	return errs
}

// BGPAdvertisementFromK8s converts a CiliumBGPAdvertisement.
func BGPAdvertisementFromK8s(a *v2alpha1.CiliumBGPAdvertisement) *BGPAdvertisement {
	out := &BGPAdvertisement{Name: a.Name, UID: string(a.UID), Generation: a.Generation, Labels: maps(a.Labels),
		Conditions: slices.Clone(a.Status.Conditions)}
	for i, adv := range a.Spec.Advertisements {
		entry := BGPAdvert{Type: adv.AdvertisementType, Selector: adv.Selector.DeepCopy(), sel: parseSelector(adv.Selector)}
		if adv.AdvertisementType != v2alpha1.BGPPodCIDRAdvert && adv.AdvertisementType != v2alpha1.BGPInterfaceAdvert {
			entry.SelectorError = checkSelector(adv.Selector, fmt.Sprintf("spec.advertisements[%d].selector", i))
		}
		if adv.Interface != nil {
			entry.Interface = adv.Interface.Name
		}
		if adv.Service != nil {
			for _, t := range adv.Service.Addresses {
				entry.Addresses = append(entry.Addresses, t)
			}
			entry.AggregationLengthIPv4 = clonePtr(adv.Service.AggregationLengthIPv4)
			entry.AggregationLengthIPv6 = clonePtr(adv.Service.AggregationLengthIPv6)
		}
		if at := adv.Attributes; at != nil {
			var std, wk, large []string
			if c := at.Communities; c != nil {
				for _, s := range c.Standard {
					std = append(std, string(s))
				}
				for _, s := range c.WellKnown {
					wk = append(wk, string(s))
				}
				for _, s := range c.Large {
					large = append(large, string(s))
				}
			}
			entry.Attributes = NewBGPAttributes(std, wk, large, at.LocalPreference)
		}
		out.Advertisements = append(out.Advertisements, entry)
	}
	return out
}

// BGPNodeOverrideFromK8s converts a CiliumBGPNodeConfigOverride.
func BGPNodeOverrideFromK8s(o *v2alpha1.CiliumBGPNodeConfigOverride) *BGPNodeOverride {
	out := &BGPNodeOverride{Name: o.Name}
	for i, inst := range o.Spec.BGPInstances {
		io := BGPInstanceOverride{Name: inst.Name}
		if inst.RouterID != nil {
			a, err := netip.ParseAddr(*inst.RouterID)
			if err != nil || !a.Unmap().Is4() {
				io.Errors = append(io.Errors, fmt.Sprintf("spec.bgpInstances[%d].routerID: %q is not an IPv4 address", i, *inst.RouterID))
			} else {
				io.RouterID = a.Unmap()
			}
		}
		if inst.LocalPort != nil {
			io.LocalPort = *inst.LocalPort
		}
		if inst.LocalASN != nil {
			io.LocalASN = *inst.LocalASN
		}
		for j, p := range inst.Peers {
			if p.LocalAddress != nil {
				a, err := netip.ParseAddr(*p.LocalAddress)
				if err != nil {
					io.Errors = append(io.Errors, fmt.Sprintf("spec.bgpInstances[%d].peers[%d].localAddress: %q is not an IP address", i, j, *p.LocalAddress))
				} else {
					if io.LocalAddress == nil {
						io.LocalAddress = map[string]netip.Addr{}
					}
					io.LocalAddress[p.Name] = a.Unmap()
				}
			}
			if p.LocalPort != nil {
				io.IgnoredPeerLocalPorts = append(io.IgnoredPeerLocalPorts, p.Name)
			}
		}
		out.Instances = append(out.Instances, io)
	}
	return out
}

// bfdFromK8s converts spec.bfd, with the API's defaults for what it
// leaves out.
func bfdFromK8s(b *v2alpha1.CiliumBGPBFD) *BGPBFD {
	out := &BGPBFD{ReceiveIntervalMs: v2alpha1.DefaultBFDIntervalMilliseconds, TransmitIntervalMs: v2alpha1.DefaultBFDIntervalMilliseconds,
		DetectMultiplier: v2alpha1.DefaultBFDDetectMultiplier}
	for dst, src := range map[*int32]*int32{&out.ReceiveIntervalMs: b.ReceiveIntervalMilliseconds,
		&out.TransmitIntervalMs: b.TransmitIntervalMilliseconds, &out.DetectMultiplier: b.DetectMultiplier} {
		if src != nil {
			*dst = *src
		}
	}
	out.Passive = b.PassiveMode != nil && *b.PassiveMode
	return out
}

// check repeats the schema's bounds, for objects stored before it had
// them.
func (b *BGPBFD) check() []string {
	var errs []string
	for name, v := range map[string]int32{"receiveIntervalMilliseconds": b.ReceiveIntervalMs, "transmitIntervalMilliseconds": b.TransmitIntervalMs} {
		if v < 10 || v > 60000 {
			errs = append(errs, fmt.Sprintf("spec.bfd.%s: %d is outside 10-60000", name, v))
		}
	}
	if b.DetectMultiplier < 1 || b.DetectMultiplier > 255 {
		errs = append(errs, fmt.Sprintf("spec.bfd.detectMultiplier: %d is outside 1-255", b.DetectMultiplier))
	}
	slices.Sort(errs)
	return errs
}

// clonePtr copies what p points to, so that a row shares nothing with the
// object it was made of.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
