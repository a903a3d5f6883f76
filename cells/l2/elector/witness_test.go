package elector

import (
	"testing"
	"time"

	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
)

// A peer's witness record counts as expired only once this node saw it
// renewed and then unchanged for WitnessExpiry, with the watch alive.
func TestWitnessGone(t *testing.T) {
	e := &elector{witnesses: map[string]seenWitness{}}
	t0 := time.Unix(1000, 0)
	row := func(v string) []*tables.L2Lease {
		return []*tables.L2Lease{{Name: tables.L2WitnessLeasePrefix + "node2", ResourceVersion: v}}
	}
	e.observeWitnesses(t0, row("1"))
	if e.witnessGone("node2", t0.Add(10*time.Second), true) {
		t.Fatal("a record never seen renewed counts as expired")
	}
	e.observeWitnesses(t0.Add(250*time.Millisecond), row("2"))
	after := t0.Add(250*time.Millisecond + l2config.WitnessExpiry)
	if e.witnessGone("node2", after, true) {
		t.Fatal("expired at exactly WitnessExpiry after its last change")
	}
	if !e.witnessGone("node2", after.Add(time.Millisecond), true) {
		t.Fatal("not expired after WitnessExpiry without a change")
	}
	if e.witnessGone("node2", after.Add(time.Millisecond), false) {
		t.Fatal("expired while the watch does not deliver")
	}
	if e.witnessGone("node3", after, true) {
		t.Fatal("a node without a record counts as expired")
	}
	e.observeWitnesses(after.Add(time.Millisecond), row("3"))
	if e.witnessGone("node2", after.Add(2*time.Millisecond), true) {
		t.Fatal("still expired after a renewal")
	}
}
