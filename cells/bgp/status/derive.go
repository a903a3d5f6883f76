package status

import (
	"context"
	"slices"
	"strings"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/cells/bgp/bgpconfig"
	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/internal/tablesync"
	"github.com/heraldlb/herald/tables"
)

type deriveParams struct {
	cell.In

	Agent          agentconfig.Config
	BGP            bgpconfig.Config
	DB             *statedb.DB
	Jobs           job.Group
	Instances      statedb.Table[*tables.BGPInstance]
	Peers          statedb.Table[*tables.BGPPeerState]
	ClusterConfigs statedb.Table[*tables.BGPClusterConfig]
	PeerConfigs    statedb.Table[*tables.BGPPeerConfig]
	Adverts        statedb.Table[*tables.BGPAdvertisement]
	Secrets        statedb.Table[*tables.BGPSecret]
	Nodes          statedb.Table[*tables.Node]
	NodeConfigs    statedb.Table[*tables.BGPNodeConfig]
	NodeOwners     statedb.Table[*tables.BGPNodeOwner]
	ResourceStatus statedb.RWTable[*tables.BGPResourceStatus]
	NodeStatus     statedb.RWTable[*tables.BGPNodeStatus]
}

// registerDerivations keeps bgp-resource-status (one row per cluster-wide
// resource: its problems) and bgp-node-status (this node's row) as the
// inputs say; the reconcilers write them to the API server.
func registerDerivations(p deriveParams) {
	if !p.BGP.EnableBGPControlPlane {
		return
	}
	p.Jobs.Add(job.OneShot("derive-resource-status", func(ctx context.Context, _ cell.Health) error {
		if err := tables.WaitInitialized(ctx, p.DB, p.ClusterConfigs, p.PeerConfigs, p.Adverts, p.Secrets, p.Nodes, p.NodeOwners); err != nil {
			return nil
		}
		tablesync.Loop(ctx, p.DB, func(txn statedb.ReadTxn, w *tablesync.Watches) {
			ccs := tablesync.All(w, txn, p.ClusterConfigs)
			pcs := tablesync.All(w, txn, p.PeerConfigs)
			advs := tablesync.All(w, txn, p.Adverts)
			secrets := tablesync.All(w, txn, p.Secrets)
			nodes := tablesync.All(w, txn, p.Nodes)
			recorded := map[string]string{}
			for o := range tablesync.All(w, txn, p.NodeOwners) {
				recorded[o.Node] = o.ClusterConfig
			}
			rows := resourceStatus(statedb.Collect(ccs), statedb.Collect(pcs), statedb.Collect(advs), statedb.Collect(secrets), statedb.Collect(nodes), recorded, p.BGP.EnableBGPControlPlaneStatusReport)
			wtxn := p.DB.WriteTxn(p.ResourceStatus)
			tablesync.Sync(wtxn, p.ResourceStatus, rows, (*tables.BGPResourceStatus).Key, (*tables.BGPResourceStatus).Same)
			wtxn.Commit()
		})
		return nil
	}))
	p.Jobs.Add(job.OneShot("derive-node-status", func(ctx context.Context, _ cell.Health) error {
		if err := tables.WaitInitialized(ctx, p.DB, p.Instances, p.NodeConfigs, p.Nodes, p.ClusterConfigs); err != nil {
			return nil
		}
		self := p.Agent.Node()
		tablesync.Loop(ctx, p.DB, func(txn statedb.ReadTxn, w *tablesync.Watches) {
			insts := tablesync.All(w, txn, p.Instances)
			peers := tablesync.All(w, txn, p.Peers)
			seen, _ := tablesync.Get(w, txn, p.NodeConfigs, tables.BGPNodeConfigNameIndex.Query(self))
			node, _ := tablesync.Get(w, txn, p.Nodes, tables.NodeNameIndex.Query(self))
			ccs := tablesync.All(w, txn, p.ClusterConfigs)
			row := &tables.BGPNodeStatus{Node: self, Instances: statedb.Collect(insts), Status: reconciler.StatusPending()}
			if p.BGP.EnableBGPControlPlaneStatusReport {
				row.Peers = statedb.Collect(peers) // else no status: sessions need no write
			}
			if len(row.Instances) > 0 {
				row.ClusterConfig = row.Instances[0].ClusterConfig // one owner gives them all
			}
			if node != nil {
				row.NodeUID = node.UID
				row.Contested = tables.BGPContested(statedb.Collect(ccs), node.Labels)
			}
			if seen != nil {
				row.Seen = seen.ResourceVersion
			}
			wtxn := p.DB.WriteTxn(p.NodeStatus)
			tablesync.Sync(wtxn, p.NodeStatus, []*tables.BGPNodeStatus{row}, func(s *tables.BGPNodeStatus) string { return s.Node }, (*tables.BGPNodeStatus).Same)
			wtxn.Commit()
		})
		return nil
	}))
}

// resourceStatus is the row of every cluster-wide BGP resource: pure.
func resourceStatus(ccs []*tables.BGPClusterConfig, pcs []*tables.BGPPeerConfig, advs []*tables.BGPAdvertisement,
	secrets []*tables.BGPSecret, nodes []*tables.Node, recorded map[string]string, report bool) []*tables.BGPResourceStatus {
	pcByName := map[string]*tables.BGPPeerConfig{}
	for _, pc := range pcs {
		pcByName[pc.Name] = pc
	}
	secretByName := map[string]*tables.BGPSecret{}
	for _, s := range secrets {
		secretByName[s.Name] = s
	}
	var rows []*tables.BGPResourceStatus
	add := func(kind, name, uid string, generation int64, conditions []metav1.Condition, want []tables.BGPCondition) {
		if !report {
			want = nil // enable-bgp-control-plane-status-report off: Herald's conditions go
		}
		rows = append(rows, &tables.BGPResourceStatus{Kind: kind, Name: name, UID: uid, Generation: generation,
			Conditions: slices.Clone(conditions), Want: want, Status: reconciler.StatusPending()})
	}
	// Each node's cluster config as its agent decides it (bgp-desired):
	// the owner its node config names when several select it (recorded,
	// from the contested nodes' node configs), else the oldest. A node
	// newly contested is not labelled yet: until its agent has written
	// it, the oldest stands in, and the conditions follow once it has.
	owners := tables.BGPOwners(ccs, nodes, recorded)
	for _, cc := range ccs {
		add(v2alpha1.BGPClusterConfigKind, cc.Name, cc.UID, cc.Generation, cc.Conditions, clusterConfigConditions(cc, nodes, pcByName, owners))
	}
	for _, pc := range pcs {
		add(v2alpha1.BGPPeerConfigKind, pc.Name, pc.UID, pc.Generation, pc.Conditions, peerConfigConditions(pc, secretByName))
	}
	for _, a := range advs {
		add(v2alpha1.BGPAdvertisementKind, a.Name, a.UID, a.Generation, a.Conditions, advertisementConditions(a))
	}
	slices.SortFunc(rows, func(a, b *tables.BGPResourceStatus) int { return strings.Compare(a.Key(), b.Key()) })
	return rows
}
