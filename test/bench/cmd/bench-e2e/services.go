package main

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func serviceName(i int) string { return fmt.Sprintf("lb-%05d", i) }

func newService(name string, labels map[string]string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchNamespace, Labels: labels},
		Spec: corev1.ServiceSpec{
			Type:                          corev1.ServiceTypeLoadBalancer,
			AllocateLoadBalancerNodePorts: ptr.To(false),
			Selector:                      map[string]string{"app": name},
			Ports: []corev1.ServicePort{{
				Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080),
			}},
		},
	}
}

// createServices creates n Services with w workers and returns the wall
// time from releasing the workers until the last Create call returned.
func createServices(ctx context.Context, client kubernetes.Interface, n, w int) (time.Duration, error) {
	svcs := make([]*corev1.Service, n) // built before the clock starts
	for i := range svcs {
		svcs[i] = newService(serviceName(i), map[string]string{phaseLabel: phase})
	}
	return parallel(ctx, n, w, func(ctx context.Context, i int) error {
		_, err := client.CoreV1().Services(benchNamespace).Create(ctx, svcs[i], metav1.CreateOptions{})
		return err
	})
}

// parallel runs f(0..n-1) on w goroutines and returns the wall time from
// releasing them until all calls returned, or the first error.
func parallel(ctx context.Context, n, w int, f func(context.Context, int) error) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan int, n)
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
		start    = make(chan struct{})
	)
	for g := 0; g < w; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range work {
				if ctx.Err() != nil {
					return
				}
				if err := f(ctx, i); err != nil {
					once.Do(func() { firstErr = fmt.Errorf("item %d: %w", i, err); cancel() })
					return
				}
			}
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	return time.Since(t0), firstErr
}

// tracker follows the measured Services through the informer.
type tracker struct {
	mu      sync.Mutex
	want    int
	t0      time.Time
	withIP  map[string]bool
	last    time.Time // when the last Service got its first ingress IP
	mods    map[string]int
	lastMod time.Time
	done    chan struct{}
	store   cache.Store
}

func newTracker(want int) *tracker {
	return &tracker{want: want, withIP: map[string]bool{}, mods: map[string]int{}, done: make(chan struct{})}
}

func (t *tracker) start(t0 time.Time) {
	t.mu.Lock()
	t.t0 = t0
	t.mu.Unlock()
}

func (t *tracker) observe(obj, oldObj any) {
	now := time.Now()
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := oldObj.(*corev1.Service); ok && old.ResourceVersion != svc.ResourceVersion {
		t.mods[svc.Name]++
		t.lastMod = now
	}
	if t.withIP[svc.Name] || !hasIngressIP(svc) {
		return
	}
	t.withIP[svc.Name] = true
	if len(t.withIP) == t.want {
		t.last = now
		close(t.done)
	}
}

func (t *tracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.withIP)
}

func (t *tracker) modifications() (total, most int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, n := range t.mods {
		total += n
		most = max(most, n)
	}
	return total, most
}

func (t *tracker) sinceLastMod() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return time.Since(t.lastMod)
}

func (t *tracker) services() []any { return t.store.List() }

func hasIngressIP(svc *corev1.Service) bool {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			return true
		}
	}
	return false
}

func settle(ctx context.Context, t *tracker, quiet, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && t.sinceLastMod() < quiet {
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// checkIPs makes sure the figures are about a correct result: n Services,
// each with IPs from the pool, no IP handed out twice.
func checkIPs(objs []any, pool netip.Prefix, n int) error {
	if len(objs) != n {
		return fmt.Errorf("the informer holds %d Services, want %d", len(objs), n)
	}
	seen := map[netip.Addr]string{}
	for _, o := range objs {
		svc := o.(*corev1.Service)
		for _, in := range svc.Status.LoadBalancer.Ingress {
			ip, err := netip.ParseAddr(in.IP)
			if err != nil {
				return fmt.Errorf("service %s: ingress IP %q: %w", svc.Name, in.IP, err)
			}
			if !pool.Contains(ip) {
				return fmt.Errorf("service %s: ingress IP %s is outside the pool %s", svc.Name, ip, pool)
			}
			if other, dup := seen[ip]; dup {
				return fmt.Errorf("ingress IP %s given to both %s and %s", ip, other, svc.Name)
			}
			seen[ip] = svc.Name
		}
	}
	return nil
}
