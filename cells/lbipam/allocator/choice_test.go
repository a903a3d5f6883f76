package allocator

import (
	"strings"
	"testing"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

func poolAnnotation(k, v string) poolOpt {
	return func(p *v2alpha1.CiliumLoadBalancerIPPool) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

var (
	reserved = poolAnnotation(tables.AnnotationPoolAutoAssign, "false")
	priority = func(n string) poolOpt { return poolAnnotation(tables.AnnotationPoolPriority, n) }
)

// Pool choice: the oldest pool by default, the highest priority first, a
// reserved pool only for the Services that name it or request its
// addresses; what a Service holds stays.
func TestPoolChoice(t *testing.T) {
	named := annotate(tables.AnnotationMetalLBPool, "gold")
	tests := []struct {
		name  string
		pools []*tables.LBPool
		svc   *tables.Service
		want  string
	}{
		{"oldest first", []*tables.LBPool{mkPool("old", 0, []string{"20.0.10.0/24"}), mkPool("new", 1, []string{"20.0.20.0/24"})},
			mkSvc("example/a", 0), "20.0.10.0|satisfied|"},
		{"priority before age", []*tables.LBPool{mkPool("old", 0, []string{"20.0.10.0/24"}), mkPool("new", 1, []string{"20.0.20.0/24"}, priority("1"))},
			mkSvc("example/a", 0), "20.0.20.0|satisfied|"},
		{"lower priority first", []*tables.LBPool{mkPool("two", 0, []string{"20.0.10.0/24"}, priority("2")), mkPool("one", 1, []string{"20.0.20.0/24"}, priority("1"))},
			mkSvc("example/a", 0), "20.0.20.0|satisfied|"},
		{"a bad priority is none", []*tables.LBPool{mkPool("old", 0, []string{"20.0.10.0/24"}), mkPool("new", 1, []string{"20.0.20.0/24"}, priority("first"))},
			mkSvc("example/a", 0), "20.0.10.0|satisfied|"},
		{"reserved pool skipped", []*tables.LBPool{mkPool("gold", 0, []string{"20.0.10.0/24"}, reserved), mkPool("plain", 1, []string{"20.0.20.0/24"})},
			mkSvc("example/a", 0), "20.0.20.0|satisfied|"},
		{"reserved pool, named", []*tables.LBPool{mkPool("gold", 0, []string{"20.0.10.0/24"}, reserved), mkPool("plain", 1, []string{"20.0.20.0/24"})},
			mkSvc("example/a", 0, named), "20.0.10.0|satisfied|"},
		{"reserved pool, address requested", []*tables.LBPool{mkPool("gold", 0, []string{"20.0.10.0/24"}, reserved), mkPool("plain", 1, []string{"20.0.20.0/24"})},
			mkSvc("example/a", 0, annotate(tables.AnnotationIPs, "20.0.10.7")), "20.0.10.7|satisfied|"},
		{"a bad auto-assign reserves", []*tables.LBPool{mkPool("gold", 0, []string{"20.0.10.0/24"}, poolAnnotation(tables.AnnotationPoolAutoAssign, "nope"))},
			mkSvc("example/a", 0), `|no_pool|IP Pools that match this service are reserved for the services that name them or request their IPs (annotation lbipam.herald.io/auto-assign: "false"): 'gold'`},
		{"only reserved pools", []*tables.LBPool{mkPool("gold", 0, []string{"20.0.10.0/24"}, reserved), mkPool("silver", 1, []string{"20.0.20.0/24"}, reserved)},
			mkSvc("example/a", 0), `|no_pool|IP Pools that match this service are reserved for the services that name them or request their IPs (annotation lbipam.herald.io/auto-assign: "false"): 'gold', 'silver'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			for _, p := range tt.pools {
				w.e.UpsertPool(p)
			}
			w.e.UpsertService(tt.svc)
			w.expect(tt.svc.Key(), tt.want)
		})
	}
}

// A pool that becomes reserved, or loses its priority, keeps what it
// gave; only new addresses follow the choice.
func TestPoolChoiceKeepsHeld(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertPool(mkPool("gold", 0, []string{"20.0.10.0/24"}))
	w.e.UpsertPool(mkPool("plain", 1, []string{"20.0.20.0/24"}))
	w.e.UpsertService(mkSvc("example/a", 0))
	w.expect("example/a", "20.0.10.0|satisfied|")
	w.e.UpsertPool(mkPool("gold", 0, []string{"20.0.10.0/24"}, reserved))
	w.expect("example/a", "20.0.10.0|satisfied|")
	w.e.UpsertService(mkSvc("example/b", 1))
	w.expect("example/b", "20.0.20.0|satisfied|")
}

// A bad annotation shows in the pool's status, for its condition.
func TestPoolChoiceErrorInStatus(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertPool(mkPool("gold", 0, []string{"20.0.10.0/24"}, priority("high")))
	if st := w.pool("gold"); !strings.Contains(st.ChoiceError, `"high" is not a priority`) {
		t.Fatalf("choice error %q", st.ChoiceError)
	}
}

// herald-dbg explain lists the pools in the order they are tried, with
// their priority, and says which one is reserved.
func TestExplainPoolChoice(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertPool(mkPool("gold", 0, []string{"20.0.10.0/24"}, reserved))
	w.e.UpsertPool(mkPool("plain", 1, []string{"20.0.20.0/24"}, priority("1")))
	w.e.UpsertService(mkSvc("example/a", 0))
	w.e.Evaluate()
	out := strings.Join(w.e.Explain("example/a"), "\n")
	iPlain, iGold := strings.Index(out, "Pool plain (priority 1): "), strings.Index(out, "Pool gold: selects the Service but is reserved")
	if iPlain < 0 || iGold < 0 || iPlain > iGold {
		t.Fatalf("explain:\n%s", out)
	}
}
