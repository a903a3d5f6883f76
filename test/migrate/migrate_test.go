package migrate

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/cmd/herald-dbg/cmd"
	"github.com/heraldlb/herald/cmd/herald-dbg/migrate"
)

// herald runs herald-dbg in-process against the test cluster and returns
// what it printed.
func herald(t *testing.T, args ...string) string {
	t.Helper()
	root := cmd.Root()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs(append([]string{"--kubeconfig", testCluster.Kubeconfig}, args...))
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("herald-dbg %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func sample(name string) string { return filepath.Join("metallb", name) }

var appliedLine = regexp.MustCompile(`(?m)^# applied (\S+): (\w+)$`)

// applied returns what each "# applied" line of the output says.
func applied(out string) map[string]string {
	m := map[string]string{}
	for _, l := range appliedLine.FindAllStringSubmatch(out, -1) {
		m[l[1]] = l[2]
	}
	return m
}

// TestApply: --apply of one of MetalLB's samples creates Herald's objects,
// a second --apply changes nothing, and an object that was there before
// stays.
func TestApply(t *testing.T) {
	ctx := context.Background()
	pools := clientset.CiliumV2alpha1().CiliumLoadBalancerIPPools()
	existing, err := pools.Create(ctx, &v2alpha1.CiliumLoadBalancerIPPool{
		ObjectMeta: metav1.ObjectMeta{Name: "not-from-metallb"},
		Spec:       v2alpha1.CiliumLoadBalancerIPPoolSpec{Blocks: []v2alpha1.CiliumLoadBalancerIPPoolIPBlock{{Cidr: "198.18.0.0/24"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	out := herald(t, "migrate", "metallb", "-f", sample("configsamples/simple_pool_adv_l2.yaml"), "--apply")
	want := map[string]string{"CiliumLoadBalancerIPPool/example": "created", "CiliumL2AnnouncementPolicy/empty": "created"}
	if got := applied(out); !equal(got, want) {
		t.Fatalf("first apply: %v, want %v\n%s", got, want, out)
	}
	pool, err := pools.Get(ctx, "example", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, b := range pool.Spec.Blocks {
		blocks = append(blocks, b.Cidr+b.Start+"-"+b.Stop)
	}
	if got := strings.Join(blocks, " "); got != "192.168.10.0/24- 192.168.9.1-192.168.9.5 fc00:f853:ccd:e799::/124-" {
		t.Errorf("pool blocks %q", got)
	}
	policy, err := clientset.CiliumV2alpha1().CiliumL2AnnouncementPolicies().Get(ctx, "empty", metav1.GetOptions{})
	if err != nil || !policy.Spec.LoadBalancerIPs {
		t.Fatalf("L2 policy: %v %+v", err, policy)
	}

	out = herald(t, "migrate", "metallb", "-f", sample("configsamples/simple_pool_adv_l2.yaml"), "--apply")
	want = map[string]string{"CiliumLoadBalancerIPPool/example": "unchanged", "CiliumL2AnnouncementPolicy/empty": "unchanged"}
	if got := applied(out); !equal(got, want) {
		t.Fatalf("second apply: %v, want %v\n%s", got, want, out)
	}
	again, err := pools.Get(ctx, "example", metav1.GetOptions{})
	if err != nil || again.ResourceVersion != pool.ResourceVersion {
		t.Fatalf("second apply changed the pool: %v, resourceVersion %s -> %s", err, pool.ResourceVersion, again.ResourceVersion)
	}
	still, err := pools.Get(ctx, existing.Name, metav1.GetOptions{})
	if err != nil || still.ResourceVersion != existing.ResourceVersion {
		t.Fatalf("the pool that was there before: %v, resourceVersion %s -> %s", err, existing.ResourceVersion, still.ResourceVersion)
	}
}

// TestApplyConflict: a pool of the same name that someone else wrote with
// other blocks is not overwritten: --apply stops with the conflict.
func TestApplyConflict(t *testing.T) {
	ctx := context.Background()
	pools := clientset.CiliumV2alpha1().CiliumLoadBalancerIPPools()
	theirs, err := pools.Create(ctx, &v2alpha1.CiliumLoadBalancerIPPool{
		ObjectMeta: metav1.ObjectMeta{Name: "taken"},
		Spec:       v2alpha1.CiliumLoadBalancerIPPoolSpec{Blocks: []v2alpha1.CiliumLoadBalancerIPPoolIPBlock{{Cidr: "198.18.1.0/24"}}},
	}, metav1.CreateOptions{FieldManager: "someone-else"})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "taken.yaml")
	const pool = "apiVersion: metallb.io/v1beta1\nkind: IPAddressPool\nmetadata: {name: taken, namespace: metallb-system}\nspec: {addresses: [198.18.2.0/24]}\n"
	if err := os.WriteFile(file, []byte(pool), 0o644); err != nil {
		t.Fatal(err)
	}
	root := cmd.Root()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"--kubeconfig", testCluster.Kubeconfig, "migrate", "metallb", "-f", file, "--apply"})
	err = root.ExecuteContext(ctx)
	if err == nil || !strings.Contains(err.Error(), "conflict") {
		t.Fatalf("apply over another manager's pool: %v, want a conflict\n%s", err, out.String())
	}
	now, err := pools.Get(ctx, "taken", metav1.GetOptions{})
	if err != nil || now.ResourceVersion != theirs.ResourceVersion {
		t.Fatalf("their pool changed: %v, resourceVersion %s -> %s", err, theirs.ResourceVersion, now.ResourceVersion)
	}
}

// TestFromCluster creates MetalLB's samples as MetalLB's CRDs define them
// and checks that listing them from the cluster translates as the files
// do, then that their translation applies.
func TestFromCluster(t *testing.T) {
	files := []string{"configsamples/ipaddresspool_with_selector.yaml", "configsamples/bgppeer_with_bfdprofile.yaml",
		"configsamples/bgpadvertisement_community_alias.yaml", "docs/advanced_l2_configuration-03.yaml",
		// MetalLB v0.16's serviceSelectors and localASN, through its CRDs.
		"docs-v0.16.1/advanced_l2_configuration-06.yaml", "docs-v0.16.1/advanced_bgp_configuration-07.yaml",
		"docs-v0.16.1/advanced_bgp_configuration-15.yaml"}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "metallb-system"}}
	if _, err := testCluster.Client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, f := range files {
		createAll(t, sample(f))
		args = append(args, "-f", sample(f))
	}
	// The objects must be the same; the findings differ where MetalLB's
	// API server filled in defaults (autoAssign, peerPort, aggregationLength).
	fromFiles := objects(herald(t, append([]string{"migrate", "metallb"}, args...)...))
	fromCluster := objects(herald(t, "migrate", "metallb", "-n", "metallb-system"))
	for _, want := range []string{"kind: CiliumBGPPeerConfig", "localASN: 65410", "environment: production", "tier: frontend"} {
		if !strings.Contains(fromFiles, want) {
			t.Fatalf("no %q in the translation of the files:\n%s", want, fromFiles)
		}
	}
	if fromCluster != fromFiles {
		t.Fatalf("from the cluster:\n%s\nfrom the files:\n%s", fromCluster, fromFiles)
	}
	out := herald(t, "migrate", "metallb", "-n", "metallb-system", "--apply")
	for ref, outcome := range applied(out) {
		if outcome != "created" && outcome != "configured" {
			t.Errorf("%s: %s", ref, outcome)
		}
	}
	objs := strings.Count(fromFiles, "\n---\n")
	if len(applied(out)) != objs {
		t.Fatalf("applied %v, want %d objects\n%s", applied(out), objs, out)
	}
	// A second run changes nothing, the BGP objects (BFD, communities,
	// timers) included, and says so object by object.
	again := herald(t, "migrate", "metallb", "-n", "metallb-system", "--apply")
	for ref, outcome := range applied(again) {
		if outcome != "unchanged" {
			t.Errorf("second apply: %s: %s", ref, outcome)
		}
	}
	if len(applied(again)) != objs {
		t.Fatalf("second apply: %v, want %d objects\n%s", applied(again), objs, again)
	}
	pc, err := clientset.CiliumV2alpha1().CiliumBGPPeerConfigs().Get(context.Background(), "peer", metav1.GetOptions{})
	if err != nil || pc.Spec.BFD == nil || *pc.Spec.BFD.ReceiveIntervalMilliseconds != 380 {
		t.Fatalf("peer config with the BFD profile: %v %+v", err, pc)
	}
}

// TestEverySampleApplies applies the translation of every MetalLB sample:
// Herald's CRDs accept all of it.
func TestEverySampleApplies(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("metallb", "*", "*.yaml"))
	if err != nil || len(files) < 40 {
		t.Fatalf("%d samples, %v", len(files), err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var in migrate.Input
		if err := in.Decode(bytes.NewReader(data), f); err != nil {
			t.Fatal(err)
		}
		if _, err := migrate.Apply(context.Background(), dyn, migrate.Translate(in).Objects); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// createAll creates the MetalLB objects of a file in the cluster.
func createAll(t *testing.T, file string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		if u.GroupVersionKind().Group != migrate.Group {
			continue
		}
		gvr := schema.GroupVersionResource{Group: migrate.Group, Version: u.GroupVersionKind().Version, Resource: strings.ToLower(u.GetKind()) + "s"}
		if u.GetKind() == "Community" {
			gvr.Resource = "communities"
		}
		if _, err := dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(context.Background(), &u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
}

// objects is the manifest part of herald-dbg's output, without the
// findings.
func objects(out string) string {
	if i := strings.Index(out, "\n---\n"); i >= 0 {
		return out[i:]
	}
	return ""
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
