package desired

import (
	"slices"

	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/cells/internal/tablesync"
	"github.com/heraldlb/herald/tables"
)

// readInputs reads one derivation's inputs, watching those whose changes
// re-derive.
func readInputs(p params, self string, txn statedb.ReadTxn, w *tablesync.Watches) inputs {
	node, _ := tablesync.Get(w, txn, p.Nodes, tables.NodeNameIndex.Query(self))
	ccs := tablesync.All(w, txn, p.ClusterConfigs)
	pcs := tablesync.All(w, txn, p.PeerConfigs)
	advs := tablesync.All(w, txn, p.Adverts)
	ov, _ := tablesync.Get(w, txn, p.Overrides, tables.BGPNodeOverrideNameIndex.Query(self))
	secrets := tablesync.All(w, txn, p.Secrets)
	svcs := tablesync.All(w, txn, p.Services)
	tablesync.All(w, txn, p.Slices) // watched; read per Service below
	in := inputs{
		self: node, clusterConfigs: statedb.Collect(ccs), recordedOwner: recordedOwner(txn, p.NodeConfigs, self),
		peerConfigs: map[string]*tables.BGPPeerConfig{}, adverts: statedb.Collect(advs), override: ov,
		secrets: map[string]*tables.BGPSecret{}, services: statedb.Collect(svcs),
		readyHere: func(svc string) bool {
			for s := range p.Slices.List(txn, tables.EndpointSliceServiceIndex.Query(svc)) {
				if slices.Contains(s.ReadyNodes, self) {
					return true
				}
			}
			return false
		},
		served:       servedIn(txn, p.Slices),
		keepUnserved: p.Agent.EnableNoServiceEndpointsRoutable,
		multiPool:    p.Agent.MultiPool(),
	}
	in.gateways = map[string]*tables.BGPDefaultGateway{}
	for g := range tablesync.All(w, txn, p.Gateways) {
		in.gateways[g.Family] = g
	}
	in.devices = statedb.Collect(tablesync.All(w, txn, p.Devices))
	in.linkNeighbors = statedb.Collect(tablesync.All(w, txn, p.LinkNeighbors))
	for pc := range pcs {
		in.peerConfigs[pc.Name] = pc
	}
	for s := range secrets {
		in.secrets[s.Name] = s
	}
	if p.Agent.MultiPool() {
		in.podPools = statedb.Collect(tablesync.All(w, txn, p.PodPools))
		cn, _ := tablesync.Get(w, txn, p.CiliumNodes, tables.CiliumNodeNameIndex.Query(self))
		in.ciliumNode = cn
	}
	return in
}

// recordedOwner is the cluster config this node's CiliumBGPNodeConfig
// names, read but not watched: the object changes with every session
// counter the agent writes into it, and what it names is what this cell
// decided last. It matters when another cluster config comes to select
// the node, a change of those that re-derives anyway.
func recordedOwner(txn statedb.ReadTxn, t statedb.Table[*tables.BGPNodeConfig], self string) string {
	if nc, _, ok := t.Get(txn, tables.BGPNodeConfigNameIndex.Query(self)); ok {
		return nc.ClusterConfig
	}
	return ""
}

// recordedOwners are the owners the contested nodes' CiliumBGPNodeConfigs
// name, by node, with this node's own.
func recordedOwners(txn statedb.ReadTxn, t statedb.Table[*tables.BGPNodeOwner], self, own string) map[string]string {
	m := map[string]string{}
	for o := range t.All(txn) {
		m[o.Node] = o.ClusterConfig
	}
	m[self] = own
	return m
}
