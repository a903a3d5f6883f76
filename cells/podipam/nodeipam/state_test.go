package nodeipam

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/tables"
)

// memStore is a journal in memory that refuses an address twice, as the
// real one does.
type memStore struct {
	files map[netip.Addr]entry
	fail  error
}

func (m *memStore) put(e entry) error {
	if m.fail != nil {
		return m.fail
	}
	if _, ok := m.files[e.IP]; ok {
		return errTaken
	}
	m.files[e.IP] = e
	return nil
}

func (m *memStore) remove(ip netip.Addr) error { delete(m.files, ip); return nil }

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func newTestState(fams ...tables.Family) (*state, *memStore, *fakeClock) {
	m := &memStore{files: map[netip.Addr]entry{}}
	c := &fakeClock{t: time.Unix(1000, 0)}
	s := newState(m, fams, map[string]int{"default": 8}, c.now)
	s.setPools(map[string]*tables.PodIPPool{"default": testPool("default", "198.18.0.0/15", "fd00::/8")})
	return s, m, c
}

// testPool is a pool with one CIDR per family ("" for none).
func testPool(name, v4, v6 string) *tables.PodIPPool {
	p := &tables.PodIPPool{Name: name}
	if v4 != "" {
		p.IPv4 = &tables.PodPoolFamily{CIDRs: []netip.Prefix{netip.MustParsePrefix(v4)}, MaskSize: 24}
	}
	if v6 != "" {
		p.IPv6 = &tables.PodPoolFamily{CIDRs: []netip.Prefix{netip.MustParsePrefix(v6)}, MaskSize: 120}
	}
	return p
}

func alloc(pool string, cidrs ...string) tables.PoolCIDRs {
	a := tables.PoolCIDRs{Pool: pool}
	for _, c := range cidrs {
		a.CIDRs = append(a.CIDRs, netip.MustParsePrefix(c))
	}
	return a
}

func addReq(id string) ipamv1.AddRequest {
	return ipamv1.AddRequest{Attachment: ipamv1.Attachment{ContainerID: id, IfName: "eth0"}, Network: "herald",
		Pod: ipamv1.PodRef{Namespace: "ns", Name: "pod-" + id, UID: "uid-" + id}}
}

var v4default = map[tables.Family]string{tables.IPv4: "default"}

func TestAddIsIdempotentAndJournaled(t *testing.T) {
	s, m, _ := newTestState(tables.IPv4)
	s.setCIDRs([]tables.PoolCIDRs{alloc("default", "198.18.100.0/30")}) // one usable: .2
	got, err := s.add(addReq("c1"), v4default)
	if err != nil || len(got) != 1 || got[0].IP.String() != "198.18.100.2" {
		t.Fatalf("add = %+v, %v", got, err)
	}
	if _, ok := m.files[got[0].IP]; !ok {
		t.Fatal("not journaled")
	}
	again, err := s.add(addReq("c1"), v4default)
	if err != nil || again[0].IP != got[0].IP {
		t.Fatalf("repeated add = %+v, %v", again, err)
	}
	// Full: the next ADD waits and counts as pending.
	if _, err := s.add(addReq("c2"), v4default); !errors.Is(err, errNoRoom) {
		t.Fatalf("add into a full CIDR: %v", err)
	}
	_, pending := s.usage()
	if pending[poolFamily{"default", tables.IPv4}] != 1 {
		t.Fatalf("pending = %v", pending)
	}
	if d := s.demand(); len(d) != 1 || d[0].IPv4 != 16 {
		t.Fatalf("demand = %+v, want default 16 (roundUp(1+1+8, 8))", d)
	}
}

func TestDualStackAllOrNothing(t *testing.T) {
	s, m, _ := newTestState(tables.IPv4, tables.IPv6)
	s.setCIDRs([]tables.PoolCIDRs{alloc("default", "198.18.100.0/24")}) // no IPv6 CIDR yet
	if _, err := s.add(addReq("c1"), map[tables.Family]string{tables.IPv4: "default", tables.IPv6: "default"}); !errors.Is(err, errNoRoom) {
		t.Fatalf("add without an IPv6 CIDR: %v", err)
	}
	if len(m.files) != 0 || len(s.allocs) != 0 {
		t.Fatalf("the IPv4 address was kept: %v", m.files)
	}
	s.setCIDRs([]tables.PoolCIDRs{alloc("default", "198.18.100.0/24", "fd00:18:100::/120")})
	got, err := s.add(addReq("c1"), map[tables.Family]string{tables.IPv4: "default", tables.IPv6: "default"})
	if err != nil || len(got) != 2 {
		t.Fatalf("dual-stack add = %+v, %v", got, err)
	}
}

func TestRestoreBeforeAnything(t *testing.T) {
	s, m, _ := newTestState(tables.IPv4)
	old := entry{IP: netip.MustParseAddr("198.18.100.2"), CIDR: netip.MustParsePrefix("198.18.100.0/24"), Pool: "default",
		Attachment: ipamv1.Attachment{ContainerID: "old", IfName: "eth0"}}
	m.files[old.IP] = old
	s.restore([]entry{old})
	// The CIDR is not known yet: the address is an orphan, counted in use.
	inUse, _ := s.usage()
	if inUse[poolFamily{"default", tables.IPv4}] != 1 {
		t.Fatalf("orphan not counted: %v", inUse)
	}
	s.setCIDRs([]tables.PoolCIDRs{alloc("default", "198.18.100.0/24")})
	got, _ := s.add(addReq("new"), v4default)
	if got[0].IP == old.IP {
		t.Fatal("handed out a restored address again")
	}
	if released, _ := s.del(old.Attachment); len(released) != 1 {
		t.Fatalf("del of the restored attachment released %v", released)
	}
}

func TestJournalIsTheLastWord(t *testing.T) {
	// The journal holds an address the state does not know (a concurrent
	// run, a bug): it is skipped, never given twice.
	s, m, _ := newTestState(tables.IPv4)
	s.setCIDRs([]tables.PoolCIDRs{alloc("default", "198.18.100.0/29")})
	m.files[netip.MustParseAddr("198.18.100.2")] = entry{}
	got, err := s.add(addReq("c1"), v4default)
	if err != nil || got[0].IP.String() != "198.18.100.3" {
		t.Fatalf("add = %+v, %v", got, err)
	}
}

func TestGoneCIDRKeepsItsPods(t *testing.T) {
	s, _, _ := newTestState(tables.IPv4)
	s.setCIDRs([]tables.PoolCIDRs{alloc("default", "198.18.100.0/24")})
	got, _ := s.add(addReq("c1"), v4default)
	gone := s.setCIDRs(nil) // someone removed it from the CiliumNode
	if len(gone) != 1 {
		t.Fatalf("gone = %v", gone)
	}
	if _, err := s.add(addReq("c2"), v4default); !errors.Is(err, errNoRoom) {
		t.Fatalf("allocated from a gone CIDR: %v", err)
	}
	if err := s.check(got[0].Attachment, []netip.Addr{got[0].IP}); err != nil {
		t.Fatalf("the pod lost its address: %v", err)
	}
	if _, err := s.del(got[0].Attachment); err != nil {
		t.Fatal(err)
	}
	if len(s.cidrs) != 0 {
		t.Fatal("a gone CIDR stays after its last address went")
	}
}

func TestReleasable(t *testing.T) {
	s, _, clock := newTestState(tables.IPv4)
	s.setCIDRs([]tables.PoolCIDRs{alloc("default", "198.18.100.0/24", "198.18.101.0/24")})
	got, _ := s.add(addReq("c1"), v4default) // in the first CIDR
	demand := s.demand()
	if r := s.releasable(demand, time.Minute); len(r) != 0 {
		t.Fatalf("released before settling: %v", r)
	}
	clock.t = clock.t.Add(2 * time.Minute)
	r := s.releasable(demand, time.Minute)
	if len(r) != 1 || r[0].CIDRs[0].String() != "198.18.101.0/24" {
		t.Fatalf("releasable = %v, want the empty second CIDR", r)
	}
	// Marked releasing: nothing comes from it any more.
	for i := 0; i < 252; i++ {
		if _, err := s.add(addReq(string(rune('a'+i%26))+string(rune('a'+i/26))), v4default); err != nil {
			break
		}
	}
	for ip := range s.allocs {
		if netip.MustParsePrefix("198.18.101.0/24").Contains(ip) {
			t.Fatalf("allocated %s from a CIDR being released", ip)
		}
	}
	// The release failed: the CIDR serves again.
	s.keep(r)
	if _, err := s.add(addReq("after-keep"), v4default); err != nil {
		t.Fatalf("after keep: %v", err)
	}
	_ = got
}

func TestGC(t *testing.T) {
	s, _, _ := newTestState(tables.IPv4)
	s.setCIDRs([]tables.PoolCIDRs{alloc("default", "198.18.100.0/24")})
	a, _ := s.add(addReq("keep"), v4default)
	b, _ := s.add(addReq("stale"), v4default)
	other := addReq("other-net")
	other.Network = "other"
	s.add(other, v4default)
	released, err := s.gc("herald", []ipamv1.Attachment{a[0].Attachment})
	if err != nil || len(released) != 1 || released[0].IP != b[0].IP {
		t.Fatalf("gc released %+v, %v; want only %s", released, err, b[0].IP)
	}
	if len(s.allocs) != 2 {
		t.Fatalf("gc touched another network or a valid attachment: %v", s.allocs)
	}
}

// A DEL that arrives before the node's CIDRs are known again (a queued DEL
// replayed at start) releases the journaled address all the same.
func TestDelOfRestoredBeforeCIDRsKnown(t *testing.T) {
	s, m, _ := newTestState(tables.IPv4)
	e := entry{IP: netip.MustParseAddr("198.18.100.2"), CIDR: netip.MustParsePrefix("198.18.100.0/24"), Pool: "default",
		Network: "herald", Attachment: ipamv1.Attachment{ContainerID: "c1", IfName: "eth0"}}
	m.files[e.IP] = e
	s.restore([]entry{e})
	released, err := s.del(e.Attachment)
	if err != nil || len(released) != 1 {
		t.Fatalf("del = %v, %v", released, err)
	}
	if _, ok := m.files[e.IP]; ok {
		t.Fatal("journal entry left")
	}
	s.setCIDRs([]tables.PoolCIDRs{alloc("default", "198.18.100.0/24")})
	if inUse, _ := s.usage(); inUse[poolFamily{"default", tables.IPv4}] != 0 {
		t.Fatalf("still in use: %v", inUse)
	}
	// GC of orphans works too.
	e2 := e
	e2.ContainerID = "c2"
	m.files[e2.IP] = e2
	s2, _, _ := newTestState(tables.IPv4)
	s2.store = m
	s2.restore([]entry{e2})
	if r, err := s2.gc("herald", nil); err != nil || len(r) != 1 {
		t.Fatalf("gc of an orphan = %v, %v", r, err)
	}
}

// TestDrainingCIDR: a CIDR its pool no longer has hands out nothing more;
// the node's demand is the same, so room comes from elsewhere; the CIDR
// is released as soon as its last address is; re-added, it serves again.
func TestDrainingCIDR(t *testing.T) {
	s, _, _ := newTestState(tables.IPv4)
	s.setCIDRs([]tables.PoolCIDRs{alloc("default", "198.18.100.0/24")})
	got, _ := s.add(addReq("c1"), v4default)
	// 198.18.100.0/24 leaves the pool.
	if d := s.setPools(map[string]*tables.PodIPPool{"default": testPool("default", "198.19.0.0/16", "")}); len(d) != 1 || d[0].String() != "198.18.100.0/24" {
		t.Fatalf("draining = %v", d)
	}
	if _, err := s.add(addReq("c2"), v4default); !errors.Is(err, errNoRoom) {
		t.Fatalf("allocated from a draining CIDR: %v", err)
	}
	if ok, _ := s.ready(); ok {
		t.Fatal("ready with only a draining CIDR of the default pool")
	}
	if d := s.demand(); len(d) != 1 || d[0].IPv4 != 16 {
		t.Fatalf("demand = %+v, want default 16 (roundUp(1+1+8, 8)): the allocator adds a CIDR of the pool", d)
	}
	s.setCIDRs([]tables.PoolCIDRs{alloc("default", "198.18.100.0/24", "198.19.0.0/24")})
	second, err := s.add(addReq("c2"), v4default)
	if err != nil || !netip.MustParsePrefix("198.19.0.0/24").Contains(second[0].IP) {
		t.Fatalf("add with a new CIDR = %+v, %v", second, err)
	}
	if r := s.releasable(s.demand(), time.Hour); len(r) != 0 {
		t.Fatalf("released a draining CIDR that is in use: %v", r)
	}
	if _, err := s.del(got[0].Attachment); err != nil {
		t.Fatal(err)
	}
	// Its last address gone: released at once, whatever the settle time.
	r := s.releasable(s.demand(), time.Hour)
	if len(r) != 1 || r[0].CIDRs[0].String() != "198.18.100.0/24" {
		t.Fatalf("releasable = %v, want the drained CIDR at once", r)
	}
	s.keep(r)
	// Back in the pool: it serves again.
	s.setPools(map[string]*tables.PodIPPool{"default": testPool("default", "198.18.0.0/15", "")})
	if r := s.releasable(s.demand(), time.Hour); len(r) != 0 {
		t.Fatalf("released a CIDR that is back in its pool: %v", r)
	}
}

// TestDeletingPoolAsksNothing: a pool being deleted gets no pre-allocation
// (which would hold a CIDR of it for good); its idle CIDR goes at once.
func TestDeletingPoolAsksNothing(t *testing.T) {
	s, _, _ := newTestState(tables.IPv4)
	s.pre["mars"] = 3
	mars := testPool("mars", "198.19.0.0/16", "")
	pools := map[string]*tables.PodIPPool{"default": testPool("default", "198.18.0.0/15", ""), "mars": mars}
	s.setPools(pools)
	s.setCIDRs([]tables.PoolCIDRs{alloc("default", "198.18.100.0/24"), alloc("mars", "198.19.0.0/24")})
	if d := s.demand(); len(d) != 2 || d[1].Pool != "mars" || d[1].IPv4 != 3 {
		t.Fatalf("demand = %+v, want mars 3", d)
	}
	deleting := *mars
	deleting.Deleting = true
	pools["mars"] = &deleting
	s.setPools(pools)
	if d := s.demand(); len(d) != 1 || d[0].Pool != "default" {
		t.Fatalf("demand = %+v, want default only", d)
	}
	r := s.releasable(s.demand(), time.Hour)
	if len(r) != 1 || r[0].Pool != "mars" {
		t.Fatalf("releasable = %v, want mars's CIDR at once", r)
	}
}

// TestPreAllocationOnlyFamiliesOfPool: an IPv4-only pool pre-allocated on a
// dual-stack node asks for IPv4 only.
func TestPreAllocationOnlyFamiliesOfPool(t *testing.T) {
	s, _, _ := newTestState(tables.IPv4, tables.IPv6)
	s.pre["other"] = 4
	s.setPools(map[string]*tables.PodIPPool{"default": testPool("default", "198.18.0.0/15", "fd00::/8"), "other": testPool("other", "198.19.0.0/16", "")})
	d := s.demand()
	if len(d) != 2 || d[1] != (tables.PoolDemand{Pool: "other", IPv4: 4}) {
		t.Fatalf("demand = %+v, want other 4/0", d)
	}
}

// TestShortfallAnswersWaitingAdd: once the allocator said it cannot give
// what the node asks now (this ADD included), the ADD is refused with the
// reason; an answer to a smaller demand leaves it waiting.
func TestShortfallAnswersWaitingAdd(t *testing.T) {
	s, _, _ := newTestState(tables.IPv4)
	s.setCIDRs([]tables.PoolCIDRs{alloc("default", "198.18.100.0/30")}) // one usable
	if _, err := s.add(addReq("c1"), v4default); err != nil {
		t.Fatal(err)
	}
	sf := tables.PodCIDRShortfall{Pool: "default", Family: tables.IPv4, Cause: tables.ShortfallExhausted, Detail: "no free /24", Requested: 8, Available: 1}
	s.setShortfalls([]tables.PodCIDRShortfall{sf}) // an answer to the demand before this ADD
	if _, err := s.add(addReq("c2"), v4default); !errors.Is(err, errNoRoom) {
		t.Fatalf("add = %v, want it to wait: the allocator has not seen this ADD's demand", err)
	}
	if n := s.needs(poolFamily{"default", tables.IPv4}); n != 16 {
		t.Fatalf("needs = %d, want 16", n)
	}
	changed := s.changed
	sf.Requested = 16
	s.setShortfalls([]tables.PodCIDRShortfall{sf})
	select {
	case <-changed:
	default:
		t.Fatal("a new shortfall does not wake waiting ADDs")
	}
	_, err := s.add(addReq("c2"), v4default)
	var short *shortfallError
	if !errors.As(err, &short) || short.Cause != tables.ShortfallExhausted {
		t.Fatalf("add = %v, want the allocator's shortfall", err)
	}
}

// TestShortfallOfAnOlderPoolSpec: a shortfall the allocator wrote before
// the pool's spec changed (extended a moment ago) does not refuse an ADD:
// the ADD waits for the CIDR the allocator is about to give. A shortfall
// that arrives after the change refuses again.
func TestShortfallOfAnOlderPoolSpec(t *testing.T) {
	s, _, _ := newTestState(tables.IPv4)
	s.setCIDRs([]tables.PoolCIDRs{alloc("default", "198.18.100.0/30")}) // one usable
	if _, err := s.add(addReq("c1"), v4default); err != nil {
		t.Fatal(err)
	}
	sf := tables.PodCIDRShortfall{Pool: "default", Family: tables.IPv4, Cause: tables.ShortfallExhausted, Detail: "no free /24", Requested: 16, Available: 1}
	s.setShortfalls([]tables.PodCIDRShortfall{sf})
	var short *shortfallError
	if _, err := s.add(addReq("c2"), v4default); !errors.As(err, &short) {
		t.Fatalf("add = %v, want the allocator's shortfall", err)
	}

	extended := testPool("default", "198.18.0.0/15", "fd00::/8")
	extended.Generation = 2
	s.setPools(map[string]*tables.PodIPPool{"default": extended})
	if _, err := s.add(addReq("c2"), v4default); !errors.Is(err, errNoRoom) {
		t.Fatalf("add after the pool changed = %v, want it to wait for the allocator's next answer", err)
	}

	sf.Requested, sf.Available = 24, 1
	s.setShortfalls([]tables.PodCIDRShortfall{sf})
	if _, err := s.add(addReq("c2"), v4default); !errors.As(err, &short) {
		t.Fatalf("add = %v, want the allocator's new shortfall", err)
	}
}

// TestPendingInEveryFamilyWithoutRoom: the first pod of a pool on a
// dual-stack node that holds no CIDR of it counts as pending in both
// families at once, so that the node asks for both CIDRs in one request;
// a family that has room does not count it.
func TestPendingInEveryFamilyWithoutRoom(t *testing.T) {
	s, _, _ := newTestState(tables.IPv4, tables.IPv6)
	s.setPools(map[string]*tables.PodIPPool{
		"default": testPool("default", "198.18.0.0/15", "fd00::/8"),
		"green":   testPool("green", "198.18.64.0/18", "fd00:64::/48"),
	})
	s.setCIDRs([]tables.PoolCIDRs{alloc("default", "198.18.100.0/30")}) // IPv4 only, one usable
	green := map[tables.Family]string{tables.IPv4: "green", tables.IPv6: "green"}
	if _, err := s.add(addReq("g1"), green); !errors.Is(err, errNoRoom) {
		t.Fatalf("add = %v, want it to wait", err)
	}
	_, pending := s.usage()
	if pending[poolFamily{"green", tables.IPv4}] != 1 || pending[poolFamily{"green", tables.IPv6}] != 1 {
		t.Fatalf("pending = %v, want the ADD in both families of green", pending)
	}

	// IPv4 has room (the /30 of default), IPv6 has none: pending in IPv6 only.
	mixed := map[tables.Family]string{tables.IPv4: "default", tables.IPv6: "default"}
	if _, err := s.add(addReq("d1"), mixed); !errors.Is(err, errNoRoom) {
		t.Fatalf("add = %v, want it to wait", err)
	}
	_, pending = s.usage()
	if pending[poolFamily{"default", tables.IPv4}] != 0 || pending[poolFamily{"default", tables.IPv6}] != 1 {
		t.Fatalf("pending = %v, want d1 in default's IPv6 only", pending)
	}
}
