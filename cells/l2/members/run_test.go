package members

import (
	"encoding/json"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/statedb"
	"github.com/hashicorp/memberlist"

	"github.com/heraldlb/herald/tables"
)

// newTestRunner is a runner on fresh tables, its member protocol not
// started: the tests play memberlist's callbacks.
func newTestRunner(t *testing.T) (*runner, statedb.RWTable[*tables.L2MemberMeta]) {
	t.Helper()
	db := statedb.New()
	membersTbl, err := tables.NewL2MembersTable(db)
	if err != nil {
		t.Fatal(err)
	}
	conf, err := tables.NewL2MemberConfirmationTable(db)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := tables.NewL2MemberMetaTable(db)
	if err != nil {
		t.Fatal(err)
	}
	wtxn := db.WriteTxn(membersTbl)
	initDone := membersTbl.RegisterInitializer(wtxn, "l2-members")
	wtxn.Commit()
	log := slog.New(slog.DiscardHandler)
	return &runner{
		params: params{Log: log, DB: db, Members: membersTbl, Confirmation: conf, Meta: meta},
		self:   "node1", m: newMembers(log, "node1"), initDone: initDone,
	}, meta
}

func memberNode(name, ip string, meta nodeMeta) *memberlist.Node {
	b, _ := json.Marshal(meta)
	return &memberlist.Node{Name: name, Addr: net.ParseIP(ip), Port: 7947, Meta: b}
}

// publish copies the members into l2-members (initializing it the first
// time) and the confirmation into its own table; what did not change is
// not written again, so readers of l2-members (the candidates) are not
// woken by echoes.
func TestPublish(t *testing.T) {
	r, _ := newTestRunner(t)
	var last published
	if ok, _ := r.Members.Initialized(r.DB.ReadTxn()); ok {
		t.Fatal("l2-members initialized before the member protocol ran")
	}
	r.m.NotifyJoin(memberNode("node1", "192.0.2.1", nodeMeta{Term: "t1", Devices: []string{"eth0"}}))
	r.m.NotifyJoin(memberNode("node2", "192.0.2.2", nodeMeta{Term: "t2", Devices: []string{"eth1"}, TookOver: []string{"node3/t3#1"}}))
	r.publish(&last)

	txn := r.DB.ReadTxn()
	if ok, _ := r.Members.Initialized(txn); !ok {
		t.Fatal("l2-members not initialized once the members are published")
	}
	n2, _, ok := r.Members.Get(txn, tables.L2MemberNodeIndex.Query("node2"))
	if !ok || n2.State != tables.MemberAlive || n2.Term != "t2" || !slices.Equal(n2.Devices, []string{"eth1"}) ||
		!slices.Equal(n2.TookOver, []string{"node3/t3#1"}) || n2.Self || n2.Addr.String() != "192.0.2.2:7947" {
		t.Fatalf("node2's row: %+v", n2)
	}
	if n1, _, _ := r.Members.Get(txn, tables.L2MemberNodeIndex.Query("node1")); n1 == nil || !n1.Self {
		t.Fatalf("node1's row: %+v, want Self", n1)
	}
	c, _, ok := r.Confirmation.Get(txn, tables.L2MemberConfirmationNodeIndex.Query("node1"))
	if !ok || !c.ConfirmedUntil.IsZero() {
		t.Fatalf("confirmation before any echo: %+v, want a row, zero", c)
	}
	membersRev, confRev := r.Members.Revision(txn), r.Confirmation.Revision(txn)

	// An answered echo moves the confirmation, and only it.
	sent := time.Now()
	r.m.sent[1] = sent
	r.m.NotifyMsg(echoMessage(echoReply, 1, "node2"))
	r.publish(&last)
	txn = r.DB.ReadTxn()
	if r.Members.Revision(txn) != membersRev {
		t.Error("an echo rewrote l2-members")
	}
	c, _, _ = r.Confirmation.Get(txn, tables.L2MemberConfirmationNodeIndex.Query("node1"))
	if want := sent.Add(confirmWindow); !c.ConfirmedUntil.Equal(want) {
		t.Errorf("confirmed until %s, want %s (the request's send time + %s)", c.ConfirmedUntil, want, confirmWindow)
	}
	if !c.ConfirmedSince.Equal(sent) {
		t.Errorf("confirmed since %s, want %s (the run's first request)", c.ConfirmedSince, sent)
	}
	confRev = r.Confirmation.Revision(txn)

	// A member's change rewrites its row alone.
	r.m.NotifyLeave(memberNode("node2", "192.0.2.2", nodeMeta{Term: "t2"}))
	r.publish(&last)
	txn = r.DB.ReadTxn()
	if r.Confirmation.Revision(txn) != confRev {
		t.Error("a member's change rewrote the confirmation")
	}
	n1, rev1, _ := r.Members.Get(txn, tables.L2MemberNodeIndex.Query("node1"))
	n2, rev2, _ := r.Members.Get(txn, tables.L2MemberNodeIndex.Query("node2"))
	if n2.State != tables.MemberDead || n2.Live() {
		t.Errorf("node2 after it left: %+v", n2)
	}
	if rev1 >= rev2 || n1.State != tables.MemberAlive {
		t.Errorf("node1's row rewritten (revision %d, node2's %d): %+v", rev1, rev2, n1)
	}
	if r.Members.Revision(txn) == membersRev {
		t.Error("l2-members unchanged after node2 left")
	}
}

// The metadata is the elector's row and the selected devices, sorted;
// before the elector's first decision, the devices alone.
func TestMetaOf(t *testing.T) {
	devs := func(ds ...*tables.Device) func(func(*tables.Device, statedb.Revision) bool) {
		return func(yield func(*tables.Device, statedb.Revision) bool) {
			for _, d := range ds {
				if !yield(d, 0) {
					return
				}
			}
		}
	}
	got := metaOf(nil, devs(&tables.Device{Name: "eth1", Selected: true}, &tables.Device{Name: "lo"}, &tables.Device{Name: "eth0", Selected: true}))
	if got.Term != "" || got.TookOver != nil || !slices.Equal(got.Devices, []string{"eth0", "eth1"}) {
		t.Errorf("without the elector's row: %+v", got)
	}
	row := &tables.L2MemberMeta{Node: "node1", Term: "t9", TookOver: []string{"node2/t2#0000abcd"}, Silent: "done"}
	got = metaOf(row, devs())
	if got.Term != "t9" || !slices.Equal(got.TookOver, row.TookOver) || got.Devices == nil || len(got.Devices) != 0 {
		t.Errorf("with the elector's row, no devices: %+v", got)
	}
}

// What does not fit into memberlist's metadata is cut: the takeovers
// first (replaced by the marker that tells the peers to take nothing
// from dead holders' terms), then the devices; the term always stays.
func TestNodeMetaFits(t *testing.T) {
	m := newMembers(slog.New(slog.DiscardHandler), "node1")
	var took []string
	for i := range 40 {
		took = append(took, strings.Repeat("x", 20)+string(rune('a'+i%26)))
	}
	decode := func(b []byte) nodeMeta {
		var meta nodeMeta
		if err := json.Unmarshal(b, &meta); err != nil {
			t.Fatal(err)
		}
		return meta
	}
	m.meta = nodeMeta{Term: "t1", Devices: []string{"eth0", "eth1"}, TookOver: took}
	if got := decode(m.NodeMeta(memberlist.MetaMaxSize * 4)); len(got.TookOver) != 40 || len(got.Devices) != 2 {
		t.Errorf("fits: %+v", got)
	}
	got := decode(m.NodeMeta(memberlist.MetaMaxSize))
	if got.Term != "t1" || !slices.Equal(got.TookOver, []string{tables.L2TookMany}) || len(got.Devices) != 2 {
		t.Errorf("takeovers too long: %+v, want them replaced by %q", got, tables.L2TookMany)
	}
	m.meta.Devices = []string{strings.Repeat("d", memberlist.MetaMaxSize)}
	got = decode(m.NodeMeta(memberlist.MetaMaxSize))
	if got.Term != "t1" || got.Devices != nil || !slices.Equal(got.TookOver, []string{tables.L2TookMany}) {
		t.Errorf("devices too long too: %+v, want the term and the marker only", got)
	}
}

// The node leaves once the elector says it is silent; at once when the
// elector decided nothing; and, should the elector never say so, once
// its deadlines are past (the bound).
func TestWaitSilent(t *testing.T) {
	r, meta := newTestRunner(t)
	if got := waitSilent(r.DB, r.Meta, "node1", time.Hour); got != "the elector decided nothing" {
		t.Errorf("no row: %q", got)
	}
	writeMeta := func(m *tables.L2MemberMeta) {
		wtxn := r.DB.WriteTxn(meta)
		_, _, _ = meta.Insert(wtxn, m)
		wtxn.Commit()
	}
	writeMeta(&tables.L2MemberMeta{Node: "node1", Term: "t1"})
	start := time.Now()
	if got := waitSilent(r.DB, r.Meta, "node1", 100*time.Millisecond); !strings.Contains(got, "did not stop") || time.Since(start) < 100*time.Millisecond {
		t.Errorf("elector still at it: %q after %s, want the bound's reason after the bound", got, time.Since(start))
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		writeMeta(&tables.L2MemberMeta{Node: "node1", Term: "t1", Silent: "the responder withdrew every entry"})
	}()
	if got := waitSilent(r.DB, r.Meta, "node1", time.Hour); got != "the responder withdrew every entry" {
		t.Errorf("silent while waiting: %q", got)
	}
}
