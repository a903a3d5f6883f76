// Command bench-null is the floor that bench-e2e measures LB IPAM against:
// the least a controller that publishes LoadBalancer IPs in Service status
// can do. It watches Services (one informer, all namespaces, nothing else),
// gives each LoadBalancer Service without an ingress IP the next address of
// one prefix, and writes it with one status update (protobuf, no client
// rate limit). No Events, no leader election, no pools, no fencing, no
// release: nothing Herald must do for correctness, which is the point.
//
//	bench-null -kubeconfig KUBECONFIG -pool 198.18.0.0/16
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"sync"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	poolFlag := flag.String("pool", "198.18.0.0/16", "addresses are handed out in order from this prefix")
	workers := flag.Int("workers", 16, "status updates in flight")
	flag.Parse()
	pool, err := netip.ParsePrefix(*poolFlag)
	if err != nil {
		fatalf("-pool: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, pool.Masked(), *workers); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench-null: "+format+"\n", args...)
	os.Exit(1)
}

func run(ctx context.Context, kubeconfig string, pool netip.Prefix, workers int) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS = -1 // no client-side rate limit: the API server is the limit
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.UserAgent = "bench-null"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}

	queue := workqueue.NewTyped[string]()
	factory := informers.NewSharedInformerFactory(client, 0)
	inf := factory.Core().V1().Services().Informer()
	enqueue := func(obj any) {
		if svc, ok := obj.(*corev1.Service); ok && wantsIP(svc) {
			queue.Add(svc.Namespace + "/" + svc.Name)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return ctx.Err()
	}
	fmt.Println("bench-null: synced")

	a := &addresses{next: pool.Addr().Next(), pool: pool}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				key, quit := queue.Get()
				if quit {
					return
				}
				if err := assign(ctx, client, inf.GetStore(), a, key); err != nil {
					fmt.Fprintf(os.Stderr, "bench-null: %s: %v\n", key, err)
				}
				queue.Done(key)
			}
		}()
	}
	<-ctx.Done()
	queue.ShutDown()
	wg.Wait()
	factory.Shutdown()
	return nil
}

func wantsIP(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && len(svc.Status.LoadBalancer.Ingress) == 0
}

// assign writes the next address into the Service's status. A conflict
// (the informer's copy was stale) is left to the next watch event, which
// queues the Service again if it still has no address.
func assign(ctx context.Context, client kubernetes.Interface, store cache.Store, a *addresses, key string) error {
	obj, ok, err := store.GetByKey(key)
	if err != nil || !ok {
		return err
	}
	svc := obj.(*corev1.Service)
	if !wantsIP(svc) {
		return nil
	}
	ip, err := a.take()
	if err != nil {
		return err
	}
	svc = svc.DeepCopy()
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip.String()}}
	_, err = client.CoreV1().Services(svc.Namespace).UpdateStatus(ctx, svc, metav1.UpdateOptions{})
	return err
}

type addresses struct {
	mu   sync.Mutex
	next netip.Addr
	pool netip.Prefix
}

func (a *addresses) take() (netip.Addr, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.pool.Contains(a.next) {
		return netip.Addr{}, fmt.Errorf("pool %s exhausted", a.pool)
	}
	ip := a.next
	a.next = ip.Next()
	return ip, nil
}
