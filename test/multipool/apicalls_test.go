package multipool

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/cnitest"
)

// apiRequest is one request of an agent to the API server, as its proxy
// saw it.
type apiRequest struct {
	Method, Resource, Subresource, Name string
	Watch                               bool
}

func (r apiRequest) String() string {
	s := r.Method + " " + r.Resource
	if r.Name != "" {
		s += "/" + r.Name
	}
	if r.Subresource != "" {
		s += "/" + r.Subresource
	}
	if r.Watch {
		s += " (watch)"
	}
	return s
}

// requestLog records every request that passes a proxy.
type requestLog struct {
	mu   sync.Mutex
	reqs []apiRequest
}

func (l *requestLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reqs)
}

func (l *requestLog) since(i int) []apiRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs[i:])
}

// resourceOf splits an API path into resource, object name and
// subresource: /api/v1/namespaces/ns/pods/p → "pods", "p", "";
// /apis/cilium.io/v2/ciliumnodes/n/status → "ciliumnodes", "n", "status".
func resourceOf(path string) (resource, name, sub string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return path, "", ""
	}
	if len(parts) > 2 && parts[0] == "namespaces" {
		parts = parts[2:] // a namespaced object, not a Namespace
	}
	switch len(parts) {
	case 0:
		return path, "", ""
	case 1:
		return parts[0], "", ""
	default:
		return parts[0], parts[1], strings.Join(parts[2:], "/")
	}
}

// behindRecordingProxy restarts n's agent with its API requests going
// through a proxy that records them; at the end of the test it is
// restarted without it.
func behindRecordingProxy(t *testing.T, n *node) *requestLog {
	t.Helper()
	return behindProxy(t, n, func(apiRequest) error { return nil })
}

// behindProxy is behindRecordingProxy whose proxy answers a request with
// 502 Bad Gateway when refuse returns an error for it.
func behindProxy(t *testing.T, n *node, refuse func(apiRequest) error) *requestLog {
	t.Helper()
	log := &requestLog{}
	p, err := testCluster.StartProxy(lan.RootIP().String(), filepath.Join(n.dir, "proxy"), func(resp *http.Response) error {
		res, name, sub := resourceOf(resp.Request.URL.Path)
		r := apiRequest{Method: resp.Request.Method, Resource: res, Subresource: sub, Name: name, Watch: resp.Request.URL.Query().Get("watch") == "true"}
		log.mu.Lock()
		log.reqs = append(log.reqs, r)
		log.mu.Unlock()
		return refuse(r)
	})
	if err != nil {
		t.Fatal(err)
	}
	direct := n.agent.Kubeconfig
	restart := func(kubeconfig string) {
		reconfigureAgent(t, n, func(a *agentproc.Agent) { a.Kubeconfig = kubeconfig })
	}
	restart(p.Kubeconfig)
	t.Cleanup(func() {
		restart(direct)
		p.Close()
	})
	return log
}

// TestAddMakesNoAPICall: on a node whose CIDRs have room, with the Pods
// and their Namespace already in the agent's tables, a burst of ADDs makes
// no request to the API server: no read of a Pod or Namespace, no Event,
// no GET or LIST of anything. What the agent's other jobs do meanwhile is
// allowed and listed: its elections (Leases) and its CiliumNode's demand
// and addresses in use (written by the sync job after the ADDs, not in
// their path). A control shows the proxy counts what an ADD asks for: a
// pod the agent does not know is looked up in the API server.
func TestAddMakesNoAPICall(t *testing.T) {
	logAgentsOnFailure(t)
	// Not the allocator's leader: its pool status writes would follow the
	// node's addresses in use.
	n := nodes[2]
	if leaderOf(t, tables.PodIPAMLease) == n {
		n = nodes[1]
	}
	log := behindRecordingProxy(t, n)
	sawList := false
	for _, r := range log.since(0) {
		sawList = sawList || (r.Method == http.MethodGet && r.Resource == "pods" && r.Name == "" && !r.Watch)
	}
	if !sawList {
		t.Fatalf("the proxy did not see the agent list Pods at start: the agent does not talk through it (saw %v)", log.since(0))
	}

	const burst = 20
	ns := namespace(t, "noapi", nil)
	var pods []*pod
	for i := range burst {
		pods = append(pods, newPod(t, n, ns, fmt.Sprintf("q%d", i), nil))
	}
	defer func() {
		for _, p := range pods {
			p.stop(t)
		}
	}()
	waitFor(t, timeout, func() (bool, string) {
		rows, err := agentproc.Table[*tables.Pod](n.agent, tables.PodsTableName)
		if err != nil {
			return false, err.Error()
		}
		known := map[string]string{}
		for _, r := range rows {
			known[r.Key()] = r.UID
		}
		for _, p := range pods {
			if known[p.Namespace+"/"+p.Name] != p.UID {
				return false, fmt.Sprintf("pod %s/%s not in the agent's pods table yet", p.Namespace, p.Name)
			}
		}
		nss, err := agentproc.Table[*tables.Namespace](n.agent, tables.NamespacesTableName)
		if err != nil {
			return false, err.Error()
		}
		return slices.ContainsFunc(nss, func(x *tables.Namespace) bool { return x.Name == ns }), "namespace " + ns + " not in the agent's table yet"
	})
	waitFor(t, timeout, func() (bool, string) {
		rows, err := agentproc.Table[*tables.NodePodCIDR](n.agent, tables.NodePodCIDRsTableName)
		if err != nil {
			return false, err.Error()
		}
		free := map[tables.Family]uint64{}
		for _, r := range rows {
			if r.Pool == tables.DefaultPodIPPool && !r.Releasing && !r.Gone {
				free[tables.FamilyOf(r.CIDR.Addr())] += r.Usable - uint64(r.InUse)
			}
		}
		return free[tables.IPv4] >= burst && free[tables.IPv6] >= burst, fmt.Sprintf("free addresses of the default pool on %s: %v, want %d of each family", n.name, free, burst)
	})

	start := log.len()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, p := range pods {
		if err := p.add(ctx); err != nil {
			t.Fatalf("ADD of %s: %v", p.Name, err)
		}
	}
	// An ADD's own requests would be answered before it returned: the log
	// holds them by now.
	var background, bad []string
	for _, r := range log.since(start) {
		switch {
		case r.Watch:
		case r.Resource == "pods" || r.Resource == "namespaces" || r.Resource == "events":
			bad = append(bad, r.String())
		case r.Resource == "leases":
			background = append(background, r.String())
		case r.Method != http.MethodGet && r.Resource == "ciliumnodes" && r.Name == n.name:
			background = append(background, r.String())
		default:
			bad = append(bad, r.String())
		}
	}
	t.Logf("%d ADDs on %s; the agent's other jobs meanwhile: %v", burst, n.name, background)
	if len(bad) > 0 {
		t.Fatalf("the agent made API requests during %d ADDs on a node with room: %v", burst, bad)
	}

	// Control: a pod the agent has never heard of (no Pod object) is looked
	// up in the API server once the ADD gave the watch its time.
	start = log.len()
	netns, err := cnitest.NewNetns(fmt.Sprintf("%s%d", podPrefix, podSeq.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = netns.Delete() }()
	ghost := cnitest.Pod{Namespace: ns, Name: "ghost", UID: "no-such-uid", ContainerID: "sandbox-ghost", Netns: netns.Path()}
	if _, err := n.rt.Add(ctx, ghost); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("ADD of a pod that does not exist: %v, want an error saying so", err)
	}
	_ = n.rt.Del(ctx, ghost)
	if !slices.ContainsFunc(log.since(start), func(r apiRequest) bool {
		return r.Method == http.MethodGet && r.Resource == "pods" && r.Name == "ghost"
	}) {
		t.Fatalf("the proxy did not count the ADD's lookup of an unknown pod: %v", log.since(start))
	}
}

// TestAddWaitsForItsNamespace: a pod whose Namespace the agent can read
// neither from its table nor from the API server (the proxy refuses every
// request about Namespaces from the agent's start) does not get an
// address of the default pool in place of the one its namespace's
// annotation names: the ADD fails with a retryable error (CNI 11) naming
// the pod and the namespace. A pod whose own annotation chooses its pool
// does not need its namespace. Once the namespace can be read, the
// runtime's retry gets the namespace's pool.
func TestAddWaitsForItsNamespace(t *testing.T) {
	logAgentsOnFailure(t)
	n := nodes[2]
	if leaderOf(t, tables.PodIPAMLease) == n {
		n = nodes[1]
	}
	var blocked atomic.Bool
	blocked.Store(true)
	behindProxy(t, n, func(r apiRequest) error {
		if r.Resource == "namespaces" && blocked.Load() {
			return errors.New("the test holds Namespaces back")
		}
		return nil
	})
	ns := namespace(t, "nsheld", map[string]string{tables.AnnotationIPPool: "green-pool"})
	p := newPod(t, n, ns, "p", nil)
	addRefused(t, p, ipamv1.CodeTryAgainLater,
		fmt.Sprintf("pod %s/p: its Namespace %q is not known to the agent yet and the API server cannot be asked", ns, ns))

	q := startPod(t, n, ns, "q", map[string]string{tables.AnnotationIPPool: tables.DefaultPodIPPool})
	defer q.stop(t)
	if !inPrefix(q.IPs(), defaultCIDR) || !inPrefix(q.IPs(), defaultCIDR6) {
		t.Fatalf("pod q, annotated with the default pool, got %s", joinAddrs(q.IPs()))
	}

	blocked.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := p.add(ctx); err != nil {
		t.Fatalf("ADD once the namespace can be read: %v", err)
	}
	defer p.stop(t)
	if !inPrefix(p.IPs(), greenCIDR) || !inPrefix(p.IPs(), greenCIDR6) {
		t.Fatalf("pod p in a namespace annotated with green-pool got %s, want addresses of green-pool", joinAddrs(p.IPs()))
	}
}
