package speaker

import (
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

// A peer's BGP session is reset once per BFD failure, and only for peers
// with BFD: a GoBGP server with two neighbors that never come up (nothing
// listens), and bgp-bfd rows that count failures.
func TestResetOnBFDFailure(t *testing.T) {
	ctx := context.Background()
	db := statedb.New()
	bfdTable, err := tables.NewBGPBFDSessionsTable(db)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	inst := &tables.BGPInstance{Name: "main", LocalASN: 65001, RouterID: netip.MustParseAddr("198.18.0.9"), ListenPort: -1}
	s, err := startSpeaker(ctx, inst, newGoBGPLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	defer s.stop(ctx, true)
	withBFD := tables.BGPPeer{Name: "fast", Address: netip.MustParseAddr("198.18.0.1"), ASN: 65000, PeerPort: 1, ConnectRetrySeconds: 120,
		HoldTimeSeconds: 9, KeepAliveSeconds: 3, Families: []string{"ipv4-unicast"}, BFD: &tables.BGPBFD{ReceiveIntervalMs: 100, TransmitIntervalMs: 100, DetectMultiplier: 3}}
	plain := withBFD
	plain.Name, plain.Address, plain.BFD = "plain", netip.MustParseAddr("198.18.0.2"), nil
	if err := s.setPeers(ctx, []tables.BGPPeer{withBFD, plain}); err != nil {
		t.Fatal(err)
	}
	setFailures := func(n uint64) {
		wtxn := db.WriteTxn(bfdTable)
		for _, a := range []netip.Addr{withBFD.Address, plain.Address} {
			_, _, _ = bfdTable.Insert(wtxn, &tables.BGPBFDSession{Peer: a, State: tables.BFDStateDown, Diagnostic: "control detection time expired", Failures: n})
		}
		wtxn.Commit()
	}
	p := params{Log: log, DB: db, BFD: bfdTable}
	speakers := map[string]*speaker{"main": s}
	seen := bfdFailures{}

	setFailures(1)
	rows, _ := resetOnBFDFailure(ctx, p, speakers, seen)
	if len(rows) != 2 || seen[withBFD.Address] != 1 || seen[plain.Address] != 0 {
		t.Fatalf("after a failure: rows %d, seen %v", len(rows), seen)
	}
	if e := s.log.LastError(withBFD.Address.String()); !strings.Contains(e, "BFD session down (control detection time expired)") {
		t.Fatalf("last error of the peer with BFD: %q", e)
	}
	if e := s.log.LastError(plain.Address.String()); e != "" {
		t.Fatalf("the peer without BFD was reset: %q", e)
	}
	// The same failure again: nothing to do.
	s.log.Forget(withBFD.Address.String())
	resetOnBFDFailure(ctx, p, speakers, seen)
	if e := s.log.LastError(withBFD.Address.String()); e != "" {
		t.Fatalf("reset twice for one failure: %q", e)
	}
	setFailures(2)
	resetOnBFDFailure(ctx, p, speakers, seen)
	if seen[withBFD.Address] != 2 || s.log.LastError(withBFD.Address.String()) == "" {
		t.Fatalf("second failure not acted upon: seen %v", seen)
	}
	if got := bfdState(withBFD, rows); got != tables.BFDStateDown || bfdState(plain, rows) != "" {
		t.Fatalf("bfdState: %q, %q", got, bfdState(plain, rows))
	}
}
