package tables

import "cmp"

// BGPOwnerOf is the cluster config whose instances a node runs, of those
// that select it ("" for none). The one the node's CiliumBGPNodeConfig
// names (recorded) keeps the node, as in Cilium, whose operator skips
// the nodes whose node config another cluster config owns: a config
// created or widened later never takes over sessions already up.
//
// Without a recorded owner among them (a new node, or its owner stopped
// selecting it) the oldest wins, by creationTimestamp then name. Cilium's
// operator gives such a node to whichever config it happens to reconcile
// first; Herald's agents decide each for itself and must agree, and the
// oldest is a choice they share and one a newly created config cannot
// upset.
func BGPOwnerOf(configs []*BGPClusterConfig, nodeLabels map[string]string, recorded string) string {
	var oldest *BGPClusterConfig
	for _, cc := range configs {
		if !cc.SelectsNode(nodeLabels) {
			continue
		}
		if cc.Name == recorded {
			return cc.Name
		}
		if oldest == nil || olderBGPClusterConfig(cc, oldest) {
			oldest = cc
		}
	}
	if oldest == nil {
		return ""
	}
	return oldest.Name
}

func olderBGPClusterConfig(a, b *BGPClusterConfig) bool {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp); c != 0 {
		return c < 0
	}
	return cmp.Less(a.Name, b.Name)
}

// BGPOwners maps every node some cluster config selects to its owner
// (BGPOwnerOf), with the owners recorded by node name.
func BGPOwners(configs []*BGPClusterConfig, nodes []*Node, recorded map[string]string) map[string]string {
	owners := map[string]string{}
	for _, n := range nodes {
		if o := BGPOwnerOf(configs, n.Labels, recorded[n.Name]); o != "" {
			owners[n.Name] = o
		}
	}
	return owners
}

// BGPContested reports whether several cluster configs select the node.
func BGPContested(configs []*BGPClusterConfig, nodeLabels map[string]string) bool {
	n := 0
	for _, cc := range configs {
		if cc.SelectsNode(nodeLabels) {
			n++
		}
	}
	return n > 1
}
