package members

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"k8s.io/client-go/kubernetes"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
)

type params struct {
	cell.In

	Agent        agentconfig.Config
	L2           l2config.Config
	Leases       l2config.L2Leases
	Config       Config
	Log          *slog.Logger
	DB           *statedb.DB
	Jobs         job.Group
	Kube         kubernetes.Interface
	Nodes        statedb.Table[*tables.Node]
	Devices      statedb.Table[*tables.Device]
	Meta         statedb.Table[*tables.L2MemberMeta]
	Members      statedb.RWTable[*tables.L2Member]
	Confirmation statedb.RWTable[*tables.L2MemberConfirmation]
}

func registerMembers(p params) {
	if !p.L2.Runs(l2config.ElectionMembers) {
		return
	}
	// l2-members counts as initialized once the member protocol runs:
	// the elector waits for it, so that this node takes part in nothing
	// before it has an address and the peer secret.
	wtxn := p.DB.WriteTxn(p.Members)
	initDone := p.Members.RegisterInitializer(wtxn, "l2-members")
	wtxn.Commit()
	r := &runner{params: p, self: p.Agent.Node(), m: newMembers(p.Log, p.Agent.Node()), initDone: initDone}
	p.Jobs.Add(job.OneShot("members", r.run))
}

// runner runs this node's member protocol and keeps the tables that show
// it.
type runner struct {
	params
	self     string
	m        *members
	initDone func(statedb.WriteTxn)
}

func (r *runner) run(ctx context.Context, health cell.Health) error {
	advertise, err := r.waitAddress(ctx, health)
	if err != nil {
		return nil
	}
	var secret []byte
	for {
		if secret, err = r.Config.peerSecret(ctx, r.Kube, r.Agent.K8sNamespace); err == nil {
			break
		}
		r.Log.Error("No peer secret: this node takes no part in L2 announcements until it has one", "error", err)
		health.Degraded("peer secret", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(5 * time.Second):
		}
	}
	port := r.Config.L2AnnouncementsPeerPort
	if !r.startRetrying(ctx, health, advertise, port, secret) {
		return nil
	}
	r.Log.Info("Member protocol started", "address", advertise, "port", port)
	health.OK(fmt.Sprintf("member protocol on %s", netip.AddrPortFrom(advertise, uint16(port))))

	var wg sync.WaitGroup
	for _, loop := range []func(context.Context){r.echoLoop, r.joinLoop, r.metaLoop} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop(ctx)
		}()
	}
	r.publishLoop(ctx)
	wg.Wait()
	r.leave()
	return nil
}

// published is what publish last wrote.
type published struct {
	version     uint64
	confirmed   confirmation
	initialized bool
}

// publishLoop copies the members and this node's confirmation into their
// tables whenever the failure detector reports a change or a peer answers
// an echo.
func (r *runner) publishLoop(ctx context.Context) {
	var last published
	for {
		r.publish(&last)
		select {
		case <-ctx.Done():
			return
		case <-r.m.changed:
		}
	}
}

// publish writes what changed since last. The confirmation has a table of
// its own: it changes with every answered echo, about 20 times a second,
// and l2-candidates is derived again on every change of l2-members. Its
// value only moves forward (members.NotifyMsg), so the elector, reading
// an older row, sees an earlier deadline: never a later one than the
// truth.
func (r *runner) publish(last *published) {
	rows, version := r.m.snapshot()
	if !last.initialized || version != last.version {
		wtxn := r.DB.WriteTxn(r.Members)
		for _, m := range rows {
			if old, _, ok := r.Members.Get(wtxn, tables.L2MemberNodeIndex.Query(m.Node)); ok && sameJSON(old, m) {
				continue
			}
			_, _, _ = r.Members.Insert(wtxn, m)
		}
		if !last.initialized {
			r.initDone(wtxn)
		}
		wtxn.Commit()
		last.version = version
	}
	if c := r.m.confirmed(); !last.initialized || !c.equal(last.confirmed) {
		wtxn := r.DB.WriteTxn(r.Confirmation)
		_, _, _ = r.Confirmation.Insert(wtxn, &tables.L2MemberConfirmation{Node: r.self, ConfirmedSince: c.since, ConfirmedUntil: c.until})
		wtxn.Commit()
		last.confirmed = c
	}
	last.initialized = true
}

// metaLoop publishes to the peers what the elector decided they must know
// and this node's selected devices, whenever either changes. Apart from
// publishLoop: publishing waits for the update to go out (up to a
// second), and the confirmations must not wait behind it.
func (r *runner) metaLoop(ctx context.Context) {
	for {
		txn := r.DB.ReadTxn()
		row, _, metaWatch, _ := r.Meta.GetWatch(txn, tables.L2MemberMetaNodeIndex.Query(r.self))
		devs, devWatch := r.Devices.AllWatch(txn)
		r.m.setMeta(metaOf(row, devs))
		select {
		case <-ctx.Done():
			return
		case <-metaWatch:
		case <-devWatch:
		}
	}
}

// metaOf is the metadata this node publishes: the elector's row (nil
// before its first decision) and the selected devices.
func metaOf(row *tables.L2MemberMeta, devs iter.Seq2[*tables.Device, statedb.Revision]) nodeMeta {
	meta := nodeMeta{Devices: []string{}}
	for d := range devs {
		if d.Selected {
			meta.Devices = append(meta.Devices, d.Name)
		}
	}
	slices.Sort(meta.Devices)
	if row != nil {
		meta.Term, meta.TookOver = row.Term, row.TookOver
	}
	return meta
}

// leave leaves the member cluster: the peers take this node's groups over
// as soon as they hear of it, so it must be silent by then. The elector
// stops before this cell (cells/l2), after it withdrew every entry and
// said so in l2-member-meta (Silent); waitSilent holds to that even if
// the elector's stop were cut short.
func (r *runner) leave() {
	how := waitSilent(r.DB, r.Meta, r.self, r.Leases.Timings().Duration)
	r.m.stop()
	r.Log.Info("Left the member cluster", "silent-because", how)
}

// waitSilent waits until the elector's row says this node is silent, and
// returns how the elector knows. Without a row the elector decided
// nothing, so this node answers for nothing. It waits at most bound: no
// deadline the elector publishes for the responder reaches further ahead
// (its node Lease's renew deadline, a confirmation's window), and past it
// the responder's program answers nothing by itself.
func waitSilent(db *statedb.DB, meta statedb.Table[*tables.L2MemberMeta], self string, bound time.Duration) string {
	timeout := time.NewTimer(bound)
	defer timeout.Stop()
	for {
		row, _, watch, ok := meta.GetWatch(db.ReadTxn(), tables.L2MemberMetaNodeIndex.Query(self))
		switch {
		case !ok:
			return "the elector decided nothing"
		case row.Silent != "":
			return row.Silent
		}
		select {
		case <-watch:
		case <-timeout.C:
			return "the elector did not stop, and its last deadline passed"
		}
	}
}

// sameJSON compares two rows by their JSON, which holds every field.
func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
