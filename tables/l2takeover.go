package tables

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	stdmaps "maps"
	"slices"
)

// L2TakeoverLeasePrefix starts the name of each takeover record of the
// members election, herald-l2-takeover-<node>-<term>: one per node and
// term whose groups were taken over, naming the new holder of each.
const L2TakeoverLeasePrefix = "herald-l2-takeover-"

// L2TakeoverAnnotation on a takeover record holds its content, as JSON:
// {"from": "<node>/<term>", "owners": {"<node>/<term>": ["<group>", ...]}}.
const L2TakeoverAnnotation = "l2.herald.io/takeover"

// L2Takeover is a takeover record: the groups whose announcement Lease
// names the holder and term From, and who holds each of them instead
// (node/term). A record only ever grows: an entry, once written, is
// never changed.
type L2Takeover struct {
	From   string            `json:"from"`
	Owners map[string]string `json:"owners"` // group -> node/term
}

// String is the record in short, for herald-dbg.
func (t *L2Takeover) String() string {
	return fmt.Sprintf("takeover of %s: %d groups", t.From, len(t.Owners))
}

// L2TakeoverLeaseName is the name of the takeover record of a holder's
// term (holder/term as in L2Lease): its node and term, or a hash of them
// when they are too long for an object name.
func L2TakeoverLeaseName(holder, term string) string {
	name := L2TakeoverLeasePrefix + holder + "-" + term
	if len(name) <= 253 && len(holder) > 0 {
		return name
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(holder + "/" + term))
	return fmt.Sprintf("%sh-%016x", L2TakeoverLeasePrefix, h.Sum64())
}

type takeoverJSON struct {
	From   string              `json:"from"`
	Owners map[string][]string `json:"owners"`
}

// ParseL2Takeover reads a takeover record's annotation; nil if it is
// missing or malformed (the record then takes nothing over).
func ParseL2Takeover(s string) *L2Takeover {
	var j takeoverJSON
	if s == "" || json.Unmarshal([]byte(s), &j) != nil || j.From == "" {
		return nil
	}
	t := &L2Takeover{From: j.From, Owners: map[string]string{}}
	for owner, groups := range j.Owners {
		for _, g := range groups {
			t.Owners[g] = owner
		}
	}
	return t
}

// Encode is the annotation of the record: the groups listed under their
// owner, sorted, so that a thousand groups fit in a few tens of kB.
func (t *L2Takeover) Encode() string {
	j := takeoverJSON{From: t.From, Owners: map[string][]string{}}
	for _, g := range slices.Sorted(stdmaps.Keys(t.Owners)) {
		j.Owners[t.Owners[g]] = append(j.Owners[t.Owners[g]], g)
	}
	b, _ := json.Marshal(j)
	return string(b)
}
