// Package lbwatch follows the Services of a namespace through a watch and
// checks LB IPAM's promises on every change it sees, not only at the end:
//
//   - no address is in the status of two Services at once, unless both carry
//     the same sharing key (lbipam.cilium.io/sharing-key);
//   - once a Service has addresses, they never change while it exists (no
//     re-IP, no address taken away).
//
// It also records when each Service first showed an address, for latency
// figures. Watch events arrive in resourceVersion order, so the state after
// each event is the cluster's state at that version: a duplicate seen here
// existed in etcd.
package lbwatch

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

const sharingKeyAnnotation = "lbipam.cilium.io/sharing-key"

// Watcher checks one namespace.
type Watcher struct {
	mu         sync.Mutex
	byIP       map[string]map[string]string // ip -> service name -> sharing key
	current    map[string][]string          // service name -> its ips now
	first      map[string][]string          // uid -> the first ips it showed
	firstAt    map[string]time.Time         // service name -> when it first showed ips
	events     int
	violations []string
}

// Start watches namespace ns until ctx ends and returns once the initial
// list is in.
func Start(ctx context.Context, client kubernetes.Interface, ns string) (*Watcher, error) {
	w := &Watcher{
		byIP: map[string]map[string]string{}, current: map[string][]string{},
		first: map[string][]string{}, firstAt: map[string]time.Time{},
	}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Services().Informer()
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
		return nil, fmt.Errorf("lbwatch: the Service watch of %s did not sync", ns)
	}
	return w, nil
}

func ingress(svc *corev1.Service) []string {
	var ips []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		ips = append(ips, in.IP)
	}
	sort.Strings(ips)
	return ips
}

func (w *Watcher) update(o any) {
	svc, ok := o.(*corev1.Service)
	if !ok {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	name, ips := svc.Name, ingress(svc)
	w.unindex(name)
	w.current[name] = ips
	key := svc.Annotations[sharingKeyAnnotation]
	for _, ip := range ips {
		holders := w.byIP[ip]
		if holders == nil {
			holders = map[string]string{}
			w.byIP[ip] = holders
		}
		for other, otherKey := range holders {
			if key == "" || otherKey != key {
				w.violate("%s is held by %s and %s at resourceVersion %s (sharing keys %q and %q)", ip, other, name, svc.ResourceVersion, otherKey, key)
			}
		}
		holders[name] = key
	}
	if len(ips) == 0 {
		if before := w.first[string(svc.UID)]; before != nil {
			w.violate("%s lost its addresses %v at resourceVersion %s", name, before, svc.ResourceVersion)
		}
		return
	}
	before, seen := w.first[string(svc.UID)]
	switch {
	case !seen:
		w.first[string(svc.UID)] = ips
		w.firstAt[name] = now
	case !slices.Equal(before, ips):
		w.violate("%s changed from %v to %v at resourceVersion %s", name, before, ips, svc.ResourceVersion)
	}
}

func (w *Watcher) remove(o any) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	svc, ok := o.(*corev1.Service)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	w.unindex(svc.Name)
	delete(w.current, svc.Name)
	delete(w.first, string(svc.UID))
}

func (w *Watcher) unindex(name string) {
	for _, ip := range w.current[name] {
		delete(w.byIP[ip], name)
		if len(w.byIP[ip]) == 0 {
			delete(w.byIP, ip)
		}
	}
}

func (w *Watcher) violate(format string, args ...any) {
	w.violations = append(w.violations, fmt.Sprintf(format, args...))
}

// Violations returns every broken promise seen so far.
func (w *Watcher) Violations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.violations)
}

// Summary describes what was watched, for logs.
func (w *Watcher) Summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	withIPs := 0
	for _, ips := range w.current {
		if len(ips) > 0 {
			withIPs++
		}
	}
	return fmt.Sprintf("%d Service events seen; %d Services now, %d with addresses, %d addresses in use; %d violations",
		w.events, len(w.current), withIPs, len(w.byIP), len(w.violations))
}

// FirstIPAt returns when the named Service first showed an address.
func (w *Watcher) FirstIPAt(name string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.firstAt[name]
	return t, ok
}

// WithoutIPs lists the Services that have no address now.
func (w *Watcher) WithoutIPs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for name, ips := range w.current {
		if len(ips) == 0 {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Report joins violations for a test failure message.
func Report(vs []string) string {
	const max = 20
	if len(vs) > max {
		return strings.Join(vs[:max], "\n") + fmt.Sprintf("\n... and %d more", len(vs)-max)
	}
	return strings.Join(vs, "\n")
}
