package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/heraldlb/herald/test/cluster"
)

const (
	benchNamespace = "herald-bench"
	phaseLabel     = "herald-bench/phase"
	phase          = "run"
	canaryName     = "canary"
)

// measurement is one contender's run on one fresh cluster.
type measurement struct {
	label      string
	kind       kind
	round      int
	creates    time.Duration // until every Create call returned
	allIPs     time.Duration // until the watch saw an IP on every Service (alone: = creates)
	cpu        time.Duration // the contender's CPU time from the first Create until settled
	apiCPU     time.Duration // kube-apiserver's, same window
	etcdCPU    time.Duration // etcd's, same window
	mem        memory
	writes     int // Service MODIFIED events seen
	maxWrites  int // most on one Service
	events     int // Events in the namespace after settling
	loadStart  string
	loadEnd    string
	startReady time.Duration         // from exec until the canary had an IP
	requests   cluster.RequestCounts // the API server's, from the first Create until settled
}

func measure(ctx context.Context, o options, c contender, round int) (m measurement, err error) {
	m = measurement{label: c.label, kind: c.kind, round: round, loadStart: loadAvg()}
	cl, err := cluster.Start(cluster.Options{})
	if err != nil {
		return m, err
	}
	defer cl.Stop()
	if err := prepare(ctx, cl, c, o); err != nil {
		return m, err
	}

	var p *proc
	if c.kind != kindAlone {
		t0 := time.Now()
		if p, err = c.start(cl.Kubeconfig, o); err != nil {
			return m, err
		}
		defer func() {
			if serr := p.stop(); serr != nil && err == nil {
				err = serr
			}
			p.cleanup(err != nil)
		}()
		if err := waitCanary(ctx, cl.Client, p); err != nil {
			return m, err
		}
		m.startReady = time.Since(t0)
		if err := saveProfiles(ctx, o, p, round, "ready"); err != nil {
			return m, err
		}
	}

	tr, stopWatch, err := watchServices(ctx, cl.Client, o.services)
	if err != nil {
		return m, err
	}
	defer stopWatch()

	reqs0, err := cl.RequestCounts(ctx)
	if err != nil {
		return m, err
	}
	cpu0 := cpuOf(p)
	api0, etcd0 := serverCPU(cl)
	cpuProfileDone := startCPUProfile(ctx, o, p, round)
	tr.start(time.Now())
	if m.creates, err = createServices(ctx, cl.Client, o.services, o.workers); err != nil {
		return m, err
	}
	m.allIPs = m.creates
	if c.kind != kindAlone {
		logf("%s: all Create calls returned after %.3fs; waiting for ingress IPs", c.label, m.creates.Seconds())
		select {
		case <-tr.done:
		case <-p.exited:
			return m, fmt.Errorf("%s exited: %v", c.label, p.waitErr)
		case <-ctx.Done():
			return m, fmt.Errorf("%d of %d Services have an ingress IP: %w", tr.count(), o.services, ctx.Err())
		}
		m.allIPs = tr.last.Sub(tr.t0)
		// Outside the measured time: let late status writes arrive before
		// counting them and the CPU (quiet for 2s, at most 15s).
		settle(ctx, tr, 2*time.Second, 15*time.Second)
	}
	m.cpu = cpuOf(p) - cpu0
	api1, etcd1 := serverCPU(cl)
	m.apiCPU, m.etcdCPU = api1-api0, etcd1-etcd0
	reqs1, err := cl.RequestCounts(ctx)
	if err != nil {
		return m, err
	}
	m.requests = reqs1.Sub(reqs0)
	m.writes, m.maxWrites = tr.modifications()
	evs, err := cl.Client.CoreV1().Events(benchNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return m, err
	}
	m.events = len(evs.Items)
	if p != nil {
		if m.mem, err = procMem(p.pid()); err != nil {
			return m, err
		}
		if err := checkIPs(tr.services(), o.pool, o.services); err != nil {
			return m, err
		}
		if err := saveProfiles(ctx, o, p, round, "end"); err != nil {
			return m, err
		}
	}
	if err := cpuProfileDone(); err != nil {
		return m, err
	}
	m.loadEnd = loadAvg()
	return m, nil
}

// prepare creates the namespaces, the CRDs and the contender's pool.
func prepare(ctx context.Context, cl *cluster.Cluster, c contender, o options) error {
	root := cluster.RepoRoot()
	if err := cl.InstallCRDs(ctx, filepath.Join(root, "install", "crds")); err != nil {
		return err
	}
	if c.crds != "" {
		if err := cl.InstallCRDs(ctx, c.crds); err != nil {
			return err
		}
	}
	for _, ns := range []string{leaseNamespace, benchNamespace, metallbNamespace} {
		_, err := cl.Client.CoreV1().Namespaces().Create(ctx,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	return c.createPool(ctx, cl, o.pool)
}

// waitCanary creates one Service outside the measured set and waits until
// the contender gave it an IP: then it is up, synced and leading.
func waitCanary(ctx context.Context, client kubernetes.Interface, p *proc) error {
	svcs := client.CoreV1().Services(benchNamespace)
	if _, err := svcs.Create(ctx, newService(canaryName, nil), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("canary: %w", err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		svc, err := svcs.Get(ctx, canaryName, metav1.GetOptions{})
		if err == nil && hasIngressIP(svc) {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the canary Service got no IP within 2 minutes")
		}
		select {
		case <-p.exited:
			return fmt.Errorf("exited before it was ready: %v", p.waitErr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// watchServices starts an informer on the measured Services.
func watchServices(ctx context.Context, client kubernetes.Interface, want int) (*tracker, func(), error) {
	tr := newTracker(want)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(benchNamespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = phaseLabel + "=" + phase }))
	inf := factory.Core().V1().Services().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { tr.observe(obj, nil) },
		UpdateFunc: func(oldObj, newObj any) { tr.observe(newObj, oldObj) },
	}); err != nil {
		return nil, nil, err
	}
	tr.store = inf.GetStore()
	infCtx, stopInf := context.WithCancel(ctx)
	factory.Start(infCtx.Done())
	stop := func() {
		stopInf()
		factory.Shutdown() // waits for the informer, which needs stopInf first
	}
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		stop()
		return nil, nil, errors.New("the Service informer did not sync")
	}
	return tr, stop, nil
}

// serverCPU is the CPU time kube-apiserver and etcd used so far.
func serverCPU(cl *cluster.Cluster) (api, etcd time.Duration) {
	if pid, err := cl.APIServerPID(); err == nil {
		api, _ = cpuTime(pid)
	}
	if pid, err := pidFile(filepath.Join(cl.Dir, "etcd.pid")); err == nil {
		etcd, _ = cpuTime(pid)
	}
	return api, etcd
}

func cpuOf(p *proc) time.Duration {
	if p == nil {
		return 0
	}
	d, err := cpuTime(p.pid())
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench-e2e: %v\n", err)
	}
	return d
}
