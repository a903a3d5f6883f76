package allocator

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/heraldlb/herald/tables"
)

// counts renders a pool's status as "total/available/used".
func (w *world) counts(pool string) string {
	st := w.pool(pool)
	return fmt.Sprintf("%s/%s/%s", st.Total, st.Available, st.Used)
}

// Overlapping pools: each pool counts as used only the addresses it backs,
// and no pool offers an address another one backs, before or after the
// conflict resolves.
func TestPoolCountsOfOverlappingPools(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertPool(mkPool("blue-pool", 0, []string{"20.0.10.0/24"}))
	w.e.UpsertPool(mkPool("red-pool", 1, []string{"20.0.10.0/24"}))
	w.e.UpsertService(mkSvc("a/one", 0))
	w.expect("a/one", "20.0.10.0|satisfied|")
	for pool, want := range map[string]string{"blue-pool": "256/255/1", "red-pool": "256/255/0"} {
		if got := w.counts(pool); got != want {
			t.Errorf("%s: %s, want %s", pool, got, want)
		}
	}

	// blue-pool goes: red-pool serves again and backs a/one's address,
	// which it never hands out a second time.
	w.e.DeletePool("blue-pool")
	w.expect("a/one", "20.0.10.0|satisfied|")
	if got := w.counts("red-pool"); got != "256/255/1" {
		t.Errorf("red-pool: %s, want 256/255/1", got)
	}
	w.e.UpsertService(mkSvc("a/two", 1))
	w.expect("a/two", "20.0.10.1|satisfied|")

	// blue-pool comes back, newer now: it conflicts and counts nothing.
	w.e.UpsertPool(mkPool("blue-pool", 2, []string{"20.0.10.0/24"}))
	for pool, want := range map[string]string{"blue-pool": "256/254/0", "red-pool": "256/254/2"} {
		if got := w.counts(pool); got != want {
			t.Errorf("%s: %s, want %s", pool, got, want)
		}
	}
	checkEngine(t, w.e)
}

// TestPoolCountsUnderRandomEdits drives the engine through a fixed
// pseudo-random sequence of pool and Service edits over overlapping blocks
// and checks after every step that each pool's count is exactly the
// addresses it backs and that no address is held by Services that may not
// share it.
func TestPoolCountsUnderRandomEdits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	blocks := [][]string{{"20.0.10.0/29"}, {"20.0.10.4/30"}, {"20.0.10.0/30", "20.0.10.6-20.0.10.9"}, {}}
	w := newWorld(t)
	for step := range 400 {
		pool := fmt.Sprintf("pool-%d", rng.IntN(3))
		svc := fmt.Sprintf("a/s%d", rng.IntN(10))
		switch rng.IntN(6) {
		case 0:
			var opts []poolOpt
			if rng.IntN(4) == 0 {
				opts = append(opts, disabled)
			}
			w.e.UpsertPool(mkPool(pool, rng.IntN(3), blocks[rng.IntN(len(blocks))], opts...))
		case 1:
			w.e.DeletePool(pool)
		case 2:
			w.e.DeleteService(svc)
		default:
			var opts []svcOpt
			if rng.IntN(2) == 0 {
				opts = append(opts, annotate(tables.AnnotationSharingKey, "k"), ports(int32(80+rng.IntN(3))))
			}
			if rng.IntN(3) == 0 {
				opts = append(opts, annotate(tables.AnnotationIPs, fmt.Sprintf("20.0.10.%d", rng.IntN(10))))
			}
			w.e.UpsertService(mkSvc(svc, rng.IntN(5), opts...))
		}
		w.e.Evaluate()
		if checkEngine(t, w.e); t.Failed() {
			t.Fatalf("after step %d", step)
		}
	}
}

// checkEngine checks the engine's bookkeeping against a count from scratch.
func checkEngine(t *testing.T, e *Engine) {
	t.Helper()
	backed := map[string]map[netip.Addr]bool{}
	for a, use := range e.ips {
		for i, u := range use.users {
			for _, h := range u.held {
				if h.Addr != a {
					continue
				}
				if backed[h.Pool] == nil {
					backed[h.Pool] = map[netip.Addr]bool{}
				}
				backed[h.Pool][a] = true
			}
			for _, v := range use.users[i+1:] {
				if u.row != nil && v.row != nil {
					if ok, why := canShare(u.row, v.row); !ok {
						t.Errorf("%s held by %s and %s: %s", a, u.key, v.key, why.detail)
					}
				}
			}
		}
		for name, p := range e.pools {
			for _, r := range p.ranges {
				if r.Contains(a) && !r.InUse(a) {
					t.Errorf("%s in use but free in a block of %s", a, name)
				}
			}
		}
	}
	for name, p := range e.pools {
		if want := uint64(len(backed[name])); p.used != want {
			t.Errorf("pool %s counts %d used, backs %d", name, p.used, want)
		}
	}
}
