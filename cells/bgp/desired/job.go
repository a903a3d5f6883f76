package desired

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"slices"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/cells/bgp/bgpconfig"
	"github.com/heraldlb/herald/cells/ground/agentconfig"
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
	Instances      statedb.RWTable[*tables.BGPInstance]
	Routes         statedb.RWTable[*tables.BGPRoute]
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
	waitFor := []tables.Initializable{p.Nodes, p.ClusterConfigs, p.PeerConfigs, p.Adverts, p.Overrides, p.Secrets, p.Services, p.Slices}
	if p.Agent.MultiPool() {
		waitFor = append(waitFor, p.PodPools, p.CiliumNodes)
	}
	if err := tables.WaitInitialized(ctx, p.DB, waitFor...); err != nil {
		return nil
	}
	self := p.Agent.Node()
	initialized := false
	for {
		txn := p.DB.ReadTxn()
		var watches []<-chan struct{}
		watch := func(w <-chan struct{}) { watches = append(watches, w) }

		node, _, w, _ := p.Nodes.GetWatch(txn, tables.NodeNameIndex.Query(self))
		watch(w)
		ccs, w := p.ClusterConfigs.AllWatch(txn)
		watch(w)
		pcs, w := p.PeerConfigs.AllWatch(txn)
		watch(w)
		advs, w := p.Adverts.AllWatch(txn)
		watch(w)
		ov, _, w, _ := p.Overrides.GetWatch(txn, tables.BGPNodeOverrideNameIndex.Query(self))
		watch(w)
		secrets, w := p.Secrets.AllWatch(txn)
		watch(w)
		svcs, w := p.Services.AllWatch(txn)
		watch(w)
		_, w = p.Slices.AllWatch(txn)
		watch(w)
		in := inputs{
			self: node, clusterConfigs: statedb.Collect(ccs), peerConfigs: map[string]*tables.BGPPeerConfig{},
			adverts: statedb.Collect(advs), override: ov, secrets: map[string]*tables.BGPSecret{},
			services: statedb.Collect(svcs),
			readyHere: func(svc string) bool {
				for s := range p.Slices.List(txn, tables.EndpointSliceServiceIndex.Query(svc)) {
					if slices.Contains(s.ReadyNodes, self) {
						return true
					}
				}
				return false
			},
		}
		for pc := range pcs {
			in.peerConfigs[pc.Name] = pc
		}
		for s := range secrets {
			in.secrets[s.Name] = s
		}
		if p.Agent.MultiPool() {
			pools, w := p.PodPools.AllWatch(txn)
			watch(w)
			in.podPools = statedb.Collect(pools)
			cn, _, w, _ := p.CiliumNodes.GetWatch(txn, tables.CiliumNodeNameIndex.Query(self))
			watch(w)
			in.ciliumNode = cn
		}

		instances, routes := derive(in)
		instChanged, routesChanged := write(p, instances, routes, func(wtxn statedb.WriteTxn) {
			if !initialized {
				initDone(wtxn)
				initialized = true
			}
		})
		if node == nil {
			health.Degraded("waiting for Node "+self, fmt.Errorf("node %q is not in the nodes table yet", self))
		} else {
			health.OK(fmt.Sprintf("%d instances, %d routes, %d rows changed", len(instances), len(routes), instChanged+routesChanged))
		}
		if instChanged > 0 {
			logProblems(p.Log, instances)
		}

		cases := make([]reflect.SelectCase, 0, len(watches)+1)
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
		for _, w := range watches {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w)})
		}
		if i, _, _ := reflect.Select(cases); i == 0 {
			return nil
		}
	}
}

// write makes the tables hold exactly these rows, touching only those
// that changed.
func write(p params, instances []*tables.BGPInstance, routes []*tables.BGPRoute, also func(statedb.WriteTxn)) (instChanged, routesChanged int) {
	wtxn := p.DB.WriteTxn(p.Instances, p.Routes)
	defer wtxn.Commit()
	also(wtxn)
	changed := 0
	wantInst := map[string]*tables.BGPInstance{}
	for _, i := range instances {
		wantInst[i.Name] = i
	}
	for old := range p.Instances.All(wtxn) {
		if _, ok := wantInst[old.Name]; !ok {
			_, _, _ = p.Instances.Delete(wtxn, old)
			changed++
		}
	}
	for _, i := range instances {
		if old, _, ok := p.Instances.Get(wtxn, tables.BGPInstanceNameIndex.Query(i.Name)); ok && reflect.DeepEqual(old, i) {
			continue
		}
		_, _, _ = p.Instances.Insert(wtxn, i)
		changed++
	}
	instChanged, changed = changed, 0
	wantRoutes := map[string]*tables.BGPRoute{}
	for _, r := range routes {
		wantRoutes[r.Key()] = r
	}
	for old := range p.Routes.All(wtxn) {
		if _, ok := wantRoutes[old.Key()]; !ok {
			_, _, _ = p.Routes.Delete(wtxn, old)
			changed++
		}
	}
	for _, r := range routes {
		if old, _, ok := p.Routes.Get(wtxn, tables.BGPRouteKeyIndex.Query(r.Key())); ok && reflect.DeepEqual(old, r) {
			continue
		}
		_, _, _ = p.Routes.Insert(wtxn, r)
		changed++
	}
	return instChanged, changed
}

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
