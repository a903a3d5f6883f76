package desired

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/cells/bgp/bgpconfig"
	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/internal/tablesync"
	"github.com/heraldlb/herald/tables"
)

type params struct {
	cell.In

	Agent          agentconfig.Config
	BGP            bgpconfig.Config
	Log            *slog.Logger
	DB             *statedb.DB
	Jobs           job.Group
	Nodes          statedb.Table[*tables.Node]
	ClusterConfigs statedb.Table[*tables.BGPClusterConfig]
	PeerConfigs    statedb.Table[*tables.BGPPeerConfig]
	Adverts        statedb.Table[*tables.BGPAdvertisement]
	Overrides      statedb.Table[*tables.BGPNodeOverride]
	Secrets        statedb.Table[*tables.BGPSecret]
	Services       statedb.Table[*tables.Service]
	Slices         statedb.Table[*tables.EndpointSlice]
	PodPools       statedb.Table[*tables.PodIPPool]
	CiliumNodes    statedb.Table[*tables.CiliumNode]
	Gateways       statedb.Table[*tables.BGPDefaultGateway]
	LinkNeighbors  statedb.Table[*tables.BGPLinkNeighbor]
	Devices        statedb.Table[*tables.Device]
	NodeConfigs    statedb.Table[*tables.BGPNodeConfig]
	NodeOwners     statedb.Table[*tables.BGPNodeOwner]
	Instances      statedb.RWTable[*tables.BGPInstance]
	Routes         statedb.RWTable[*tables.BGPRoute]
	Events         record.EventRecorder
}

func registerDerivation(p params) {
	if !p.BGP.EnableBGPControlPlane {
		return
	}
	wtxn := p.DB.WriteTxn(p.Instances, p.Routes)
	instancesDone := p.Instances.RegisterInitializer(wtxn, "bgp-desired")
	routesDone := p.Routes.RegisterInitializer(wtxn, "bgp-desired")
	wtxn.Commit()
	p.Jobs.Add(job.OneShot("derive", func(ctx context.Context, health cell.Health) error {
		return run(ctx, p, func(wtxn statedb.WriteTxn) { instancesDone(wtxn); routesDone(wtxn) }, health)
	}))
}

// run re-derives both tables whenever an input changes and writes the rows
// that changed, so the speaker (which follows the tables' changes) does
// work only for real changes. The tables are marked initialized with the
// first derivation from complete inputs: the speaker advertises nothing
// and opens no session before that, so a restarted agent never tells its
// peers (End-of-RIB after a graceful restart) that it has no routes.
func run(ctx context.Context, p params, initDone func(statedb.WriteTxn), health cell.Health) error {
	waitFor := []tables.Initializable{p.Nodes, p.ClusterConfigs, p.PeerConfigs, p.Adverts, p.Overrides, p.Secrets, p.Services, p.Slices, p.Gateways, p.LinkNeighbors, p.Devices,
		p.NodeConfigs, p.NodeOwners}
	if p.Agent.MultiPool() {
		waitFor = append(waitFor, p.PodPools, p.CiliumNodes)
	}
	if err := tables.WaitInitialized(ctx, p.DB, waitFor...); err != nil {
		return nil
	}
	self := p.Agent.Node()
	initialized := false
	reporter := &withheldReporter{events: p.Events, log: p.Log, reported: map[string]string{}}
	notices := &notices{log: p.Log}
	tablesync.Loop(ctx, p.DB, func(txn statedb.ReadTxn, w *tablesync.Watches) {
		in := readInputs(p, self, txn, w)
		node := in.self
		instances, routes, withheld := derive(in)
		notices.update(in.multiPool, in.adverts, in.override)
		wtxn := p.DB.WriteTxn(p.Instances, p.Routes)
		if !initialized {
			initDone(wtxn)
			initialized = true
		}
		instChanged := tablesync.Sync(wtxn, p.Instances, instances, func(i *tables.BGPInstance) string { return i.Name }, equal[*tables.BGPInstance])
		routesChanged := tablesync.Sync(wtxn, p.Routes, routes, (*tables.BGPRoute).Key, equal[*tables.BGPRoute])
		wtxn.Commit()
		if node == nil {
			health.Degraded("waiting for Node "+self, fmt.Errorf("node %q is not in the nodes table yet", self))
		} else {
			health.OK(fmt.Sprintf("%d instances, %d routes, %d rows changed", len(instances), len(routes), instChanged+routesChanged))
		}
		if instChanged > 0 {
			logProblems(p.Log, instances)
		}
		// Who reports what is withheld is decided from every Node and the
		// contested nodes' owners, read but not watched: other nodes'
		// changes do not re-derive this node's routes, and the Events can
		// wait for the next derivation.
		owners := tables.BGPOwners(in.clusterConfigs, statedb.Collect(p.Nodes.All(txn)), recordedOwners(txn, p.NodeOwners, self, in.recordedOwner))
		if node == nil || !reports(self, owners) {
			withheld = nil
		}
		reporter.report(owners[self], withheld)
	})
	return nil
}

// equal compares two rows field by field.
func equal[T any](a, b T) bool { return reflect.DeepEqual(a, b) }

// logProblems names every instance and peer that cannot run, with why.
func logProblems(log *slog.Logger, instances []*tables.BGPInstance) {
	for _, i := range instances {
		if i.Error != "" {
			log.Warn("BGP instance not run", "instance", i.Name, "clusterConfig", i.ClusterConfig, "error", i.Error)
			continue
		}
		for _, peer := range i.Peers {
			if peer.Error != "" {
				log.Warn("BGP peer not configured", "instance", i.Name, "clusterConfig", i.ClusterConfig, "peer", peer.Name, "error", peer.Error)
			}
		}
	}
}

// servedIn reports whether a Service has a ready endpoint, looking each
// Service up once per derivation (every advertisement entry, family and
// peer asks again).
func servedIn(txn statedb.ReadTxn, t statedb.Table[*tables.EndpointSlice]) func(string) bool {
	memo := map[string]bool{}
	return func(svc string) bool {
		v, ok := memo[svc]
		if !ok {
			v = tables.HasReadyEndpoint(txn, t, svc)
			memo[svc] = v
		}
		return v
	}
}
