package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/test/realcluster"
	"github.com/heraldlb/herald/test/realcluster/images"
)

// lifecycleFixture is what must survive every upgrade and reinstall: pods
// with their addresses and LoadBalancer Services with their IPs, spread
// over the nodes so that every node announces something.
type lifecycleFixture struct {
	ns   string
	pods map[string][]netip.Addr // by UID
	vips map[string]netip.Addr   // by Service name
}

func newLifecycleFixture(t *testing.T) *lifecycleFixture {
	f := &lifecycleFixture{ns: newNamespace(t, "lifecycle", nil), pods: map[string][]netip.Addr{}, vips: map[string]netip.Addr{}}
	for _, p := range deployBackend(t, f.ns, "life", 3, nil) {
		f.pods[string(p.UID)] = podAddrs(p)
	}
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("life-%d", i)
		_, vip := loadBalancer(t, f.ns, name, func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "life"} })
		f.vips[name] = vip
	}
	for _, vip := range f.vips {
		waitCurl(t, vip)
	}
	return f
}

func (f *lifecycleFixture) vipList() []netip.Addr {
	var out []netip.Addr
	for _, v := range f.vips {
		out = append(out, v)
	}
	return out
}

// check fails unless every pod is still there with its addresses and
// every Service has its IP, and curl reaches each one.
func (f *lifecycleFixture) check(t *testing.T, after string) {
	t.Helper()
	ctx := context.Background()
	pods, err := cl.Client.CoreV1().Pods(f.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=life"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != len(f.pods) {
		t.Fatalf("after %s: %d pods, want the %d of before", after, len(pods.Items), len(f.pods))
	}
	for _, p := range pods.Items {
		want, ok := f.pods[string(p.UID)]
		if !ok {
			t.Fatalf("after %s: pod %s is new: a pod was replaced", after, p.Name)
		}
		if !slices.Equal(podAddrs(p), want) {
			t.Fatalf("after %s: pod %s has %v, had %v", after, p.Name, podAddrs(p), want)
		}
	}
	for name, vip := range f.vips {
		svc, err := cl.Client.CoreV1().Services(f.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(svc.Status.LoadBalancer.Ingress) != 1 || svc.Status.LoadBalancer.Ingress[0].IP != vip.String() {
			t.Fatalf("after %s: Service %s has %+v, had %s", after, name, svc.Status.LoadBalancer.Ingress, vip)
		}
		waitCurl(t, vip)
	}
}

// rollWatch follows the agent Pods during a rollout: how many nodes were
// without a Ready agent at once, and in which order nodes got new ones.
type rollWatch struct {
	stopc chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	most  int
	order []string
}

func watchRollout(t *testing.T) *rollWatch {
	w := &rollWatch{stopc: make(chan struct{}), done: make(chan struct{})}
	first := map[string]string{}
	for n, p := range agentPods(t) {
		first[n] = string(p.UID)
	}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stopc:
				return
			case <-time.After(50 * time.Millisecond):
			}
			pods, err := cl.Client.CoreV1().Pods(heraldNS).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=herald"})
			if err != nil {
				continue
			}
			readyOn := map[string]bool{}
			for i := range pods.Items {
				p := &pods.Items[i]
				if p.Spec.NodeName == "" {
					continue // not scheduled yet
				}
				if p.DeletionTimestamp == nil && podReady(p) {
					readyOn[p.Spec.NodeName] = true
				}
				if p.DeletionTimestamp == nil && string(p.UID) != first[p.Spec.NodeName] && !slices.Contains(w.order, p.Spec.NodeName) {
					w.mu.Lock()
					w.order = append(w.order, p.Spec.NodeName)
					w.mu.Unlock()
				}
			}
			w.mu.Lock()
			w.most = max(w.most, len(cl.Nodes)-len(readyOn))
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *rollWatch) stop() (most int, order []string) {
	close(w.stopc)
	<-w.done
	return w.most, w.order
}

// helmUpgrade runs helm upgrade with the release's values plus these and
// waits for the rollout, checking that it went one node at a time.
func helmUpgrade(t *testing.T, f *lifecycleFixture, what string, set ...string) {
	t.Helper()
	watch := watchVIPs(t, f.vipList()...)
	roll := watchRollout(t)
	args := []string{"upgrade", realcluster.HeraldRelease, realcluster.ChartDir(), "--namespace", heraldNS, "--reuse-values"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	ctx := ctxTimeout(t)
	if _, err := cl.RunHelm(ctx, args...); err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitDaemonSet(ctx, heraldNS, heraldDS); err != nil {
		t.Fatal(err)
	}
	most, order := roll.stop()
	reports := watch.stop(t)
	if most > 1 {
		t.Fatalf("%s: %d nodes were without a Ready agent at once (maxUnavailable is 1)", what, most)
	}
	if len(order) != len(cl.Nodes) {
		t.Fatalf("%s: new agents on %v, want every node", what, order)
	}
	t.Logf("%s rolled node by node: %v", what, order)
	for _, r := range reports {
		t.Logf("%s: %s", what, r)
	}
	f.check(t, what)
}

// testUpgrades: helm upgrade with a changed ConfigMap value, then with a
// new image tag, each rolling the DaemonSet one node at a time, while the
// Services keep their IPs and stay answered (by one MAC at a time) and the
// pods keep their addresses. Then helm uninstall, the plain manifests of
// install/kubernetes/herald.yaml applied and deleted, and helm install
// again: nothing is lost.
func testUpgrades(t *testing.T) {
	f := newLifecycleFixture(t)
	var values struct {
		LogLevel string `json:"logLevel"`
		Image    struct {
			Tag string `json:"tag"`
		} `json:"image"`
	}
	out, err := cl.RunHelm(ctxTimeout(t), "get", "values", realcluster.HeraldRelease, "--namespace", heraldNS, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &values); err != nil {
		t.Fatal(err)
	}
	level, tag := "debug", upgradeTag
	if values.LogLevel == level {
		level = "info"
	}
	if values.Image.Tag == tag {
		tag = appVersion(t)
	}
	helmUpgrade(t, f, "helm upgrade --set logLevel="+level, "logLevel="+level)
	ref := images.HeraldRef(tag)
	helmUpgrade(t, f, "helm upgrade --set image.tag="+tag, "image.tag="+tag)
	for n, p := range agentPods(t) {
		if p.Spec.Containers[0].Image != ref {
			t.Fatalf("agent on %s runs %s, want %s", n, p.Spec.Containers[0].Image, ref)
		}
	}

	ctx := ctxTimeout(t)
	if _, err := cl.RunHelm(ctx, "uninstall", realcluster.HeraldRelease, "--namespace", heraldNS, "--wait"); err != nil {
		t.Fatal(err)
	}
	waitNoAgents(t)
	plain := filepath.Join(realcluster.RepoRoot(), "install", "kubernetes", "herald.yaml")
	kubectl(t, "apply", "-f", plain)
	if err := cl.WaitDaemonSet(ctx, heraldNS, heraldDS); err != nil {
		t.Fatal(err)
	}
	testAgentsRunningAndReady(t)
	f.checkIPs(t, "the plain manifests")
	kubectl(t, "delete", "--wait", "-f", plain)
	waitNoAgents(t)

	if err := helmInstall(ctx); err != nil {
		t.Fatal(err)
	}
	f.check(t, "helm uninstall, the plain manifests, and helm install again")
	// New pods get addresses nobody has.
	more := deployBackend(t, f.ns, "after", 3, nil)
	seen := map[netip.Addr]bool{}
	for _, as := range f.pods {
		for _, a := range as {
			seen[a] = true
		}
	}
	for _, p := range more {
		for _, a := range podAddrs(p) {
			if seen[a] {
				t.Fatalf("pod %s got %s, which a pod of before the reinstall has", p.Name, a)
			}
			seen[a] = true
		}
	}
}

// checkIPs is check without curl: while Herald runs without L2
// announcements, nobody answers for the IPs.
func (f *lifecycleFixture) checkIPs(t *testing.T, after string) {
	t.Helper()
	for name, vip := range f.vips {
		svc, err := cl.Client.CoreV1().Services(f.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(svc.Status.LoadBalancer.Ingress) != 1 || svc.Status.LoadBalancer.Ingress[0].IP != vip.String() {
			t.Fatalf("after %s: Service %s has %+v, had %s", after, name, svc.Status.LoadBalancer.Ingress, vip)
		}
	}
}

func waitNoAgents(t *testing.T) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		pods, err := cl.Client.CoreV1().Pods(heraldNS).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=herald"})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d agent Pods left", len(pods.Items))
	})
}

// appVersion is the chart's appVersion, the image tag it deploys by
// default.
func appVersion(t *testing.T) string {
	t.Helper()
	v, err := images.AppVersion(realcluster.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	return v
}
