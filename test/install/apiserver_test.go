package install

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/heraldlb/herald/install/helm/helmrender"
	"github.com/heraldlb/herald/test/cluster"
)

var (
	crdsOnce sync.Once
	crdsErr  error
)

// setup starts the control plane and installs the CRDs from
// install/kubernetes/crds for real, as
// `kubectl apply -f install/kubernetes/crds/` does (once).
func setup(t *testing.T) (*cluster.Cluster, dynamic.Interface) {
	t.Helper()
	c := startCluster(t)
	crdsOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		crdsErr = c.InstallCRDs(ctx, filepath.Join(root, "install", "kubernetes", "crds"))
	})
	if crdsErr != nil {
		t.Fatal(crdsErr)
	}
	dyn, err := dynamic.NewForConfig(c.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	return c, dyn
}

// splitYAML splits a YAML stream into its non-empty documents.
func splitYAML(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range bytes.Split(append([]byte("\n"), b...), []byte("\n---")) {
		if len(bytes.TrimSpace(d)) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

func ensureNamespace(t *testing.T, c *cluster.Cluster, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := c.Client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// resourceFor maps an object to its resource, namespaced or not.
func resourceFor(t *testing.T, c *cluster.Cluster, dyn dynamic.Interface, obj *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(c.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(dc)
	if err != nil {
		t.Fatal(err)
	}
	gvk := obj.GroupVersionKind()
	m, err := restmapper.NewDiscoveryRESTMapper(groups).RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("%s %s: %v", gvk, obj.GetName(), err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if obj.GetNamespace() == "" {
			t.Fatalf("%s %s is namespaced but has no namespace: it would land in the namespace of kubectl's context", gvk.Kind, obj.GetName())
		}
		return dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
	}
	if obj.GetNamespace() != "" {
		t.Errorf("%s %s is cluster-scoped but has namespace %s", gvk.Kind, obj.GetName(), obj.GetNamespace())
	}
	return dyn.Resource(m.Resource)
}

// TestServerSideDryRun creates every rendered object with dryRun=All and
// strict field validation: the API server validates and admits them as it
// would on install, and rejects unknown or duplicate fields.
func TestServerSideDryRun(t *testing.T) {
	c, dyn := setup(t)
	for name, o := range map[string]helmrender.Options{
		"defaults":  {},
		"overrides": overrides,
		// What Documentation/install.md suggests for hosts without a bpffs.
		// The test API server runs without --allow-privileged, so the one
		// error allowed is the privileged container being refused.
		"bidirectional": {Set: []string{"bpf.mountPropagation=Bidirectional", "securityContext.privileged=true"}},
		// ... and for hosts that have one, on kernels 5.8 and newer.
		"without SYS_ADMIN": {Set: []string{"securityContext.capabilities.add={NET_ADMIN,NET_RAW,BPF,PERFMON}"}},
		// The CNI plugin's init container and host directories.
		"cni": {Set: []string{"cni.install=true"}},
	} {
		t.Run(name, func(t *testing.T) {
			r := render(t, o)
			ns := o.Namespace
			if ns == "" {
				ns = helmrender.DefaultNamespace
			}
			ensureNamespace(t, c, ns)
			if len(r.objects) == 0 {
				t.Fatal("nothing rendered")
			}
			for _, obj := range r.objects {
				ri := resourceFor(t, c, dyn, obj)
				_, err := ri.Create(context.Background(), obj, metav1.CreateOptions{
					DryRun:          []string{metav1.DryRunAll},
					FieldValidation: metav1.FieldValidationStrict,
				})
				if err != nil && name == "bidirectional" && obj.GetKind() == "DaemonSet" &&
					strings.HasSuffix(err.Error(), "securityContext.privileged: Forbidden: disallowed by cluster policy") {
					t.Logf("dry-run create %s %s: refused only for the privileged container (no --allow-privileged here): %v", obj.GetKind(), obj.GetName(), err)
				} else if err != nil {
					t.Errorf("dry-run create %s %s: %v", obj.GetKind(), obj.GetName(), err)
				} else {
					t.Logf("dry-run create %s %s/%s: ok", obj.GetKind(), obj.GetNamespace(), obj.GetName())
				}
			}
		})
	}
}

// TestBidirectionalNeedsPrivileged: the API server refuses bidirectional
// mount propagation without a privileged container, as the documentation
// and values.yaml say.
func TestBidirectionalNeedsPrivileged(t *testing.T) {
	c, dyn := setup(t)
	ensureNamespace(t, c, helmrender.DefaultNamespace)
	r := render(t, helmrender.Options{Set: []string{"bpf.mountPropagation=Bidirectional"}})
	for _, obj := range r.objects {
		if obj.GetKind() != "DaemonSet" {
			continue
		}
		_, err := resourceFor(t, c, dyn, obj).Create(context.Background(), obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || !strings.Contains(err.Error(), "Bidirectional") {
			t.Errorf("dry-run create with Bidirectional and not privileged: %v, want an error about Bidirectional", err)
		}
	}
}

var (
	rbacOnce sync.Once
	rbacErr  error
)

// installRBAC creates the ServiceAccount, roles and bindings of the default
// rendering for real (once).
func installRBAC(t *testing.T, c *cluster.Cluster, dyn dynamic.Interface) {
	t.Helper()
	ensureNamespace(t, c, helmrender.DefaultNamespace)
	r := render(t, helmrender.Options{})
	rbacOnce.Do(func() {
		for _, obj := range r.objects {
			switch obj.GetKind() {
			case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			default:
				continue
			}
			if _, err := resourceFor(t, c, dyn, obj).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
				rbacErr = fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
				return
			}
		}
	})
	if rbacErr != nil {
		t.Fatal(rbacErr)
	}
}

const agentUser = "system:serviceaccount:kube-system:herald"

// TestRBACGrants asks the API server (SubjectAccessReview) what the chart's
// ServiceAccount may do: everything the agent does, and not more.
func TestRBACGrants(t *testing.T) {
	c, dyn := setup(t)
	installRBAC(t, c, dyn)

	type access struct {
		verb, group, resource, subresource, namespace string
	}
	allowed := []access{
		{"get", "", "services", "", ""}, {"list", "", "services", "", ""}, {"watch", "", "services", "", ""},
		{"patch", "", "services", "status", "default"},
		{"get", "cilium.io", "ciliumloadbalancerippools", "", ""}, {"list", "cilium.io", "ciliumloadbalancerippools", "", ""},
		{"watch", "cilium.io", "ciliumloadbalancerippools", "", ""}, {"patch", "cilium.io", "ciliumloadbalancerippools", "status", ""},
		{"get", "cilium.io", "ciliuml2announcementpolicies", "", ""}, {"list", "cilium.io", "ciliuml2announcementpolicies", "", ""},
		{"watch", "cilium.io", "ciliuml2announcementpolicies", "", ""}, {"patch", "cilium.io", "ciliuml2announcementpolicies", "status", ""},
		{"get", "", "nodes", "", ""}, {"list", "", "nodes", "", ""}, {"watch", "", "nodes", "", ""},
		{"get", "coordination.k8s.io", "leases", "", "kube-system"}, {"list", "coordination.k8s.io", "leases", "", "kube-system"},
		{"create", "coordination.k8s.io", "leases", "", "kube-system"}, {"update", "coordination.k8s.io", "leases", "", "kube-system"},
		{"delete", "coordination.k8s.io", "leases", "", "kube-system"}, {"watch", "coordination.k8s.io", "leases", "", "kube-system"},
		{"create", "", "events", "", "default"}, {"patch", "", "events", "", "default"}, {"update", "", "events", "", "some-namespace"},
	}
	denied := []access{
		{"create", "", "services", "", "default"}, {"update", "", "services", "", "default"}, {"delete", "", "services", "", "default"},
		{"update", "", "services", "status", "default"},
		{"create", "cilium.io", "ciliumloadbalancerippools", "", ""}, {"delete", "cilium.io", "ciliumloadbalancerippools", "", ""},
		{"update", "cilium.io", "ciliumloadbalancerippools", "", ""}, {"patch", "cilium.io", "ciliuml2announcementpolicies", "", ""},
		{"patch", "", "nodes", "", ""}, {"update", "", "nodes", "status", ""},
		{"get", "coordination.k8s.io", "leases", "", "default"}, {"create", "coordination.k8s.io", "leases", "", "kube-node-lease"},
		{"create", "events.k8s.io", "events", "", "default"},
		{"get", "", "secrets", "", "kube-system"}, {"list", "", "configmaps", "", "kube-system"}, {"list", "", "pods", "", ""},
	}
	check := func(a access, want bool) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   agentUser,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource, Namespace: a.namespace,
			},
		}}
		res, err := c.Client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status.Allowed != want {
			t.Errorf("%s may %s %s.%s/%s in %q: %v, want %v (%s)", agentUser, a.verb, a.resource, a.group, a.subresource, a.namespace,
				res.Status.Allowed, want, res.Status.Reason)
		}
	}
	for _, a := range allowed {
		check(a, true)
	}
	for _, a := range denied {
		check(a, false)
	}
}

// TestAgentWithChart runs herald-agent as the DaemonSet would: the rendered
// ConfigMap as --config-dir, the chart's ServiceAccount as its identity
// (a token from the TokenRequest API), --k8s-namespace the release
// namespace. It must become the LB IPAM leader, give a LoadBalancer Service
// an address from a pool, record an Event, report ready on /healthz, serve
// /metrics, and release its Lease on SIGTERM, without a single "forbidden".
// L2 announcements stay off: they would attach to this machine's devices.
func TestAgentWithChart(t *testing.T) {
	c, dyn := setup(t)
	installRBAC(t, c, dyn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()

	// The ConfigMap, mounted.
	cm := render(t, helmrender.Options{}).configMap(t)
	configDir := filepath.Join(dir, "config")
	if err := os.Mkdir(configDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for k, v := range cm.Data {
		if err := os.WriteFile(filepath.Join(configDir, k), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The ServiceAccount's credentials, as the kubelet would project them.
	tok, err := c.Client.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, "herald",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range kc.AuthInfos {
		ai.Token = tok.Status.Token
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}

	// The ports of the ConfigMap may be taken on this machine: the command
	// line wins over the ConfigMap.
	healthAddr, metricsAddr := freeAddr(t), freeAddr(t)
	const node = "install-test-node"
	args := []string{
		"--config-dir=" + configDir,
		"--k8s-namespace=kube-system",
		"--kubeconfig=" + kubeconfig,
		"--node-name=" + node,
		"--dbg-socket=" + filepath.Join(dir, "herald.sock"),
		"--health-serve-addr=" + healthAddr,
		"--prometheus-serve-addr=" + metricsAddr,
	}
	var log syncBuffer
	cmd := exec.Command(agentBin, args...)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	defer func() {
		if !stopped {
			_ = cmd.Process.Kill()
			<-exited
		}
		t.Logf("----- agent log -----\n%s----- end of agent log -----", log.String())
	}()

	// A pool and a LoadBalancer Service.
	ns := "install-e2e"
	ensureNamespace(t, c, ns)
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cilium.io/v2alpha1",
		"kind":       "CiliumLoadBalancerIPPool",
		"metadata":   map[string]any{"name": "install-e2e"},
		"spec":       map[string]any{"blocks": []any{map[string]any{"cidr": "10.123.0.0/30"}}},
	}}
	poolGVR := schema.GroupVersionResource{Group: "cilium.io", Version: "v2alpha1", Resource: "ciliumloadbalancerippools"}
	if _, err := dyn.Resource(poolGVR).Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if _, err := c.Client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	waitFor := func(what string, cond func(ctx context.Context) (bool, error)) {
		t.Helper()
		err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			select {
			case err := <-exited:
				stopped = true
				return false, fmt.Errorf("the agent exited: %v", err)
			default:
			}
			return cond(ctx)
		})
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	waitFor("the Service's address", func(ctx context.Context) (bool, error) {
		s, err := c.Client.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && len(s.Status.LoadBalancer.Ingress) > 0, nil
	})
	waitFor("an IPAllocated Event", func(ctx context.Context) (bool, error) {
		evs, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == "web" && e.Reason == "IPAllocated" {
				return true, nil
			}
		}
		return false, nil
	})
	lease, err := c.Client.CoordinationV1().Leases("kube-system").Get(ctx, "herald-lb-ipam", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("LB IPAM Lease: %v", err)
	}
	if h := lease.Spec.HolderIdentity; h == nil || !strings.HasPrefix(*h, node) {
		t.Errorf("LB IPAM Lease held by %v, want %s", lease.Spec.HolderIdentity, node)
	}
	waitFor("/healthz to answer 200", func(ctx context.Context) (bool, error) {
		return httpGet(ctx, "http://"+healthAddr+"/healthz") == http.StatusOK, nil
	})
	if code := httpGet(ctx, "http://"+metricsAddr+"/metrics"); code != http.StatusOK {
		t.Errorf("/metrics answered %d", code)
	}

	// SIGTERM, as the kubelet stops the Pod: the agent gives its Lease up.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Errorf("the agent exited with %v on SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not exit within 30s (terminationGracePeriodSeconds) of SIGTERM")
	}
	lease, err = c.Client.CoordinationV1().Leases("kube-system").Get(ctx, "herald-lb-ipam", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("LB IPAM Lease still held by %s after SIGTERM", *h)
	}

	s := bufio.NewScanner(strings.NewReader(log.String()))
	for s.Scan() {
		if l := strings.ToLower(s.Text()); strings.Contains(l, "forbidden") || strings.Contains(l, "cannot ") && strings.Contains(l, "resource") {
			t.Errorf("agent log: %s", s.Text())
		}
	}
}

// freeAddr returns 127.0.0.1:<a port free right now>.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func httpGet(ctx context.Context, url string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// syncBuffer is a bytes.Buffer safe for the agent's two output streams.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
