package migrate

import (
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// clusterConfigs puts the peers into CiliumBGPClusterConfigs: one per
// distinct node selector (named "metallb" for every node, else after its
// first peer), with one instance per local ASN. Each peer names the peer
// config of its own name.
func clusterConfigs(peers []BGPPeer) ([]*v2alpha1.CiliumBGPClusterConfig, []Finding) {
	var out []*v2alpha1.CiliumBGPClusterConfig
	byKey := map[string]*v2alpha1.CiliumBGPClusterConfig{}
	var fs []Finding
	for _, p := range peers {
		f := findings{source: p.Ref()}
		sel, ok := orSelectors(p.Spec.NodeSelectors)
		if !ok {
			sel = nil
			f.add("spec.nodeSelectors", None, "", "several selectors of which any may match cannot be one LabelSelector; the peer is now used on every node: split it into one BGPPeer per selector first")
		}
		key, _ := json.Marshal(sel)
		cc := byKey[string(key)]
		if cc == nil {
			name := "metallb"
			if sel != nil {
				name = "metallb-" + p.Metadata.Name
			}
			cc = &v2alpha1.CiliumBGPClusterConfig{
				TypeMeta:   metav1.TypeMeta{APIVersion: v2alpha1.SchemeGroupVersion.String(), Kind: "CiliumBGPClusterConfig"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}},
				Spec:       v2alpha1.CiliumBGPClusterConfigSpec{NodeSelector: sel},
			}
			byKey[string(key)] = cc
			out = append(out, cc)
		}
		addFrom(&cc.ObjectMeta, p.Object)
		target := "CiliumBGPClusterConfig/" + cc.Name
		if ok && sel != nil {
			f.add("spec.nodeSelectors", Exact, target+" spec.nodeSelector", "")
		}
		inst := localASN(cc, p.Spec, target, &f)
		peer := v2alpha1.CiliumBGPPeer{
			Name:          p.Metadata.Name,
			PeerConfigRef: &v2alpha1.PeerConfigReference{Group: v2alpha1.SchemeGroupVersion.Group, Kind: "CiliumBGPPeerConfig", Name: p.Metadata.Name},
		}
		if p.Spec.PeerAddress != "" {
			peer.PeerAddress = ptr.To(p.Spec.PeerAddress)
			f.add("spec.peerAddress", Exact, target+" peers "+peer.Name+" peerAddress", "")
		}
		if p.Spec.Interface != "" && p.Spec.PeerAddress == "" {
			peer.AutoDiscovery = &v2alpha1.BGPAutoDiscovery{Mode: v2alpha1.BGPUnnumberedMode, Unnumbered: &v2alpha1.BGPUnnumbered{Interface: p.Spec.Interface}}
			f.add("spec.interface", Exact, target+" peers "+peer.Name+" autoDiscovery (mode Unnumbered, unnumbered.interface)",
				"BGP unnumbered over the interface, both address families on the one link-local session")
		}
		if p.Spec.PeerASN != 0 {
			peer.PeerASN = ptr.To(int64(p.Spec.PeerASN))
			f.add("spec.peerASN", Exact, target+" peers "+peer.Name+" peerASN", "")
		}
		inst.Peers = append(inst.Peers, peer)
		fs = append(fs, f.findings...)
	}
	if len(out) > 1 {
		for _, cc := range out {
			fs = append(fs, Finding{
				Source: strings.TrimPrefix(cc.Annotations[AnnotationMigratedFrom], "metallb.io "), Field: "spec.nodeSelectors", Verdict: Approximate, Target: "CiliumBGPClusterConfig/" + cc.Name,
				Reason: "peers with different node selectors go into separate cluster configs; a node two of them select runs only one (the oldest, or the one it runs already; cilium.io/ConflictingClusterConfig) where MetalLB peers with both: make sure they do not overlap",
			})
		}
	}
	return out, fs
}

// localASN returns the instance the peer goes into: that of myASN, or,
// when the peer has a localASN, that of localASN. MetalLB presents
// localASN to the peer in place of myASN (FRR's local-as no-prepend
// replace-as); a peer in myASN's instance would open with myASN, which
// the router, set up for localASN, refuses.
func localASN(cc *v2alpha1.CiliumBGPClusterConfig, s BGPPeerSpec, target string, f *findings) *v2alpha1.CiliumBGPInstance {
	if s.LocalASN == 0 {
		inst := instance(cc, s.MyASN)
		f.add("spec.myASN", Exact, fmt.Sprintf("%s bgpInstances %s localASN", target, inst.Name), "")
		return inst
	}
	inst := instance(cc, s.LocalASN)
	f.add("spec.localASN", Approximate, fmt.Sprintf("%s bgpInstances %s localASN", target, inst.Name),
		"the peer goes into an instance of that ASN, so it sees localASN alone, as with MetalLB's local-as no-prepend replace-as; the node runs that instance as a BGP speaker of its own beside myASN's")
	f.add("spec.myASN", Exact, "", "not presented to this peer: localASN replaces it, in MetalLB as in Herald")
	return inst
}

// instance returns the cluster config's instance of an ASN, adding it.
func instance(cc *v2alpha1.CiliumBGPClusterConfig, asn uint32) *v2alpha1.CiliumBGPInstance {
	name := fmt.Sprintf("asn-%d", asn)
	for i := range cc.Spec.BGPInstances {
		if cc.Spec.BGPInstances[i].Name == name {
			return &cc.Spec.BGPInstances[i]
		}
	}
	cc.Spec.BGPInstances = append(cc.Spec.BGPInstances, v2alpha1.CiliumBGPInstance{Name: name, LocalASN: ptr.To(int64(asn))})
	return &cc.Spec.BGPInstances[len(cc.Spec.BGPInstances)-1]
}

// addFrom appends a source to the migrated-from annotation.
func addFrom(meta *metav1.ObjectMeta, src Object) {
	from := meta.Annotations[AnnotationMigratedFrom]
	if from == "" {
		from = "metallb.io"
	} else {
		from += ","
	}
	meta.Annotations[AnnotationMigratedFrom] = from + " " + src.Ref()
}
