package speaker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	"github.com/osrg/gobgp/v3/pkg/server"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// speaker is one running BGP instance: a GoBGP server, the peers it was
// given and what it advertises.
//
// Routes: every advertised prefix is one locally originated path in
// GoBGP's RIB; which peers receive it, with which attributes, is the
// global export policy: one policy per (peer, family, attributes), whose
// prefix set lists the prefixes sent that way, and a default of reject.
// GoBGP applies the export policy when a path changes, or for one peer
// when it is soft-reset: a prefix that goes to a new peer, or with new
// attributes, is re-sent to that peer by a soft reset (the others hear
// nothing). GoBGP has no way to withdraw a path from one peer, though: a
// peer that stays configured but loses a prefix the others keep gets it
// withdrawn by taking the path out of the RIB before the policy changes
// (GoBGP withdraws it from every peer the old policy sent it to) and
// putting it back after (the others get it again at once).
type speaker struct {
	name   string
	global tables.BGPInstance // ASN, router ID and port it was started with
	srv    *server.BgpServer
	log    *gobgpLogger
	// cancel ends what runs on the instance's behalf (the event watch).
	cancel context.CancelFunc

	peers    map[string]tables.BGPPeer // by name, as configured in GoBGP
	prefixes map[netip.Prefix]*advertised
	policies map[exportKey]int // prefixes in each export policy's set
	// nextHops are the IPv6 next hops of the peers that need one (IPv4
	// peers with ipv6-unicast), by peer name; set each round by
	// applyNextHops.
	nextHops map[string]nextHop6
}

// advertised is one prefix in the RIB and the export policy of each peer
// name that receives it.
type advertised struct {
	uuid []byte
	to   map[string]exportKey
}

func startSpeaker(ctx context.Context, inst *tables.BGPInstance, log *gobgpLogger) (*speaker, error) {
	srv := server.NewBgpServer(server.LoggerOption(log))
	go srv.Serve()
	err := srv.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{
		Asn:        uint32(inst.LocalASN),
		RouterId:   inst.RouterID.String(),
		ListenPort: inst.ListenPort,
	}})
	if err == nil {
		err = srv.SetPolicyAssignment(ctx, &api.SetPolicyAssignmentRequest{Assignment: &api.PolicyAssignment{
			Name: "global", Direction: api.PolicyDirection_EXPORT, DefaultAction: api.RouteAction_REJECT,
		}})
	}
	if err != nil {
		srv.Stop()
		return nil, fmt.Errorf("starting BGP instance %q (AS %d, router ID %s, port %d): %w", inst.Name, inst.LocalASN, inst.RouterID, inst.ListenPort, err)
	}
	return &speaker{name: inst.Name, global: *inst, srv: srv, log: log, cancel: func() {},
		peers: map[string]tables.BGPPeer{}, prefixes: map[netip.Prefix]*advertised{}, policies: map[exportKey]int{}}, nil
}

// sameGlobal: an instance whose ASN, router ID or port changed is
// restarted (GoBGP cannot change them on a running server).
func (s *speaker) sameGlobal(inst *tables.BGPInstance) bool {
	return s.global.LocalASN == inst.LocalASN && s.global.RouterID == inst.RouterID && s.global.ListenPort == inst.ListenPort
}

// stop ends the instance. withdraw: tell the peers (GoBGP sends a Cease
// NOTIFICATION, and the routers drop the node's routes at once): the
// instance was removed or reconfigured. Otherwise (the agent stops) the
// server is left to the process's exit, which closes the sessions without
// a NOTIFICATION: routers with graceful restart keep the node's routes
// until the agent is back, so an upgrade does not interrupt traffic.
// GoBGP has no other way to end a session silently: its Stop sends the
// Cease too.
func (s *speaker) stop(ctx context.Context, withdraw bool) {
	s.cancel()
	if withdraw {
		s.srv.Stop()
	}
}

// setPeers makes GoBGP's neighbors match the instance's peers that have
// no error.
func (s *speaker) setPeers(ctx context.Context, want []tables.BGPPeer) error {
	wantBy := map[string]tables.BGPPeer{}
	for _, p := range want {
		if p.Error == "" {
			wantBy[p.Name] = p
		}
	}
	var errs []error
	for name, cur := range s.peers {
		if w, ok := wantBy[name]; ok && sameSession(w, cur) {
			s.peers[name] = w // BFD settings apply without touching the session
			continue
		}
		// Changed or gone: delete, and add it again below if changed.
		// (GoBGP's UpdatePeer cannot change the address, and changing
		// timers or the password needs a new session anyway.)
		if err := s.srv.DeletePeer(ctx, &api.DeletePeerRequest{Address: cur.Address.String()}); err != nil {
			errs = append(errs, fmt.Errorf("removing peer %q (%s): %w", name, cur.Address, err))
			continue
		}
		s.log.Forget(cur.Address.String())
		delete(s.peers, name)
	}
	for name, w := range wantBy {
		if _, ok := s.peers[name]; ok {
			continue
		}
		if err := s.srv.AddPeer(ctx, &api.AddPeerRequest{Peer: peerToAPI(w)}); err != nil {
			errs = append(errs, fmt.Errorf("adding peer %q (%s): %w", name, w.Address, err))
			continue
		}
		s.peers[name] = w
	}
	if len(errs) > 0 {
		return fmt.Errorf("%v", errs)
	}
	return nil
}

// sameSession: nothing GoBGP is configured with differs (BFD runs beside
// it, in the bfd cell).
func sameSession(a, b tables.BGPPeer) bool {
	a.BFD, b.BFD = nil, nil
	return a.Equal(b)
}

// setPrefix makes one prefix go to exactly the peers of routes (all of
// this instance and prefix), with their attributes. staying are the peers
// that remain configured after this round; the addresses of peers that
// must be soft-reset to hear of the change are added to resetOut.
func (s *speaker) setPrefix(ctx context.Context, p netip.Prefix, routes []*tables.BGPRoute, staying map[string]bool, resetOut map[netip.Addr]bool) error {
	want, attrs := exportsOf(p, routes, s.nextHops)
	cur := s.prefixes[p]
	if cur != nil && maps.Equal(cur.to, want) {
		return nil
	}
	if mustWithdraw(cur, want, staying) {
		if err := s.withdraw(ctx, p, cur); err != nil {
			return err
		}
		cur = nil
	}
	if len(want) == 0 {
		return nil
	}
	if cur != nil {
		return s.moveExports(ctx, p, cur, want, attrs, resetOut)
	}
	return s.advertise(ctx, p, want, attrs)
}

// mustWithdraw tells whether the advertised prefix cur must leave the RIB:
// no peer wants it any more, or a peer that stays must stop receiving it,
// which only a withdrawal from the RIB does.
func mustWithdraw(cur *advertised, want map[string]exportKey, staying map[string]bool) bool {
	withdraw := cur != nil && len(want) == 0
	if cur != nil {
		for peer := range cur.to {
			if _, kept := want[peer]; !kept && staying[peer] {
				withdraw = true
			}
		}
	}
	return withdraw
}

// withdraw deletes the prefix from the RIB and takes it out of the
// policies of the peers it went to.
func (s *speaker) withdraw(ctx context.Context, p netip.Prefix, cur *advertised) error {
	if err := s.srv.DeletePath(ctx, &api.DeletePathRequest{TableType: api.TableType_GLOBAL, Family: familyOf(p), Uuid: cur.uuid}); err != nil {
		return fmt.Errorf("withdrawing %s: %w", p, err)
	}
	for _, k := range cur.to {
		if err := s.leavePolicy(ctx, k, p); err != nil {
			return err
		}
	}
	delete(s.prefixes, p)
	return nil
}

// moveExports handles a prefix still in the RIB: move the peers whose
// policy changes, and soft-reset those that gain the prefix or new
// attributes.
func (s *speaker) moveExports(ctx context.Context, p netip.Prefix, cur *advertised, want map[string]exportKey, attrs map[exportKey]tables.BGPAttributes, resetOut map[netip.Addr]bool) error {
	for peer, k := range cur.to {
		if w, ok := want[peer]; !ok || w != k {
			if err := s.leavePolicy(ctx, k, p); err != nil {
				return err
			}
		}
	}
	for peer, w := range want {
		if k, ok := cur.to[peer]; ok && k == w {
			continue
		}
		if err := s.joinPolicy(ctx, w, attrs[w], p); err != nil {
			return err
		}
		resetOut[w.peer] = true
	}
	cur.to = want
	return nil
}

// advertise puts a prefix not in the RIB into the policies of the peers
// that want it, then into the RIB. On failure the policies are left as
// the RIB is: without it.
func (s *speaker) advertise(ctx context.Context, p netip.Prefix, want map[string]exportKey, attrs map[exportKey]tables.BGPAttributes) error {
	var joined []exportKey
	for _, k := range want {
		if err := s.joinPolicy(ctx, k, attrs[k], p); err != nil {
			for _, j := range joined {
				_ = s.leavePolicy(ctx, j, p)
			}
			return err
		}
		joined = append(joined, k)
	}
	path, err := pathOf(p)
	if err != nil {
		return err
	}
	resp, err := s.srv.AddPath(ctx, &api.AddPathRequest{TableType: api.TableType_GLOBAL, Path: path})
	if err != nil {
		// Leave the policies consistent with what is in the RIB: nothing.
		for _, j := range joined {
			_ = s.leavePolicy(ctx, j, p)
		}
		return fmt.Errorf("advertising %s: %w", p, err)
	}
	s.prefixes[p] = &advertised{uuid: resp.Uuid, to: want}
	return nil
}

// softResetOut re-sends to each peer everything the export policy now
// lets through.
func (s *speaker) softResetOut(ctx context.Context, peers map[netip.Addr]bool) error {
	var errs []error
	for addr := range peers {
		configured := false
		for _, p := range s.peers {
			configured = configured || p.Address == addr
		}
		if !configured {
			continue // not (yet) a neighbor: it gets everything when it comes up
		}
		if err := s.srv.ResetPeer(ctx, &api.ResetPeerRequest{Address: addr.String(), Soft: true, Direction: api.ResetPeerRequest_OUT}); err != nil {
			errs = append(errs, fmt.Errorf("soft reset of %s: %w", addr, err))
		}
	}
	return errors.Join(errs...)
}

// joinPolicy adds a prefix to an export policy's prefix set, creating the
// policy with its first prefix.
func (s *speaker) joinPolicy(ctx context.Context, k exportKey, attrs tables.BGPAttributes, p netip.Prefix) error {
	name := k.name()
	if err := s.srv.AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: prefixSet(name, p)}); err != nil {
		return fmt.Errorf("export policy %s: adding %s: %w", name, p, err)
	}
	s.policies[k]++
	if s.policies[k] > 1 {
		return nil
	}
	if err := s.srv.AddDefinedSet(ctx, &api.AddDefinedSetRequest{DefinedSet: neighborSet(k.peer)}); err != nil {
		return fmt.Errorf("neighbor set of %s: %w", k.peer, err)
	}
	if err := s.srv.AddPolicy(ctx, &api.AddPolicyRequest{Policy: exportPolicy(k, attrs)}); err != nil {
		return fmt.Errorf("export policy %s: %w", name, err)
	}
	if err := s.srv.AddPolicyAssignment(ctx, &api.AddPolicyAssignmentRequest{Assignment: &api.PolicyAssignment{
		Name: "global", Direction: api.PolicyDirection_EXPORT, DefaultAction: api.RouteAction_REJECT,
		Policies: []*api.Policy{{Name: name}},
	}}); err != nil {
		return fmt.Errorf("export policy %s: assigning: %w", name, err)
	}
	return nil
}

// leavePolicy removes a prefix from an export policy's prefix set, and the
// policy with its last prefix.
func (s *speaker) leavePolicy(ctx context.Context, k exportKey, p netip.Prefix) error {
	name := k.name()
	s.policies[k]--
	if s.policies[k] > 0 {
		if err := s.srv.DeleteDefinedSet(ctx, &api.DeleteDefinedSetRequest{DefinedSet: prefixSet(name, p)}); err != nil {
			return fmt.Errorf("export policy %s: removing %s: %w", name, p, err)
		}
		return nil
	}
	delete(s.policies, k)
	if err := s.srv.DeletePolicyAssignment(ctx, &api.DeletePolicyAssignmentRequest{Assignment: &api.PolicyAssignment{
		Name: "global", Direction: api.PolicyDirection_EXPORT, Policies: []*api.Policy{{Name: name}},
	}}); err != nil {
		return fmt.Errorf("export policy %s: unassigning: %w", name, err)
	}
	if err := s.srv.DeletePolicy(ctx, &api.DeletePolicyRequest{Policy: &api.Policy{Name: name}, PreserveStatements: false, All: true}); err != nil {
		return fmt.Errorf("export policy %s: deleting: %w", name, err)
	}
	if err := s.srv.DeleteDefinedSet(ctx, &api.DeleteDefinedSetRequest{DefinedSet: &api.DefinedSet{DefinedType: api.DefinedType_PREFIX, Name: name}, All: true}); err != nil {
		return fmt.Errorf("export policy %s: deleting its prefix set: %w", name, err)
	}
	return nil
}

// peerStates reads the sessions' state from GoBGP.
func (s *speaker) peerStates(ctx context.Context, bfdRows map[netip.Addr]*tables.BGPBFDSession) []*tables.BGPPeerState {
	byAddr := map[string]tables.BGPPeer{}
	for _, p := range s.peers {
		byAddr[p.Address.String()] = p
	}
	var out []*tables.BGPPeerState
	// Not EnableAdvertised: advertisedCount counts the routes sent.
	_ = s.srv.ListPeer(ctx, &api.ListPeerRequest{}, func(p *api.Peer) {
		addr := p.GetState().GetNeighborAddress()
		if addr == "" {
			addr = p.GetConf().GetNeighborAddress()
		}
		cfg, ok := byAddr[addr]
		if !ok {
			return
		}
		st := &tables.BGPPeerState{Instance: s.name, Peer: cfg.Name, Address: cfg.Address, ASN: cfg.ASN,
			State: sessionState(p.GetState().GetSessionState()), BFD: bfdState(cfg, bfdRows),
			UpdatesSent:     p.GetState().GetMessages().GetSent().GetUpdate(),
			UpdatesReceived: p.GetState().GetMessages().GetReceived().GetUpdate()}
		if t := p.GetTimers().GetState(); t != nil {
			if st.State == tables.BGPStateEstablished && t.GetUptime() != nil {
				st.Since = t.GetUptime().AsTime().Truncate(time.Second)
			} else if t.GetDowntime() != nil && t.GetDowntime().GetSeconds() > 0 {
				st.Since = t.GetDowntime().AsTime().Truncate(time.Second)
			}
			if st.State == tables.BGPStateEstablished {
				st.AppliedHoldTimeSeconds = int32(t.GetNegotiatedHoldTime())
				st.AppliedKeepaliveSeconds = int32(t.GetKeepaliveInterval())
				if st.AppliedHoldTimeSeconds > 0 && st.AppliedHoldTimeSeconds/3 < st.AppliedKeepaliveSeconds {
					st.AppliedKeepaliveSeconds = st.AppliedHoldTimeSeconds / 3
				}
			}
		}
		if st.State == tables.BGPStateEstablished {
			s.log.Forget(addr)
			st.GracefulRestart = p.GetGracefulRestart().GetEnabled() && p.GetGracefulRestart().GetPeerRestartTime() > 0
		} else {
			st.LastError = s.log.LastError(addr)
		}
		st.NextHopError = s.nextHops[cfg.Name].problem
		for _, as := range p.GetAfiSafis() {
			fam := as.GetState().GetFamily()
			if fam == nil || !as.GetState().GetEnabled() {
				continue
			}
			afi := v2alpha1.BGPAfiIPv4
			if fam.Afi == api.Family_AFI_IP6 {
				afi = v2alpha1.BGPAfiIPv6
			}
			st.Routes = append(st.Routes, tables.BGPFamilyRoutes{AFI: afi, SAFI: v2alpha1.BGPSafiUnicast,
				Advertised: s.advertisedCount(ctx, addr, fam), Received: int(as.GetState().GetReceived())})
		}
		out = append(out, st)
	})
	return out
}
