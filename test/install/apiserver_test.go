package install

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/install/helm/helmrender"
	"github.com/heraldlb/herald/test/agentproc"
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
				// The BGP secrets namespace (overrides) is the user's to create, as in Cilium.
				if n := obj.GetNamespace(); n != "" && n != ns {
					ensureNamespace(t, c, n)
				}
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

// rbacInstalled remembers the renderings whose RBAC is in the API server,
// by their --set values.
var rbacInstalled sync.Map // string -> error

// installRBAC creates the ServiceAccount, roles and bindings of a rendering
// (the default one, or with these --set values) for real, once.
func installRBAC(t *testing.T, c *cluster.Cluster, dyn dynamic.Interface, set ...string) *rendered {
	t.Helper()
	ensureNamespace(t, c, helmrender.DefaultNamespace)
	r := render(t, helmrender.Options{Set: set})
	key := strings.Join(set, "\n")
	if err, done := rbacInstalled.Load(key); done {
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var err error
	for _, obj := range r.objects {
		switch obj.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
		default:
			continue
		}
		if _, cerr := resourceFor(t, c, dyn, obj).Create(context.Background(), obj, metav1.CreateOptions{}); cerr != nil {
			err = fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), cerr)
			break
		}
	}
	rbacInstalled.Store(key, err)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// multiPoolRelease renders the chart with multi-pool IPAM under another
// name, so that its RBAC lives next to the default rendering's.
var multiPoolRelease = []string{"nameOverride=herald-mp", "ipam.mode=multi-pool"}

// l2Release renders the chart with L2 announcements (members election, the
// default) under another name.
var l2Release = []string{"nameOverride=herald-l2", "l2announcements.enabled=true"}

// bgpRelease renders the chart with the BGP control plane under another
// name; its secrets namespace is the default, kube-system.
var bgpRelease = []string{"nameOverride=herald-bgp", "bgpControlPlane.enabled=true"}

const agentUser = "system:serviceaccount:kube-system:herald"

// TestRBACGrants asks the API server (SubjectAccessReview) what the chart's
// ServiceAccount may do: everything the agent does, and not more; with
// multi-pool IPAM, what that needs on top, and only then.
func TestRBACGrants(t *testing.T) {
	c, dyn := setup(t)
	installRBAC(t, c, dyn)
	installRBAC(t, c, dyn, multiPoolRelease...)
	installRBAC(t, c, dyn, l2Release...)
	installRBAC(t, c, dyn, bgpRelease...)

	type access struct {
		verb, group, resource, subresource, namespace string
	}
	// What every rendering allows and denies.
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
		{"get", "", "secrets", "", "kube-system"}, {"list", "", "configmaps", "", "kube-system"},
		{"create", "", "pods", "", "default"}, {"delete", "", "pods", "", "default"}, {"update", "", "namespaces", "", ""},
		{"update", "cilium.io", "ciliumnodes", "", ""}, {"delete", "cilium.io", "ciliumpodippools", "", ""},
		{"update", "cilium.io", "ciliumpodippools", "", ""},
		// Only with L2 announcements or BGP on.
		{"list", "discovery.k8s.io", "endpointslices", "", ""},
		// Only with the BGP control plane on.
		{"list", "cilium.io", "ciliumbgpclusterconfigs", "", ""}, {"create", "cilium.io", "ciliumbgpnodeconfigs", "", ""},
		{"patch", "cilium.io", "ciliumbgpadvertisements", "status", ""},
	}
	// Multi-pool IPAM: pools, CiliumNodes, this node's Pods and Namespaces.
	multiPool := []access{
		{"get", "cilium.io", "ciliumpodippools", "", ""}, {"list", "cilium.io", "ciliumpodippools", "", ""},
		{"watch", "cilium.io", "ciliumpodippools", "", ""}, {"create", "cilium.io", "ciliumpodippools", "", ""},
		{"patch", "cilium.io", "ciliumpodippools", "", ""}, {"patch", "cilium.io", "ciliumpodippools", "status", ""},
		{"get", "cilium.io", "ciliumnodes", "", ""}, {"list", "cilium.io", "ciliumnodes", "", ""},
		{"watch", "cilium.io", "ciliumnodes", "", ""}, {"create", "cilium.io", "ciliumnodes", "", ""},
		{"patch", "cilium.io", "ciliumnodes", "", ""}, {"delete", "cilium.io", "ciliumnodes", "", ""},
		{"patch", "cilium.io", "ciliumnodes", "status", ""},
		{"get", "", "pods", "", "default"}, {"list", "", "pods", "", ""}, {"watch", "", "pods", "", ""},
		{"get", "", "namespaces", "", ""}, {"list", "", "namespaces", "", ""}, {"watch", "", "namespaces", "", ""},
	}
	check := func(user string, a access, want bool) {
		name := ""
		if res, n, ok := strings.Cut(a.resource, "/"); ok { // "secrets/herald-l2-peers": one object
			a.resource, name = res, n
		}
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   user,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource, Namespace: a.namespace, Name: name,
			},
		}}
		// The authorizer learns of new Roles and bindings through a watch:
		// a grant made a moment ago may not show yet. Ask again for a while
		// before calling an answer wrong.
		var res *authorizationv1.SubjectAccessReview
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			var err error
			res, err = c.Client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), sar, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status.Allowed == want || time.Now().After(deadline) {
				break
			}
		}
		if res.Status.Allowed != want {
			t.Errorf("%s may %s %s.%s/%s in %q: %v, want %v (%s)", user, a.verb, a.resource, a.group, a.subresource, a.namespace,
				res.Status.Allowed, want, res.Status.Reason)
		}
	}
	for user, withMultiPool := range map[string]bool{agentUser: false, agentUser + "-mp": true} {
		for _, a := range allowed {
			check(user, a, true)
		}
		for _, a := range denied {
			check(user, a, false)
		}
		for _, a := range multiPool {
			check(user, a, withMultiPool)
		}
	}
	// L2 announcements with the members election: EndpointSlices, and the
	// peer Secret (read by name, created when missing), no other Secret.
	l2 := agentUser + "-l2"
	for _, a := range []access{
		{"list", "discovery.k8s.io", "endpointslices", "", ""},
		{"get", "", "secrets/herald-l2-peers", "", "kube-system"},
		{"create", "", "secrets", "", "kube-system"},
	} {
		check(l2, a, true)
	}
	for _, a := range []access{
		{"get", "", "secrets/other", "", "kube-system"}, {"list", "", "secrets", "", "kube-system"},
		{"update", "", "secrets/herald-l2-peers", "", "kube-system"}, {"create", "", "secrets", "", "default"},
	} {
		check(l2, a, false)
	}

	// The BGP control plane: its resources, what it writes, and the Secrets
	// of its secrets namespace (kube-system), read only.
	bgp := agentUser + "-bgp"
	for _, res := range []string{"ciliumbgpclusterconfigs", "ciliumbgppeerconfigs", "ciliumbgpadvertisements", "ciliumbgpnodeconfigoverrides", "ciliumbgpnodeconfigs"} {
		for _, verb := range []string{"get", "list", "watch"} {
			check(bgp, access{verb, "cilium.io", res, "", ""}, true)
		}
	}
	for _, a := range []access{
		{"update", "cilium.io", "ciliumbgpclusterconfigs", "status", ""}, {"patch", "cilium.io", "ciliumbgpclusterconfigs", "status", ""},
		{"update", "cilium.io", "ciliumbgppeerconfigs", "status", ""}, {"patch", "cilium.io", "ciliumbgppeerconfigs", "status", ""},
		{"update", "cilium.io", "ciliumbgpadvertisements", "status", ""}, {"patch", "cilium.io", "ciliumbgpadvertisements", "status", ""},
		{"create", "cilium.io", "ciliumbgpnodeconfigs", "", ""}, {"update", "cilium.io", "ciliumbgpnodeconfigs", "", ""},
		{"patch", "cilium.io", "ciliumbgpnodeconfigs", "", ""}, {"delete", "cilium.io", "ciliumbgpnodeconfigs", "", ""},
		{"update", "cilium.io", "ciliumbgpnodeconfigs", "status", ""}, {"patch", "cilium.io", "ciliumbgpnodeconfigs", "status", ""},
		{"get", "", "secrets/bgp-auth-secret", "", "kube-system"}, {"list", "", "secrets", "", "kube-system"},
		{"watch", "", "secrets", "", "kube-system"},
		// EndpointSlices: a Service with no ready endpoint is withdrawn.
		{"get", "discovery.k8s.io", "endpointslices", "", ""}, {"list", "discovery.k8s.io", "endpointslices", "", ""},
		{"watch", "discovery.k8s.io", "endpointslices", "", ""},
	} {
		check(bgp, a, true)
	}
	for _, a := range []access{
		{"create", "cilium.io", "ciliumbgpclusterconfigs", "", ""}, {"update", "cilium.io", "ciliumbgpclusterconfigs", "", ""},
		{"patch", "cilium.io", "ciliumbgppeerconfigs", "", ""}, {"delete", "cilium.io", "ciliumbgpadvertisements", "", ""},
		{"create", "cilium.io", "ciliumbgpnodeconfigoverrides", "", ""}, {"patch", "cilium.io", "ciliumbgpnodeconfigoverrides", "status", ""},
		{"list", "", "secrets", "", "default"}, {"update", "", "secrets/bgp-auth-secret", "", "kube-system"},
		{"create", "", "secrets", "", "kube-system"},
	} {
		check(bgp, a, false)
	}
}

// startChartAgent runs herald-agent as the DaemonSet of the rendering
// would: its ConfigMap as --config-dir, its ServiceAccount as the identity
// (a token from the TokenRequest API), --k8s-namespace the release
// namespace. The ports of the ConfigMap may be taken on this machine: the
// command line wins over the ConfigMap. Stopped at the end of the test; its
// log is in the test's output.
func startChartAgent(t *testing.T, c *cluster.Cluster, r *rendered, serviceAccount, node string, args ...string) *agentproc.Agent {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()

	cm := r.configMap(t)
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
	tok, err := c.Client.CoreV1().ServiceAccounts(helmrender.DefaultNamespace).CreateToken(ctx, serviceAccount,
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

	a := agentproc.New(agentproc.Options{
		Name: node, Dir: filepath.Join(dir, "agent"), AgentBin: agentBin,
		Kubeconfig: kubeconfig, Namespace: helmrender.DefaultNamespace,
		HealthAddr: freeAddr(t), MetricsAddr: freeAddr(t),
		Args: append([]string{"--config-dir=" + configDir}, args...),
	})
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = a.Kill9()
		t.Logf("----- agent log -----\n%s\n----- end of agent log -----", a.Logs(100000))
	})
	return a
}

// waitAgent polls cond until it holds, failing the test if the agent exits.
func waitAgent(t *testing.T, a *agentproc.Agent, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if msg := a.UnexpectedExit(); msg != "" {
			return false, errors.New(msg)
		}
		return cond(ctx)
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// stopAgentLikeKubelet sends SIGTERM and checks the agent exits cleanly and
// gave its Leases up.
func stopAgentLikeKubelet(t *testing.T, c *cluster.Cluster, a *agentproc.Agent, leases ...string) {
	t.Helper()
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Exited(); err != nil {
		t.Errorf("the agent exited with %v on SIGTERM", err)
	}
	for _, name := range leases {
		lease, err := c.Client.CoordinationV1().Leases(helmrender.DefaultNamespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
			t.Errorf("Lease %s still held by %s after SIGTERM", name, *h)
		}
	}
}

// noForbidden fails the test for every log line of the agent about a
// request RBAC refused.
func noForbidden(t *testing.T, a *agentproc.Agent) {
	t.Helper()
	s := bufio.NewScanner(strings.NewReader(a.Logs(1000000)))
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		if l := strings.ToLower(s.Text()); strings.Contains(l, "forbidden") || strings.Contains(l, "cannot ") && strings.Contains(l, "resource") {
			t.Errorf("agent log: %s", s.Text())
		}
	}
}

// leaseHolder waits until the Lease is held by the node's agent.
func waitLeaseHolder(t *testing.T, c *cluster.Cluster, a *agentproc.Agent, name string) {
	t.Helper()
	waitAgent(t, a, "the Lease "+name, func(ctx context.Context) (bool, error) {
		lease, err := c.Client.CoordinationV1().Leases(helmrender.DefaultNamespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		h := lease.Spec.HolderIdentity
		return h != nil && strings.HasPrefix(*h, a.Name+"_"), nil
	})
}

// TestAgentWithChart runs herald-agent as the DaemonSet would, under the
// chart's ServiceAccount. It must become the LB IPAM leader, give a
// LoadBalancer Service an address from a pool, record an Event, report
// ready on /healthz, serve /metrics, and release its Lease on SIGTERM,
// without a single "forbidden". L2 announcements stay off: they would
// attach to this machine's devices.
func TestAgentWithChart(t *testing.T) {
	c, dyn := setup(t)
	installRBAC(t, c, dyn)
	ctx := context.Background()
	a := startChartAgent(t, c, render(t, helmrender.Options{}), "herald", "install-test-node")

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

	waitAgent(t, a, "the Service's address", func(ctx context.Context) (bool, error) {
		s, err := c.Client.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && len(s.Status.LoadBalancer.Ingress) > 0, nil
	})
	waitAgent(t, a, "an IPAllocated Event", func(ctx context.Context) (bool, error) {
		return hasEvent(ctx, c, ns, "web", "IPAllocated")
	})
	waitLeaseHolder(t, c, a, "herald-lb-ipam")
	waitAgent(t, a, "/healthz to answer 200", func(ctx context.Context) (bool, error) {
		return httpGet(ctx, "http://"+a.HealthAddr+"/healthz") == http.StatusOK, nil
	})
	if code := httpGet(ctx, "http://"+a.MetricsAddr+"/metrics"); code != http.StatusOK {
		t.Errorf("/metrics answered %d", code)
	}
	stopAgentLikeKubelet(t, c, a, "herald-lb-ipam")
	noForbidden(t, a)
}

func hasEvent(ctx context.Context, c *cluster.Cluster, ns, object, reason string) (bool, error) {
	evs, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == object && e.Reason == reason {
			return true, nil
		}
	}
	return false, nil
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

// TestAgentWithChartMultiPool runs the agent of a multi-pool rendering
// under its ServiceAccount: it creates the pool the chart auto-creates,
// leads herald-pod-ipam, creates its CiliumNode and gets a CIDR for it,
// hands a Pod an address through its CNI socket, refuses a Pod that asks
// for an unknown pool with an Event on the Pod, writes the pool's status
// and finalizer, and gives its Leases up on SIGTERM, without a single
// "forbidden". The ADDs name no bridge: nothing on this machine changes.
func TestAgentWithChartMultiPool(t *testing.T) {
	c, dyn := setup(t)
	installRBAC(t, c, dyn, multiPoolRelease...)
	ctx := context.Background()
	const node = "install-mp-node"
	if _, err := c.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	r := render(t, helmrender.Options{Set: append(slices.Clone(multiPoolRelease),
		"ipam.operator.autoCreateCiliumPodIPPools.default.ipv4.cidrs={10.200.0.0/16}",
		"ipam.operator.autoCreateCiliumPodIPPools.default.ipv4.maskSize=24")})
	dir := t.TempDir()
	socket := filepath.Join(dir, "ipam.sock")
	a := startChartAgent(t, c, r, "herald-mp", node,
		"--ipam-socket="+socket, "--ipam-state-dir="+filepath.Join(dir, "state"))

	waitLeaseHolder(t, c, a, "herald-pod-ipam")
	cnGVR := schema.GroupVersionResource{Group: "cilium.io", Version: "v2", Resource: "ciliumnodes"}
	waitAgent(t, a, "a CIDR of the pool default in CiliumNode "+node, func(ctx context.Context) (bool, error) {
		cn, err := dyn.Resource(cnGVR).Get(ctx, node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		allocated, _, _ := unstructured.NestedSlice(cn.Object, "spec", "ipam", "pools", "allocated")
		return len(allocated) > 0, nil
	})

	ns := "install-mp"
	ensureNamespace(t, c, ns)
	newPod := func(name string, ann map[string]string) *corev1.Pod {
		p, err := c.Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "none"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	web := newPod("web", nil)
	var got ipamv1.AddResponse
	if err := ipamCall(socket, ipamv1.PathAdd, addRequest(web, "c1"), &got); err != nil {
		t.Fatalf("ADD: %v", err)
	}
	if len(got.IPs) != 1 || !netip.MustParsePrefix("10.200.0.0/16").Contains(netip.MustParsePrefix(got.IPs[0].Address).Addr()) {
		t.Fatalf("ADD gave %+v, want one address of 10.200.0.0/16", got.IPs)
	}

	lost := newPod("lost", map[string]string{"ipam.cilium.io/ip-pool": "no-such-pool"})
	err := ipamCall(socket, ipamv1.PathAdd, addRequest(lost, "c2"), &got)
	if err == nil || !strings.Contains(err.Error(), "no-such-pool") {
		t.Fatalf("ADD into an unknown pool: %v, want an error naming it", err)
	}
	waitAgent(t, a, "an IPPoolUnknown Event on the Pod", func(ctx context.Context) (bool, error) {
		return hasEvent(ctx, c, ns, "lost", "IPPoolUnknown")
	})

	poolGVR := schema.GroupVersionResource{Group: "cilium.io", Version: "v2alpha1", Resource: "ciliumpodippools"}
	waitAgent(t, a, "the pool's finalizer and status", func(ctx context.Context) (bool, error) {
		p, err := dyn.Resource(poolGVR).Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
		return slices.Contains(p.GetFinalizers(), "cilium.io/pod-ip-pool-in-use") && len(conds) > 0, nil
	})
	if err := ipamCall(socket, ipamv1.PathDel, ipamv1.DelRequest{Attachment: ipamv1.Attachment{ContainerID: "c1", IfName: "eth0"}}, nil); err != nil {
		t.Fatalf("DEL: %v", err)
	}

	stopAgentLikeKubelet(t, c, a, "herald-pod-ipam", "herald-lb-ipam")
	noForbidden(t, a)
}

func addRequest(p *corev1.Pod, containerID string) ipamv1.AddRequest {
	return ipamv1.AddRequest{
		Attachment: ipamv1.Attachment{ContainerID: containerID, IfName: "eth0"},
		Network:    "herald",
		Pod:        ipamv1.PodRef{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)},
	}
}

// ipamCall posts a request of the herald-ipam protocol to the agent's
// socket, as the plugin does; a non-200 answer is an error with its message.
func ipamCall(socket, path string, req, resp any) error {
	c := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := c.Post("http://herald-agent"+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK {
		var e ipamv1.Error
		_ = json.NewDecoder(r.Body).Decode(&e)
		return fmt.Errorf("%s: CNI error %d: %s", r.Status, e.Code, e.Msg)
	}
	if resp == nil {
		return nil
	}
	return json.NewDecoder(r.Body).Decode(resp)
}
