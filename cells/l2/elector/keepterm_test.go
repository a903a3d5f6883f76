package elector

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/tables"
)

// blockedRound starts the loop of node1, one of three live members, on a
// group it holds in term t1, with an Event recorder that blocks: the
// loop's first round stops at the group's L2Announced Event until the
// test takes it (events).
func blockedRound(t *testing.T) (te testElector, events chan string, until time.Time, stop func()) {
	t.Helper()
	te = newTestElector(t)
	te.leases = fake.NewClientset().CoordinationV1().Leases("kube-system")
	recorder := record.NewFakeRecorder(0)
	te.Events = recorder
	now := time.Now()
	for _, n := range []string{"node1", "node2", "node3"} {
		te.write(&tables.L2Member{Node: n, State: tables.MemberAlive, Since: now.Add(-time.Minute), Self: n == "node1"})
	}
	until = now.Add(3 * time.Second)
	te.write(&tables.L2MemberConfirmation{Node: "node1", ConfirmedSince: now, ConfirmedUntil: until})
	ip := netip.MustParseAddr("198.18.0.1")
	group := tables.L2AnnounceLeasePrefix + "default-web"
	cands := te.Candidates.(statedb.RWTable[*tables.L2Candidate])
	wtxn := te.DB.WriteTxn(cands, te.records)
	_, _, _ = cands.Insert(wtxn, &tables.L2Candidate{Group: group, Services: []string{"default/web"}, IPs: []netip.Addr{ip}, Nodes: []string{"node1"},
		Local: []*tables.L2AnnounceEntry{{IP: ip, NetworkInterface: "eth0", Ifindex: 2, MAC: "02:00:00:00:00:01", Origins: []string{"default/web"}}}})
	_, _, _ = te.records.Insert(wtxn, &tables.L2Lease{Name: group, Holder: "node1", Term: "t1", ResourceVersion: "1", DurationSeconds: 15})
	wtxn.Commit()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = te.run(ctx, nopHealth{})
	}()
	stop = func() {
		cancel()
		// The round ends once its Event is taken; the shutdown once the
		// withdrawn entries are out, as the responder would report them.
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-recorder.Events:
			case <-tick.C:
				wtxn := te.DB.WriteTxn(te.Announce)
				for en := range te.Announce.All(wtxn) {
					if en.Withdrawn && en.Status.Kind != reconciler.StatusKindDone {
						out := en.Clone()
						out.Status = reconciler.StatusDone()
						_, _, _ = te.Announce.Insert(wtxn, out)
					}
				}
				wtxn.Commit()
			case <-done:
				return
			}
		}
	}
	return te, recorder.Events, until, stop
}

// waitUntil waits until cond holds, and fails with what it last said
// after 5 s.
func waitUntil(t *testing.T, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(why)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitFreshUntil waits until l2-lease-health says want.
func (te testElector) waitFreshUntil(t *testing.T, want time.Time) {
	t.Helper()
	waitUntil(t, func() (bool, string) {
		h, _, ok := te.Health.Get(te.DB.ReadTxn(), tables.L2LeaseHealthNodeIndex.Query("node1"))
		return ok && h.FreshUntil.Equal(want), fmt.Sprintf("l2-lease-health %+v, want fresh until %s", h, want)
	})
}

// While a round runs (here: stopped at an Event), the peers'
// confirmations still move the deadline the responder reads: a slow
// round over many groups does not silence a node its peers confirm.
func TestDeadlineMovesDuringARound(t *testing.T) {
	te, events, until, stop := blockedRound(t)
	defer stop()
	te.waitFreshUntil(t, until)
	for i := 1; i <= 3; i++ {
		later := until.Add(time.Duration(i) * 100 * time.Millisecond)
		te.write(&tables.L2MemberConfirmation{Node: "node1", ConfirmedSince: until.Add(-3 * time.Second), ConfirmedUntil: later})
		te.waitFreshUntil(t, later)
	}
	// The round was still under way: its Event is only now taken.
	select {
	case ev := <-events:
		if !strings.Contains(ev, "Node node1 announces 198.18.0.1 on eth0") {
			t.Fatalf("Event %q", ev)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the round never announced the group")
	}
	// Once over, the round counts in herald_l2_decision_round_seconds.
	waitUntil(t, func() (bool, string) {
		var m dto.Metric
		if err := te.metrics.rounds.Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram().GetSampleCount() >= 1, "no decision round observed"
	})
}

// A takeover record of the term seen while a round runs silences the
// node at once; the term is left once the round is over.
func TestRecordDuringARoundSilences(t *testing.T) {
	te, events, until, stop := blockedRound(t)
	defer stop()
	te.waitFreshUntil(t, until)
	wtxn := te.DB.WriteTxn(te.records)
	_, _, _ = te.records.Insert(wtxn, &tables.L2Lease{Name: tables.L2TakeoverLeaseName("node1", "t1"), ResourceVersion: "7",
		Takeover: &tables.L2Takeover{From: "node1/t1", Owners: map[string]string{tables.L2AnnounceLeasePrefix + "default-web": "node2/x"}}})
	wtxn.Commit()
	te.waitFreshUntil(t, time.Time{})
	<-events
	waitUntil(t, func() (bool, string) {
		m, _, ok := te.Meta.Get(te.DB.ReadTxn(), tables.L2MemberMetaNodeIndex.Query("node1"))
		return ok && m.Term == "t2", fmt.Sprintf("l2-member-meta %+v, want term t2 after the round", m)
	})
}
