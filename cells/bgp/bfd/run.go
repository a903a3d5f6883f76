package bfd

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/cells/bgp/bgpconfig"
	bfdproto "github.com/heraldlb/herald/cells/bgp/internal/bfd"
	"github.com/heraldlb/herald/tables"
)

type params struct {
	cell.In

	BGP       bgpconfig.Config
	Log       *slog.Logger
	DB        *statedb.DB
	Jobs      job.Group
	Instances statedb.Table[*tables.BGPInstance]
	Sessions  statedb.RWTable[*tables.BGPBFDSession]
}

func registerBFD(p params) {
	if !p.BGP.EnableBGPControlPlane {
		return
	}
	p.Jobs.Add(job.OneShot("bfd", func(ctx context.Context, health cell.Health) error {
		return run(ctx, p, health)
	}))
}

// want is one session as the peers ask for it.
type want struct {
	local netip.Addr
	cfg   tables.BGPBFD
}

// run keeps one session per peer address that some instance's peer with
// BFD names. When the agent stops, the sessions end AdminDown (RFC 5882
// §3.2: the peer does not take that for a failure of the path).
func run(ctx context.Context, p params, health cell.Health) error {
	w := &writer{db: p.DB, table: p.Sessions, specs: map[netip.Addr]want{}}
	srv := bfdproto.NewServer(p.Log, w.report)
	defer srv.Close()
	running := map[netip.Addr]want{}
	for {
		insts, watch := p.Instances.AllWatch(p.DB.ReadTxn())
		wanted, conflicts := desiredSessions(insts)
		var errs []string
		for addr := range running {
			if _, ok := wanted[addr]; !ok {
				srv.Remove(addr)
				w.forget(addr)
				delete(running, addr)
				p.Log.Info("Stopped BFD session", "peer", addr)
			}
		}
		for addr, s := range wanted {
			if cur, ok := running[addr]; ok && cur == s {
				continue
			}
			w.set(addr, s)
			if err := srv.Add(addr, s.local, protoConfig(s.cfg)); err != nil {
				errs = append(errs, err.Error())
				w.failed(addr, err)
				continue
			}
			running[addr] = s
			p.Log.Info("Started BFD session", "peer", addr, "local", s.local, "config", s.cfg.String())
		}
		errs = append(errs, conflicts...)
		if len(errs) > 0 {
			slices.Sort(errs)
			health.Degraded("BFD", fmt.Errorf("%s", strings.Join(errs, "; ")))
		} else {
			health.OK(fmt.Sprintf("%d BFD sessions", len(running)))
		}
		var retry <-chan time.Time
		if len(running) < len(wanted) {
			retry = time.After(5 * time.Second)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-watch:
		case <-retry:
		}
	}
}

// desiredSessions: one session per peer address with BFD, among the
// instances and peers that run. Two peers of one address asking for
// different settings get the first instance's (by name); the others are
// reported.
func desiredSessions(insts iter.Seq2[*tables.BGPInstance, statedb.Revision]) (map[netip.Addr]want, []string) {
	out := map[netip.Addr]want{}
	from := map[netip.Addr]string{}
	var conflicts []string
	for inst := range insts { // in name order
		if inst.Error != "" {
			continue
		}
		for _, peer := range inst.Peers {
			if peer.Error != "" || peer.BFD == nil || !peer.Address.IsValid() {
				continue
			}
			// A link-local peer's zone is the interface the session is
			// bound to, and the local address needs it too.
			local := peer.LocalAddress
			if local.IsValid() && peer.Address.Zone() != "" {
				local = local.WithZone(peer.Address.Zone())
			}
			w := want{local: local, cfg: *peer.BFD}
			if cur, ok := out[peer.Address]; ok {
				if cur != w {
					conflicts = append(conflicts, fmt.Sprintf("peer %q of instance %q: BFD with %s already runs with the settings of %s", peer.Name, inst.Name, peer.Address, from[peer.Address]))
				}
				continue
			}
			out[peer.Address], from[peer.Address] = w, fmt.Sprintf("instance %q", inst.Name)
		}
	}
	return out, conflicts
}

func protoConfig(c tables.BGPBFD) bfdproto.Config {
	return bfdproto.Config{
		DesiredMinTx:  time.Duration(c.TransmitIntervalMs) * time.Millisecond,
		RequiredMinRx: time.Duration(c.ReceiveIntervalMs) * time.Millisecond,
		DetectMult:    uint8(c.DetectMultiplier),
		Passive:       c.Passive,
	}
}

// writer turns the sessions' reports into bgp-bfd rows.
type writer struct {
	db    *statedb.DB
	table statedb.RWTable[*tables.BGPBFDSession]

	mu    sync.Mutex
	specs map[netip.Addr]want
}

func (w *writer) set(addr netip.Addr, s want) {
	w.mu.Lock()
	w.specs[addr] = s
	w.mu.Unlock()
}

func (w *writer) forget(addr netip.Addr) {
	w.mu.Lock()
	delete(w.specs, addr)
	w.mu.Unlock()
	wtxn := w.db.WriteTxn(w.table)
	_, _, _ = w.table.Delete(wtxn, &tables.BGPBFDSession{Peer: addr})
	wtxn.Commit()
}

func (w *writer) failed(addr netip.Addr, err error) {
	w.mu.Lock()
	s := w.specs[addr]
	w.mu.Unlock()
	wtxn := w.db.WriteTxn(w.table)
	_, _, _ = w.table.Insert(wtxn, &tables.BGPBFDSession{Peer: addr, Local: s.local, Config: s.cfg,
		State: tables.BFDStateDown, RemoteState: tables.BFDStateDown, Error: err.Error()})
	wtxn.Commit()
}

// report writes one session's status. A session going from Up to Down
// for any reason but the peer's AdminDown counts as a failure; a new
// session (new local discriminator) after a reconfiguration does not.
func (w *writer) report(addr netip.Addr, st bfdproto.Status) {
	w.mu.Lock()
	s := w.specs[addr]
	w.mu.Unlock()
	row := &tables.BGPBFDSession{Peer: addr, Local: s.local, Config: s.cfg, State: st.State.String(),
		RemoteState: st.RemoteState.String(), Since: st.Since, TxInterval: st.TxInterval, DetectTime: st.DetectTime,
		LocalDiscriminator: st.LocalDiscr}
	if st.LocalDiag != bfdproto.DiagNone {
		row.Diagnostic = st.LocalDiag.String()
	}
	wtxn := w.db.WriteTxn(w.table)
	defer wtxn.Commit()
	if old, _, ok := w.table.Get(wtxn, tables.BGPBFDPeerIndex.Query(addr.String())); ok {
		row.Failures = old.Failures
		if old.LocalDiscriminator == st.LocalDiscr && old.State == tables.BFDStateUp && st.State == bfdproto.StateDown &&
			st.RemoteState != bfdproto.StateAdminDown {
			row.Failures++
		}
	}
	_, _, _ = w.table.Insert(wtxn, row)
}
