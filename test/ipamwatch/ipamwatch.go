// Package ipamwatch follows every CiliumNode through a watch and checks,
// on every change it sees, the promise of the pod CIDR allocator: no CIDR
// (or any part of one) is allocated to two nodes at once. Watch events come
// in resourceVersion order per object; the check runs on the latest version
// of every node, so an overlap seen here existed in the cluster.
package ipamwatch

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	v2 "github.com/heraldlb/herald/api/cilium.io/v2"
	"github.com/heraldlb/herald/api/client/clientset/versioned"
)

// Watcher checks the CiliumNodes.
type Watcher struct {
	mu         sync.Mutex
	nodes      map[string][]held    // node -> its CIDRs
	firstCIDR  map[string]time.Time // node -> when the watch first saw it hold a CIDR
	events     int
	violations []string
	// exempt are CIDRs a test puts on two nodes on purpose (Exempt).
	exempt   map[netip.Prefix]string
	exempted int
}

type held struct {
	prefix netip.Prefix
	pool   string
}

// Start watches the CiliumNodes until ctx ends and returns once the
// initial list is in.
func Start(ctx context.Context, client versioned.Interface) (*Watcher, error) {
	w := &Watcher{nodes: map[string][]held{}, firstCIDR: map[string]time.Time{}, exempt: map[netip.Prefix]string{}}
	api := client.CiliumV2().CiliumNodes()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return api.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return api.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &v2.CiliumNode{}, 0, cache.Indexers{})
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.update(o) },
		UpdateFunc: func(_, o any) { w.update(o) },
		DeleteFunc: func(o any) { w.remove(o) },
	})
	if err != nil {
		return nil, err
	}
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("ipamwatch: the CiliumNode watch did not sync")
	}
	return w, nil
}

func (w *Watcher) update(o any) {
	n, ok := o.(*v2.CiliumNode)
	if !ok {
		return
	}
	var hs []held
	for _, a := range n.Spec.IPAM.Pools.Allocated {
		for _, c := range a.CIDRs {
			p, err := netip.ParsePrefix(string(c))
			if err == nil {
				hs = append(hs, held{p.Masked(), a.Pool})
			}
		}
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	w.nodes[n.Name] = hs
	if _, seen := w.firstCIDR[n.Name]; !seen && len(hs) > 0 {
		w.firstCIDR[n.Name] = now
	}
	for other, ohs := range w.nodes {
		if other == n.Name {
			continue
		}
		for _, h := range hs {
			for _, o := range ohs {
				if h.prefix.Addr().BitLen() == o.prefix.Addr().BitLen() && h.prefix.Overlaps(o.prefix) {
					if w.exempted1(h.prefix) {
						w.exempted++
						continue
					}
					w.violations = append(w.violations, fmt.Sprintf("%s (pool %s) of node %s overlaps %s (pool %s) of node %s at resourceVersion %s",
						h.prefix, h.pool, n.Name, o.prefix, o.pool, other, n.ResourceVersion))
				}
			}
		}
	}
}

func (w *Watcher) remove(o any) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	if n, ok := o.(*v2.CiliumNode); ok {
		w.mu.Lock()
		delete(w.nodes, n.Name)
		w.events++
		w.mu.Unlock()
	}
}

// Exempt stops counting overlaps with p as violations until end is
// called: for a test that writes a CIDR into a second CiliumNode by hand,
// saying why.
func (w *Watcher) Exempt(p netip.Prefix, why string) (end func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.exempt[p.Masked()] = why
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.exempt, p.Masked())
	}
}

func (w *Watcher) exempted1(p netip.Prefix) bool {
	for e := range w.exempt {
		if e.Overlaps(p) {
			return true
		}
	}
	return false
}

// Violations returns every overlap seen so far.
func (w *Watcher) Violations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.violations)
}

// FirstCIDRAt returns when the watch first saw the node hold a CIDR.
func (w *Watcher) FirstCIDRAt(node string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.firstCIDR[node]
	return t, ok
}

// Events counts the CiliumNode changes the watch has seen.
func (w *Watcher) Events() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.events
}

// Allocated returns each node's CIDRs now, as "pool=cidr" sorted.
func (w *Watcher) Allocated() map[string][]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string][]string{}
	for n, hs := range w.nodes {
		for _, h := range hs {
			out[n] = append(out[n], h.pool+"="+h.prefix.String())
		}
		sort.Strings(out[n])
	}
	return out
}

// Summary describes what was watched, for logs.
func (w *Watcher) Summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var parts []string
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for k := range w.nodes {
			if !yield(k) {
				return
			}
		}
	}) {
		parts = append(parts, fmt.Sprintf("%s: %d CIDRs", n, len(w.nodes[n])))
	}
	return fmt.Sprintf("%d CiliumNode events; %s; %d violations (%d overlaps of CIDRs tests put on two nodes on purpose)", w.events, strings.Join(parts, ", "), len(w.violations), w.exempted)
}
