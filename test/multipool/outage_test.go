package multipool

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
)

// TestAPIServerOutage: the API server is killed, and while it is down the
// nodes go on as multi-pool.md says: every node's STATUS passes (a node,
// once ready, stays ready while its agent runs), an ADD of a pod its agent
// knows gets an address of the node's CIDRs (an ADD makes no API call
// when the node has room), and a DEL releases one. Nothing the nodes hold
// changes across the outage: once the agents are back in sync, every
// CiliumNode lists the CIDRs it did before, and the pods' allocations are
// the ones the node handed out.
func TestAPIServerOutage(t *testing.T) {
	logAgentsOnFailure(t)
	ns := namespace(t, "outage", nil)
	n := nodes[1]
	kept := startPod(t, n, ns, "kept", nil)
	defer kept.stop(t)
	gone := startPod(t, n, ns, "gone", nil)
	defer gone.stop(t)
	late := newPod(t, n, ns, "late", nil)
	defer late.stop(t)
	waitPodKnown(t, n, late)
	before := map[string]map[string][]string{}
	marks := map[string]agentproc.LogMark{}
	for _, m := range nodes {
		before[m.name] = allocatedCIDRs(t, m.name)
		marks[m.name] = m.agent.Mark()
	}

	argv, err := testCluster.KillAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	restarted := false
	restart := func() {
		if !restarted {
			restarted = true
			if err := testCluster.StartAPIServer(argv); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(restart)
	for _, m := range nodes {
		waitLogged(t, m, marks[m.name], "API server unreachable; probing /readyz until it is ready")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, m := range nodes {
		if err := m.rt.Status(ctx); err != nil {
			t.Errorf("%s: STATUS without the API server: %v", m.name, err)
		}
	}
	if err := late.add(ctx); err != nil {
		t.Fatalf("ADD of %s/%s without the API server: %v", ns, late.Name, err)
	}
	if !inCIDRsOf(late.IPs(), before[n.name]) {
		t.Errorf("%s/%s got %s, outside %s's CIDRs %v", ns, late.Name, joinAddrs(late.IPs()), n.name, before[n.name])
	}
	if err := n.rt.Del(ctx, gone.Pod); err != nil {
		t.Errorf("DEL of %s/%s without the API server: %v", ns, gone.Name, err)
	}
	restart()

	for _, m := range nodes {
		waitLogged(t, m, marks[m.name], `msg="In sync with the API server again" module=k8s-watch kind=`+tables.CiliumNodesTableName)
		if err := m.rt.Status(ctx); err != nil {
			t.Errorf("%s: STATUS after the outage: %v", m.name, err)
		}
		if after := allocatedCIDRs(t, m.name); !reflect.DeepEqual(after, before[m.name]) {
			t.Errorf("CiliumNode %s: CIDRs %v before the outage, %v after", m.name, before[m.name], after)
		}
	}
	want := map[string]string{kept.Name: sortedAddrs(kept.IPs()), late.Name: sortedAddrs(late.IPs())}
	if got := podAddrs(t, n, ns); !maps.Equal(got, want) {
		t.Errorf("%s's allocations of namespace %s after the outage: %v, want %v", n.name, ns, got, want)
	}
}

// waitPodKnown waits until the pod is in the node's pods table.
func waitPodKnown(t *testing.T, n *node, p *pod) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		rows, err := agentproc.Table[*tables.Pod](n.agent, tables.PodsTableName)
		if err != nil {
			return false, err.Error()
		}
		return slices.ContainsFunc(rows, func(r *tables.Pod) bool { return r.Key() == p.Namespace+"/"+p.Name && r.UID == p.UID }),
			fmt.Sprintf("pod %s/%s not in %s's pods table yet", p.Namespace, p.Name, n.name)
	})
}

// waitLogged waits until the node's agent logged a line containing s since
// the mark.
func waitLogged(t *testing.T, n *node, since agentproc.LogMark, s string) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		logs := n.agent.LogsSince(since)
		return strings.Contains(logs, s), fmt.Sprintf("%s has not logged %q:\n%s", n.name, s, agentproc.Tail(logs, 20))
	})
}

// inCIDRsOf reports whether every address lies in one of the CIDRs.
func inCIDRsOf(ips []netip.Addr, byPool map[string][]string) bool {
	for _, a := range ips {
		in := false
		for _, cidrs := range byPool {
			for _, c := range cidrs {
				in = in || netip.MustParsePrefix(c).Contains(a)
			}
		}
		if !in {
			return false
		}
	}
	return len(ips) > 0
}

// podAddrs is the node's allocations of the namespace: pod name to its
// addresses, as sortedAddrs writes them.
func podAddrs(t *testing.T, n *node, ns string) map[string]string {
	t.Helper()
	rows, err := n.allocations()
	if err != nil {
		t.Fatal(err)
	}
	byPod := map[string][]netip.Addr{}
	for _, r := range rows {
		if r.PodNS == ns {
			byPod[r.PodName] = append(byPod[r.PodName], r.IP)
		}
	}
	out := map[string]string{}
	for name, ips := range byPod {
		out[name] = sortedAddrs(ips)
	}
	return out
}

// sortedAddrs joins the addresses in order.
func sortedAddrs(ips []netip.Addr) string {
	s := slices.Clone(ips)
	slices.SortFunc(s, func(a, b netip.Addr) int { return a.Compare(b) })
	return joinAddrs(s)
}
