package migrate

import (
	"fmt"
	"net/netip"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// translatePeer turns a BGPPeer's session settings into the
// CiliumBGPPeerConfig of the same name. adverts selects the
// CiliumBGPAdvertisements announced to the peer (nil: none); profile is
// the BFDProfile it names, if found.
func translatePeer(p BGPPeer, adverts *metav1.LabelSelector, profile *BFDProfile) (*v2alpha1.CiliumBGPPeerConfig, []Finding) {
	pc := &v2alpha1.CiliumBGPPeerConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: v2alpha1.SchemeGroupVersion.String(), Kind: "CiliumBGPPeerConfig"},
		ObjectMeta: objectMeta(p.Object, p.Metadata.Name),
	}
	target := "CiliumBGPPeerConfig/" + pc.Name
	f := findings{source: p.Ref()}
	s := p.Spec

	pc.Spec.Families = peerFamilies(s.PeerAddress, s.DualStackAddressFamily, adverts)
	if s.DualStackAddressFamily {
		f.add("spec.dualStackAddressFamily", Exact, target+" spec.families", "ipv4 and ipv6 unicast over the one session")
	}
	if s.DisableMP {
		f.add("spec.disableMP", Exact, target+" spec.families", "the session carries only its own address family, as with disableMP")
	}
	switch s.PeerPort {
	case 0:
	case v2alpha1.DefaultBGPPeerPort: // MetalLB's API server writes it; leave Herald's default implicit too
		f.add("spec.peerPort", Exact, "", "179 is Herald's default too")
	default:
		pc.Spec.Transport = &v2alpha1.CiliumBGPTransport{PeerPort: ptr.To(int32(s.PeerPort))}
		f.add("spec.peerPort", Exact, target+" spec.transport.peerPort", "")
	}
	translateTimers(s.HoldTime, s.KeepaliveTime, s.ConnectTime, pc, &f)
	if s.Password != "" {
		pc.Spec.AuthSecretRef = ptr.To(pc.Name + "-bgp-password")
		f.add("spec.password", Approximate, target+" spec.authSecretRef",
			fmt.Sprintf("Herald reads TCP-MD5 passwords from Secrets only: create Secret %q with key \"password\" in Herald's bgp-secrets-namespace (default kube-system); the session waits for it (cilium.io/MissingAuthSecret)", *pc.Spec.AuthSecretRef))
	}
	if s.PasswordSecret.Name != "" {
		pc.Spec.AuthSecretRef = ptr.To(s.PasswordSecret.Name)
		f.add("spec.passwordSecret", Approximate, target+" spec.authSecretRef",
			"the same key \"password\", but Herald reads the Secret from its bgp-secrets-namespace (default kube-system), MetalLB from its own namespace: copy the Secret there")
	}
	if s.EnableGracefulRestart {
		pc.Spec.GracefulRestart = &v2alpha1.CiliumBGPNeighborGracefulRestart{Enabled: true}
		f.add("spec.enableGracefulRestart", Exact, target+" spec.gracefulRestart.enabled", "restart time 120 s, FRR's default too")
	}
	if s.EBGPMultiHop {
		pc.Spec.EBGPMultihop = ptr.To(int32(255))
		f.add("spec.ebgpMultiHop", Exact, target+" spec.ebgpMultihop: 255", "TTL 255, as FRR's ebgp-multihop without a value")
	}
	if s.BFDProfile != "" {
		if profile == nil {
			f.add("spec.bfdProfile", None, "", fmt.Sprintf("no BFDProfile %q was found", s.BFDProfile))
		} else {
			pc.Spec.BFD = &v2alpha1.CiliumBGPBFD{}
			f.add("spec.bfdProfile", Approximate, target+" spec.bfd", "the profile's settings are copied into the peer config; Herald has no separate profile object")
		}
	}
	unmappedPeerFields(s, &f)
	if pc.Spec.BFD != nil {
		return pc, append(f.findings, translateBFD(*profile, pc.Spec.BFD, target)...)
	}
	return pc, f.findings
}

// peerFamilies negotiates the peer's own address family, or both, each
// announcing the advertisements selected for the peer.
func peerFamilies(address string, dualStack bool, adverts *metav1.LabelSelector) []v2alpha1.CiliumBGPFamilyWithAdverts {
	afis := []string{v2alpha1.BGPAfiIPv4, v2alpha1.BGPAfiIPv6}
	if a, err := netip.ParseAddr(address); err == nil && !dualStack {
		afis = afis[:1]
		if a.Unmap().Is6() {
			afis = []string{v2alpha1.BGPAfiIPv6}
		}
	}
	var out []v2alpha1.CiliumBGPFamilyWithAdverts
	for _, afi := range afis {
		out = append(out, v2alpha1.CiliumBGPFamilyWithAdverts{
			CiliumBGPFamily: v2alpha1.CiliumBGPFamily{Afi: afi, Safi: v2alpha1.BGPSafiUnicast},
			Advertisements:  adverts.DeepCopy(),
		})
	}
	return out
}

// translateTimers maps MetalLB's durations to whole seconds within the
// bounds Herald's CRD accepts.
func translateTimers(hold, keepalive, connect *metav1.Duration, pc *v2alpha1.CiliumBGPPeerConfig, f *findings) {
	target := "CiliumBGPPeerConfig/" + pc.Name + " spec.timers."
	timer := func(field string, d *metav1.Duration, min, def int64, to string, set func(int32)) {
		if d == nil {
			return
		}
		secs := int64(d.Duration / time.Second)
		switch {
		case secs < min || secs > 65535:
			f.add(field, None, "", fmt.Sprintf("%s is outside the %d–65535 s Herald accepts; Herald's default %d s applies", d.Duration, min, def))
		case d.Duration%time.Second != 0:
			set(int32(secs))
			f.add(field, Approximate, target+to, "rounded down to whole seconds")
		default:
			set(int32(secs))
			f.add(field, Exact, target+to, "")
		}
	}
	timers := &v2alpha1.CiliumBGPTimers{}
	timer("spec.holdTime", hold, 3, v2alpha1.DefaultBGPHoldTimeSeconds, "holdTimeSeconds", func(s int32) { timers.HoldTimeSeconds = &s })
	timer("spec.keepaliveTime", keepalive, 1, v2alpha1.DefaultBGPKeepAliveTimeSeconds, "keepAliveTimeSeconds", func(s int32) { timers.KeepAliveTimeSeconds = &s })
	timer("spec.connectTime", connect, 1, v2alpha1.DefaultBGPConnectRetryTimeSeconds, "connectRetryTimeSeconds", func(s int32) { timers.ConnectRetryTimeSeconds = &s })
	deriveTimer(hold, keepalive, timers, target, f)
	if *timers != (v2alpha1.CiliumBGPTimers{}) {
		pc.Spec.Timers = timers
	}
}

// deriveTimer fills in the timer MetalLB derives when only one of hold
// time and keepalive is given (keepalive a third of the hold time, or the
// hold time three keepalives). Herald's default for the missing one
// (30 s, 90 s) would differ, and a keepalive above the hold time makes
// the agent refuse the peer config.
func deriveTimer(hold, keepalive *metav1.Duration, timers *v2alpha1.CiliumBGPTimers, target string, f *findings) {
	switch {
	case hold != nil && keepalive == nil && timers.HoldTimeSeconds != nil:
		timers.KeepAliveTimeSeconds = ptr.To(max(*timers.HoldTimeSeconds/3, 1))
		f.add("spec.keepaliveTime", Exact, target+"keepAliveTimeSeconds",
			fmt.Sprintf("not set: %d s, a third of the hold time, as MetalLB", *timers.KeepAliveTimeSeconds))
	case hold == nil && keepalive != nil && timers.KeepAliveTimeSeconds != nil:
		secs := 3 * int64(*timers.KeepAliveTimeSeconds)
		if secs > 65535 {
			f.add("spec.holdTime", Approximate, target+"holdTimeSeconds",
				fmt.Sprintf("not set: MetalLB takes three keepalives (%d s), Herald accepts at most 65535 s", secs))
			secs = 65535
		} else {
			f.add("spec.holdTime", Exact, target+"holdTimeSeconds",
				fmt.Sprintf("not set: %d s, three keepalives, as MetalLB", secs))
		}
		timers.HoldTimeSeconds = ptr.To(int32(secs))
	}
}

// unmappedPeerFields reports the BGPPeer fields Herald has no place for.
func unmappedPeerFields(s BGPPeerSpec, f *findings) {
	if s.DynamicASN != "" {
		f.add("spec.dynamicASN", None, "", "Herald needs the peer's ASN (peerASN)")
	}
	if s.SourceAddress != "" {
		f.add("spec.sourceAddress", None, "", "a source address is per node in Herald: a CiliumBGPNodeConfigOverride's peers[].localAddress")
	}
	if s.RouterID != "" {
		f.add("spec.routerID", None, "", "a router ID is per node in Herald: a CiliumBGPNodeConfigOverride's routerID (default: the node's IPv4 InternalIP)")
	}
	if s.VRF != "" {
		f.add("spec.vrf", None, "", "no VRFs: Herald peers from the node's main routing table")
	}
}
