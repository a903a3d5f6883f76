package desired

import (
	"log/slog"
	"slices"
	"strings"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// Settings the resources ask for and Herald, as Cilium, does not apply:
// each is logged once when it appears, not at every derivation.

// onceLog remembers what was logged: a key is logged when it appears and
// forgotten when it goes, so that one that comes back is logged again.
type onceLog struct{ logged map[string]bool }

func (o *onceLog) update(keys []string, log func(key string)) {
	if o.logged == nil {
		o.logged = map[string]bool{}
	}
	for _, k := range keys {
		if !o.logged[k] {
			o.logged[k] = true
			log(k)
		}
	}
	for k := range o.logged {
		if !slices.Contains(keys, k) {
			delete(o.logged, k)
		}
	}
}

// notices logs the settings of this node's resources that have no
// effect.
type notices struct {
	log                      *slog.Logger
	podCIDRs, peerLocalPorts onceLog
}

// update logs, once each: the CiliumBGPAdvertisements whose PodCIDR
// entries advertise nothing under multi-pool IPAM (inputs.multiPool;
// Cilium says it once at start, "Unsupported IPAM mode, disabling PodCIDR
// advertisements", while naming the advertisement tells the user which to
// change), and this node's CiliumBGPNodeConfigOverride when it sets a
// peer's localPort.
func (n *notices) update(multiPool bool, adverts []*tables.BGPAdvertisement, override *tables.BGPNodeOverride) {
	n.podCIDRs.update(podCIDRAdverts(multiPool, adverts), func(name string) {
		n.log.Warn("CiliumBGPAdvertisement asks for PodCIDR, which is not advertised with multi-pool IPAM; advertise the pod CIDRs with a CiliumPodIPPool entry",
			"advertisement", name)
	})
	var ignored []string
	if peers := peerLocalPorts(override); len(peers) > 0 {
		ignored = []string{override.Name + ": " + strings.Join(peers, ", ")}
	}
	n.peerLocalPorts.update(ignored, func(string) {
		n.log.Warn("CiliumBGPNodeConfigOverride sets localPort of peers, which has no effect (deprecated in Cilium): the kernel picks the source port",
			"override", override.Name, "peers", peerLocalPorts(override))
	})
}

// podCIDRAdverts are the names of the advertisements with a PodCIDR entry
// when multi-pool IPAM ignores them; none otherwise.
func podCIDRAdverts(multiPool bool, adverts []*tables.BGPAdvertisement) []string {
	if !multiPool {
		return nil
	}
	var names []string
	for _, a := range adverts {
		if slices.ContainsFunc(a.Advertisements, func(e tables.BGPAdvert) bool { return e.Type == v2alpha1.BGPPodCIDRAdvert }) {
			names = append(names, a.Name)
		}
	}
	return names
}

// peerLocalPorts are the override's peers that set localPort, as
// "instance/peer".
func peerLocalPorts(o *tables.BGPNodeOverride) []string {
	if o == nil {
		return nil
	}
	var peers []string
	for _, i := range o.Instances {
		for _, p := range i.IgnoredPeerLocalPorts {
			peers = append(peers, i.Name+"/"+p)
		}
	}
	return peers
}
