package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/cmd/herald-dbg/ipamcheck"
	"github.com/heraldlb/herald/tables"
)

// The pod pools of the suite: "default" comes from the chart's
// autoCreateCiliumPodIPPools (herald-values.yaml); "green" the tests
// create.
var (
	defaultPool4 = netip.MustParsePrefix("198.18.24.0/21")
	defaultPool6 = netip.MustParsePrefix("fd00:18:24::/104")
	greenPool4   = netip.MustParsePrefix("198.18.32.0/22")
	greenPool6   = netip.MustParsePrefix("fd00:18:32::/104")
)

const greenPool = `
apiVersion: cilium.io/v2alpha1
kind: CiliumPodIPPool
metadata: {name: green}
spec:
  ipv4: {cidrs: [198.18.32.0/22], maskSize: 26}
  ipv6: {cidrs: ["fd00:18:32::/104"], maskSize: 120}
`

// inPools reports whether a pod has one address of each family, in these
// prefixes.
func inPools(p corev1.Pod, v4, v6 netip.Prefix) bool {
	var four, six bool
	for _, a := range podAddrs(p) {
		four = four || (a.Is4() && v4.Contains(a))
		six = six || (a.Is6() && v6.Contains(a))
	}
	return four && six && len(p.Status.PodIPs) == 2
}

// fetchFrom fetches http://addr:8080/ from inside a backend pod (kubectl
// exec, httpecho -get) and returns the answer.
func fetchFrom(ctx context.Context, p corev1.Pod, addr netip.Addr) (string, error) {
	url := "http://" + net.JoinHostPort(addr.String(), strconv.Itoa(backendPort)) + "/"
	out, err := cl.RunKubectl(ctx, "-n", p.Namespace, "exec", p.Name, "--", "httpecho", "-get", url, "-timeout", "3s")
	return strings.TrimSpace(string(out)), err
}

// testPodsFromPools: pods the kubelets create get one address of each
// family through herald-ipam, from the pool their namespace's (or their
// own) annotation names, or from "default"; pods on different nodes reach
// each other over both families; a deleted pod's addresses leave the
// node's CiliumNode.
func testPodsFromPools(t *testing.T) {
	applyYAML(t, greenPool)
	plainNS := newNamespace(t, "plain", nil)
	greenNS := newNamespace(t, "green", map[string]string{tables.AnnotationIPPool: "green"})
	plain := deployBackend(t, plainNS, "plain", 3, nil)
	green := deployBackend(t, greenNS, "green", 3, nil)
	// The pod's own annotation beats its namespace's.
	back := deployBackend(t, greenNS, "back", 1, map[string]string{tables.AnnotationIPPool: "default"})
	for _, p := range plain {
		if !inPools(p, defaultPool4, defaultPool6) {
			t.Fatalf("pod %s got %v, want one address of %s and one of %s", p.Name, p.Status.PodIPs, defaultPool4, defaultPool6)
		}
	}
	for _, p := range green {
		if !inPools(p, greenPool4, greenPool6) {
			t.Fatalf("pod %s (namespace annotated green) got %v, want addresses of the pool green", p.Name, p.Status.PodIPs)
		}
	}
	if !inPools(back[0], defaultPool4, defaultPool6) {
		t.Fatalf("pod %s (annotated default in a namespace annotated green) got %v", back[0].Name, back[0].Status.PodIPs)
	}

	// Across nodes, both families, both pools.
	ctx := context.Background()
	all := append(append([]corev1.Pod{}, plain...), green...)
	pairs := 0
	for _, from := range all {
		for _, to := range all {
			if from.Spec.NodeName == to.Spec.NodeName {
				continue
			}
			for _, addr := range podAddrs(to) {
				expectReaches(t, from, to, addr)
				pairs++
			}
		}
	}
	if pairs == 0 {
		t.Fatal("all pods on one node: nothing crossed nodes")
	}
	t.Logf("%d fetches between pods on different nodes answered", pairs)

	// A pod the kubelet deletes gives its addresses back.
	gone := plain[0]
	if err := cl.Client.CoreV1().Pods(plainNS).Delete(ctx, gone.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, timeout, func() (bool, string) {
		used, err := usedOn(gone.Spec.NodeName)
		if err != nil {
			return false, err.Error()
		}
		for _, a := range podAddrs(gone) {
			if owner, ok := used[a.String()]; ok {
				return false, fmt.Sprintf("%s still lists %s (%s) in use after pod %s was deleted", gone.Spec.NodeName, a, owner, gone.Name)
			}
		}
		return true, ""
	})
}

// expectReaches waits until pod from fetches an answer of pod to at addr
// (a new pod's IPv6 address answers once duplicate address detection in
// its namespace is done).
func expectReaches(t testing.TB, from, to corev1.Pod, addr netip.Addr) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		answer, err := fetchFrom(context.Background(), from, addr)
		return err == nil && answeredBy(answer) == to.Name,
			fmt.Sprintf("from %s (%s) to %s at %s (%s): %q, %v", from.Name, from.Spec.NodeName, to.Name, addr, to.Spec.NodeName, answer, err)
	})
}

// usedOn returns a node's CiliumNode status.ipam.used as owner by address.
func usedOn(node string) (map[string]string, error) {
	var cn struct {
		Status struct {
			IPAM struct {
				Used map[string]struct {
					Owner string `json:"owner"`
				} `json:"used"`
			} `json:"ipam"`
		} `json:"status"`
	}
	out, err := cl.RunKubectl(context.Background(), "get", "ciliumnode", node, "-o", "json")
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(out, &cn); err != nil {
		return nil, err
	}
	m := map[string]string{}
	for ip, u := range cn.Status.IPAM.Used {
		m[ip] = u.Owner
	}
	return m, nil
}

// ipamCheck runs `herald-dbg ipam check -o json` in the agent Pod of a
// node (kubectl exec) and returns its report.
func ipamCheck(t testing.TB, node string) ipamcheck.Report {
	t.Helper()
	p, ok := agentPods(t)[node]
	if !ok {
		t.Fatalf("no agent Pod on %s", node)
	}
	out, err := cl.RunKubectl(context.Background(), "-n", heraldNS, "exec", p.Name, "-c", "agent", "--", "herald-dbg", "ipam", "check", "-o", "json")
	var rep ipamcheck.Report
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		t.Fatalf("herald-dbg ipam check on %s: %v (%v): %s", node, jerr, err, out)
	}
	return rep
}
