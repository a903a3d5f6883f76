package nodeipam

// The node's writes to its CiliumNode go through a reconciler: the sync job
// decides what the CiliumNode should say and puts it in the table
// ciliumnode-writes (one row for its spec, one for status.ipam.used); the
// reconciler writes it, retrying with backoff what the API server refused.

import (
	"context"
	"fmt"
	"iter"
	"reflect"
	"strings"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
	"github.com/cilium/statedb/reconciler"

	v2 "github.com/heraldlb/herald/api/cilium.io/v2"
	"github.com/heraldlb/herald/tables"
)

// ciliumNodeWritesTableName is the table of the writes the sync job decided.
const ciliumNodeWritesTableName = "ciliumnode-writes"

// The rows of the table: the CiliumNode's spec (and owner), and its
// status.ipam.used. They are written apart: the status is the agent's own
// (server-side apply), the spec is shared with the allocator.
const (
	partSpec = "spec"
	partUsed = "used"
)

// What the spec row asks for: one write per version of the CiliumNode.
const (
	opCreate    = "create"    // create it, with Demand requested
	opOwner     = "owner"     // make the Node of UID Owner its owner
	opRequested = "requested" // write Demand as its requested list
	opRelease   = "release"   // remove the CIDRs Demand no longer needs
)

// nodeWrite is one decided write to the node's CiliumNode.
type nodeWrite struct {
	Part string `json:"part"`
	Op   string `json:"op,omitempty"`
	// Base is the resourceVersion the write was decided on: the write is
	// conditional on it (the allocator writes the same object), or, for
	// used, the version whose list differed.
	Base      string              `json:"base,omitempty"`
	Demand    []tables.PoolDemand `json:"demand,omitempty"`
	Owner     string              `json:"owner,omitempty"`
	Allocated []tables.PoolCIDRs  `json:"allocated,omitempty"`
	// Release is what was releasable when decided; the write asks the
	// state again (and marks them releasing) as it goes out.
	Release []tables.PoolCIDRs         `json:"release,omitempty"`
	Used    map[string]v2.AllocationIP `json:"used,omitempty"`
	Digest  uint64                     `json:"digest,omitempty"`

	Status reconciler.Status `json:"status"`
}

func (w *nodeWrite) Clone() *nodeWrite { c := *w; return &c }

func (w *nodeWrite) GetStatus() reconciler.Status { return w.Status }

func (w *nodeWrite) SetStatus(s reconciler.Status) *nodeWrite {
	w.Status = s
	return w
}

// same compares everything but the reconciliation status.
func (w *nodeWrite) same(o *nodeWrite) bool {
	x, y := *w, *o
	x.Status, y.Status = reconciler.Status{}, reconciler.Status{}
	return reflect.DeepEqual(x, y)
}

func (w *nodeWrite) TableHeader() []string {
	return []string{"Part", "Op", "Base", "Detail", "Status"}
}

func (w *nodeWrite) TableRow() []string {
	var detail []string
	for _, d := range w.Demand {
		detail = append(detail, fmt.Sprintf("%s=%d/%d", d.Pool, d.IPv4, d.IPv6))
	}
	for _, r := range w.Release {
		detail = append(detail, fmt.Sprintf("release %s %v", r.Pool, r.CIDRs))
	}
	if w.Part == partUsed {
		detail = append(detail, fmt.Sprintf("%d in use", len(w.Used)))
	}
	return []string{w.Part, w.Op, w.Base, strings.Join(detail, ", "), w.Status.Kind.String()}
}

var nodeWritePartIndex = statedb.Index[*nodeWrite, string]{
	Name:       "part",
	FromObject: func(w *nodeWrite) index.KeySet { return index.NewKeySet(index.String(w.Part)) },
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

func newNodeWritesTable(db *statedb.DB) (statedb.RWTable[*nodeWrite], error) {
	return statedb.NewTable(db, ciliumNodeWritesTableName, nodeWritePartIndex)
}

// registerWriter starts the reconciler of the node's CiliumNode writes.
// Its retries stand in for a poll: a write the API server refused is
// tried again with backoff, at most writeRetryMax apart.
func (a *agent) registerWriter() error {
	_, err := reconciler.Register(a.Reconcile, a.Writes,
		(*nodeWrite).Clone, (*nodeWrite).SetStatus, (*nodeWrite).GetStatus,
		nodeWriter{a}, nil,
		reconciler.WithName("ciliumnode"),
		reconciler.WithRetry(100*time.Millisecond, writeRetryMax))
	return err
}

// writeRetryMax bounds the retry backoff of a failed write.
const writeRetryMax = 10 * time.Second

// nodeWriter performs the writes of the ciliumnode-writes rows.
type nodeWriter struct{ a *agent }

func (w nodeWriter) Update(ctx context.Context, txn statedb.ReadTxn, _ statedb.Revision, row *nodeWrite) error {
	a := w.a
	if row.Part == partUsed {
		if err := a.writeUsed(ctx, row.Used); err != nil {
			a.Log.Warn("Writing the addresses in use to the CiliumNode failed; retrying", "node", a.node, "error", err)
			return err
		}
		return nil
	}
	var err error
	switch row.Op {
	case opCreate:
		err = a.createCiliumNode(ctx, txn, row.Demand)
	case opOwner:
		err = a.patchOwner(ctx, row.Base, row.Owner)
	case opRequested:
		err = a.patchRequested(ctx, row.Base, row.Demand)
	case opRelease:
		err = a.releaseUnneeded(ctx, row.Base, row.Allocated, row.Demand)
	}
	if err != nil {
		a.Log.Warn("Updating the CiliumNode failed; retrying", "node", a.node, "error", err)
	}
	a.written.setErr(err)
	a.poke() // the sync job reports the health
	return err
}

// Delete: rows are never deleted; nothing to undo on the CiliumNode.
func (nodeWriter) Delete(context.Context, statedb.ReadTxn, statedb.Revision, *nodeWrite) error {
	return nil
}

func (nodeWriter) Prune(context.Context, statedb.ReadTxn, iter.Seq2[*nodeWrite, statedb.Revision]) error {
	return nil
}

// decide puts row in the table unless the table already holds the same
// decision: a decision taken again is not written again.
func (a *agent) decide(row *nodeWrite) {
	wtxn := a.DB.WriteTxn(a.Writes)
	defer wtxn.Commit()
	if old, _, ok := a.Writes.Get(wtxn, nodeWritePartIndex.Query(row.Part)); ok && old.same(row) {
		return
	}
	_, _, _ = a.Writes.Insert(wtxn, row.SetStatus(reconciler.StatusPending()))
}
