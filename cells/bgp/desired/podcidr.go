package desired

import (
	"log/slog"
	"slices"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// podCIDRNotice logs, once per CiliumBGPAdvertisement, that its PodCIDR
// entries advertise nothing under multi-pool IPAM (inputs.multiPool).
// Cilium says it once at start ("Unsupported IPAM mode, disabling PodCIDR
// advertisements"); naming the advertisement tells the user which one to
// change. An advertisement that stops asking and asks again is logged
// again.
type podCIDRNotice struct {
	log    *slog.Logger
	logged map[string]bool
}

func (n *podCIDRNotice) notice(multiPool bool, adverts []*tables.BGPAdvertisement) {
	asking := podCIDRAdverts(multiPool, adverts)
	for _, name := range asking {
		if !n.logged[name] {
			n.logged[name] = true
			n.log.Warn("CiliumBGPAdvertisement asks for PodCIDR, which is not advertised with multi-pool IPAM; advertise the pod CIDRs with a CiliumPodIPPool entry",
				"advertisement", name)
		}
	}
	for name := range n.logged {
		if !slices.Contains(asking, name) {
			delete(n.logged, name)
		}
	}
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
