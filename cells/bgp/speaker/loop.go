package speaker

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/netip"
	"reflect"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	api "github.com/osrg/gobgp/v3/api"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldlb/herald/cells/bgp/bgpconfig"
	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/tables"
)

type params struct {
	cell.In

	Agent     agentconfig.Config
	BGP       bgpconfig.Config
	Log       *slog.Logger
	DB        *statedb.DB
	Jobs      job.Group
	Instances statedb.Table[*tables.BGPInstance]
	Routes    statedb.Table[*tables.BGPRoute]
	Peers     statedb.RWTable[*tables.BGPPeerState]
	BFD       statedb.Table[*tables.BGPBFDSession]
	Devices   statedb.Table[*tables.Device]
	Metrics   prometheus.Registerer `optional:"true"`
}

func registerSpeaker(p params) {
	if !p.BGP.EnableBGPControlPlane {
		return
	}
	if p.Metrics != nil {
		p.Metrics.MustRegister(&peerCollector{db: p.DB, peers: p.Peers, now: time.Now})
	}
	p.Jobs.Add(job.OneShot("speak", func(ctx context.Context, health cell.Health) error {
		return run(ctx, p, health)
	}))
}

// How often the sessions' state is read from GoBGP besides on its events
// (counters change without one), and how soon a failed GoBGP call is
// tried again.
const (
	peerRefreshInterval = 2 * time.Second
	retryInterval       = time.Second
)

type prefixKey struct {
	instance string
	prefix   netip.Prefix
}

// run starts nothing until bgp-instances and bgp-routes hold their first
// complete derivation. A new instance gets its routes before its peers, so
// the first UPDATEs (and, with graceful restart, the End-of-RIB) a peer
// receives carry everything the node advertises.
func run(ctx context.Context, p params, health cell.Health) error {
	if err := tables.WaitInitialized(ctx, p.DB, p.Instances, p.Routes, p.Devices); err != nil {
		return nil
	}
	wtxn := p.DB.WriteTxn(p.Routes)
	changes, err := p.Routes.Changes(wtxn)
	wtxn.Commit()
	if err != nil {
		return err
	}

	speakers := map[string]*speaker{}
	defer func() {
		// The agent stops: the sessions end with the process, without a
		// Cease, so that peers with graceful restart keep the routes.
		for _, s := range speakers {
			s.stop(context.Background(), false)
		}
	}()
	peerEvent := make(chan struct{}, 1)
	refresh := time.NewTicker(peerRefreshInterval)
	defer refresh.Stop()
	retry := map[prefixKey]bool{}
	bfdSeen := bfdFailures{}

	for {
		txn := p.DB.ReadTxn()
		dirty := retry
		retry = map[prefixKey]bool{}
		chs, routesWatch := changes.Next(txn)
		for ch := range chs {
			dirty[prefixKey{ch.Object.Instance, ch.Object.Prefix}] = true
		}

		insts, instWatch := p.Instances.AllWatch(txn)
		want := runnableInstances(insts)
		errs := reconcileSpeakers(ctx, p, txn, speakers, want, dirty, peerEvent)
		_, devWatch := p.Devices.AllWatch(txn)
		applyNextHops(p, txn, speakers, want, dirty)
		prefixErrs, resetOut := applyPrefixes(ctx, p, txn, speakers, configuredPeers(want), dirty, retry)
		errs = append(errs, prefixErrs...)
		errs = append(errs, applyPeers(ctx, speakers, want, resetOut)...)
		bfdRows, bfdWatch := resetOnBFDFailure(ctx, p, speakers, bfdSeen)
		writePeerStates(ctx, p, speakers, bfdRows)

		retryC := reportRound(p, health, speakers, errs, retry)
		w := wake{inst: instWatch, routes: routesWatch, devices: devWatch, retry: retryC, peerEvent: peerEvent, refresh: refresh.C, bfd: bfdWatch}
		if !waitForChange(ctx, p, speakers, w, bfdSeen, bfdRows) {
			return nil
		}
	}
}

// runnableInstances are the instances a speaker should run for: those
// whose configuration was derived without error.
func runnableInstances(insts iter.Seq2[*tables.BGPInstance, statedb.Revision]) map[string]*tables.BGPInstance {
	want := map[string]*tables.BGPInstance{}
	for inst := range insts {
		if inst.Error == "" {
			want[inst.Name] = inst
		}
	}
	return want
}

// reconcileSpeakers stops the speakers whose instance is gone or changed
// its global settings, and starts those of new instances. A new speaker
// has all its instance's prefixes marked dirty, so it advertises them
// before its peers are configured.
func reconcileSpeakers(ctx context.Context, p params, txn statedb.ReadTxn, speakers map[string]*speaker, want map[string]*tables.BGPInstance, dirty map[prefixKey]bool, peerEvent chan<- struct{}) []error {
	var errs []error
	for name, s := range speakers {
		if w, ok := want[name]; ok && s.sameGlobal(w) {
			continue
		}
		p.Log.Info("Stopping BGP instance", "instance", name)
		s.stop(ctx, true)
		delete(speakers, name)
	}
	for name, inst := range want {
		if speakers[name] != nil {
			continue
		}
		s, err := startSpeaker(ctx, inst, newGoBGPLogger(p.Log.With("instance", name)))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.Log.Info("Started BGP instance", "instance", name, "asn", inst.LocalASN, "routerID", inst.RouterID, "listenPort", inst.ListenPort)
		speakers[name] = s
		watchPeers(ctx, s, peerEvent)
		for r := range p.Routes.All(txn) {
			if r.Instance == name {
				dirty[prefixKey{name, r.Prefix}] = true
			}
		}
	}
	return errs
}

// configuredPeers lists, by instance, the peers configured after this
// round: setPrefix must withdraw a prefix from the RIB when one of them
// stops receiving it.
func configuredPeers(want map[string]*tables.BGPInstance) map[string]map[string]bool {
	staying := map[string]map[string]bool{}
	for name, inst := range want {
		staying[name] = map[string]bool{}
		for _, peer := range inst.Peers {
			if peer.Error == "" {
				staying[name][peer.Name] = true
			}
		}
	}
	return staying
}

// applyPrefixes brings the dirty prefixes of the running speakers up to
// date, marking those that failed in retry. The peers whose export
// changed are soft-reset later, by applyPeers, once per peer.
func applyPrefixes(ctx context.Context, p params, txn statedb.ReadTxn, speakers map[string]*speaker, staying map[string]map[string]bool, dirty, retry map[prefixKey]bool) (errs []error, resetOut map[string]map[netip.Addr]bool) {
	resetOut = map[string]map[netip.Addr]bool{}
	for k := range dirty {
		s := speakers[k.instance]
		if s == nil {
			continue // not running: its routes wait for it
		}
		if resetOut[k.instance] == nil {
			resetOut[k.instance] = map[netip.Addr]bool{}
		}
		routes := statedb.Collect(p.Routes.List(txn, tables.BGPRoutePrefixIndex.Query(k.instance+"/"+k.prefix.String())))
		if err := s.setPrefix(ctx, k.prefix, routes, staying[k.instance], resetOut[k.instance]); err != nil {
			errs = append(errs, fmt.Errorf("instance %q: %w", k.instance, err))
			retry[k] = true
		}
	}
	return errs, resetOut
}

// applyPeers configures every running speaker's peers, then soft-resets
// the peers whose export changed this round.
func applyPeers(ctx context.Context, speakers map[string]*speaker, want map[string]*tables.BGPInstance, resetOut map[string]map[netip.Addr]bool) []error {
	var errs []error
	for name, s := range speakers {
		if err := s.setPeers(ctx, want[name].Peers); err != nil {
			errs = append(errs, fmt.Errorf("instance %q: %w", name, err))
		}
		if err := s.softResetOut(ctx, resetOut[name]); err != nil {
			errs = append(errs, fmt.Errorf("instance %q: %w", name, err))
		}
	}
	return errs
}

// reportRound reports the round's outcome to health and returns the
// channel that fires when the round should be retried (nil when nothing
// failed).
func reportRound(p params, health cell.Health, speakers map[string]*speaker, errs []error, retry map[prefixKey]bool) <-chan time.Time {
	var retryC <-chan time.Time
	if err := errors.Join(errs...); err != nil {
		p.Log.Warn("BGP speaker could not apply everything; retrying", "error", err)
		health.Degraded("BGP speaker", err)
		retryC = time.After(retryInterval)
	} else {
		health.OK(fmt.Sprintf("%d instances running", len(speakers)))
	}
	if len(retry) > 0 || len(errs) > 0 {
		retryC = time.After(retryInterval)
	}
	return retryC
}

// wake is what ends or interrupts the wait between rounds.
type wake struct {
	inst, routes <-chan struct{}
	// devices fires when an address or interface changes: the IPv6 next
	// hops are resolved again.
	devices   <-chan struct{}
	retry     <-chan time.Time
	peerEvent <-chan struct{}
	refresh   <-chan time.Time
	bfd       <-chan struct{}
}

// waitForChange blocks until an instance or route changes or the retry is
// due, refreshing bgp-peers meanwhile on session events and on the
// ticker, and resetting sessions whose BFD session fails as soon as
// bgp-bfd says so. It returns false once ctx ends.
func waitForChange(ctx context.Context, p params, speakers map[string]*speaker, w wake, bfdSeen bfdFailures, bfdRows map[netip.Addr]*tables.BGPBFDSession) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-w.inst:
			return true
		case <-w.routes:
			return true
		case <-w.devices:
			return true
		case <-w.retry:
			return true
		case <-w.bfd:
			bfdRows, w.bfd = resetOnBFDFailure(ctx, p, speakers, bfdSeen)
			writePeerStates(ctx, p, speakers, bfdRows)
		case <-w.peerEvent:
			writePeerStates(ctx, p, speakers, bfdRows)
		case <-w.refresh:
			writePeerStates(ctx, p, speakers, bfdRows)
		}
	}
}

// watchPeers signals peerEvent whenever a session of s changes state.
func watchPeers(ctx context.Context, s *speaker, peerEvent chan<- struct{}) {
	ctx, s.cancel = context.WithCancel(ctx)
	_ = s.srv.WatchEvent(ctx, &api.WatchEventRequest{Peer: &api.WatchEventRequest_Peer{}}, func(*api.WatchEventResponse) {
		select {
		case peerEvent <- struct{}{}:
		default:
		}
	})
}

// writePeerStates makes bgp-peers hold the sessions of the running
// speakers, writing only rows that changed.
func writePeerStates(ctx context.Context, p params, speakers map[string]*speaker, bfdRows map[netip.Addr]*tables.BGPBFDSession) {
	want := map[string]*tables.BGPPeerState{}
	for _, s := range speakers {
		for _, st := range s.peerStates(ctx, bfdRows) {
			want[st.Key()] = st
		}
	}
	wtxn := p.DB.WriteTxn(p.Peers)
	defer wtxn.Commit()
	for old := range p.Peers.All(wtxn) {
		if _, ok := want[old.Key()]; !ok {
			_, _, _ = p.Peers.Delete(wtxn, old)
		}
	}
	for k, st := range want {
		if old, _, ok := p.Peers.Get(wtxn, tables.BGPPeerKeyIndex.Query(k)); ok && reflect.DeepEqual(old, st) {
			continue
		}
		_, _, _ = p.Peers.Insert(wtxn, st)
	}
}
