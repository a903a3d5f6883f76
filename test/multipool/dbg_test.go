package multipool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	v2 "github.com/heraldlb/herald/api/cilium.io/v2"
	"github.com/heraldlb/herald/cmd/herald-dbg/ipamcheck"
	"github.com/heraldlb/herald/tables"
)

// dbgRun is one run of herald-dbg.
type dbgRun struct {
	args           []string
	stdout, stderr string
	code           int
}

func (r dbgRun) String() string {
	return fmt.Sprintf("herald-dbg %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// dbg runs the built herald-dbg as on node n: against its agent's debug
// socket, with the test cluster's kubeconfig. The exit status is part of
// the outcome.
func dbg(t *testing.T, n *node, args ...string) dbgRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	full := append([]string{"--socket", n.agent.Socket(), "--kubeconfig", testCluster.Kubeconfig}, args...)
	cmd := exec.CommandContext(ctx, n.agent.DbgBin, full...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	r := dbgRun{args: args}
	err := cmd.Run()
	r.stdout, r.stderr = out.String(), errOut.String()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	default:
		t.Fatalf("running herald-dbg %v on %s: %v", args, n.name, err)
	}
	return r
}

// ipamCheck runs `ipam check -o json` on node n.
func ipamCheck(t *testing.T, n *node) (ipamcheck.Report, dbgRun) {
	t.Helper()
	r := dbg(t, n, "ipam", "check", "-o", "json")
	var rep ipamcheck.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("decoding the report: %v\n%s", err, r)
	}
	return rep, r
}

// runCommand runs the command a finding gives, on node n.
func runCommand(t *testing.T, n *node, command string) dbgRun {
	t.Helper()
	fs := strings.Fields(command)
	if len(fs) < 2 || fs[0] != "herald-dbg" {
		t.Fatalf("the finding's command %q is not a herald-dbg command", command)
	}
	return dbg(t, n, fs[1:]...)
}

func findingsOf(rep ipamcheck.Report, kind ipamcheck.Kind) []ipamcheck.Finding {
	var out []ipamcheck.Finding
	for _, f := range rep.Findings {
		if f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

// mentions reports whether any finding names one of the addresses or the pod.
func mentions(rep ipamcheck.Report, pod string, ips ...netip.Addr) bool {
	for _, f := range rep.Findings {
		if f.Pod == pod {
			return true
		}
		for _, a := range ips {
			if slices.Contains(f.IPs, a.String()) {
				return true
			}
		}
	}
	return false
}

// TestDbgIPAMLeak: a Pod object deleted while its sandbox's DEL never came
// leaves its addresses allocated; `herald-dbg ipam check` fails naming them
// and the pod, `ipam release` refuses to free a live pod's address, and
// frees the leaked ones through the agent (which then no longer holds
// them); check is clean afterwards.
//
// The agent's own garbage collection would release the leak too, but only
// once the allocation is a minute old and its Pod has been missing for
// another minute (nodeipam's gcGrace, twice): the few commands below run
// long before. Should the GC win anyway, release fails saying the address
// is not allocated, and the test with it.
func TestDbgIPAMLeak(t *testing.T) {
	logAgentsOnFailure(t)
	n := nodes[0]
	ns := namespace(t, "dbgleak", nil)
	keep := startPod(t, n, ns, "keep", nil)
	defer keep.stop(t)

	leak := startPod(t, n, ns, "leak", nil)
	t.Cleanup(func() {
		// The runtime's DEL for the sandbox left behind: the bridge
		// plugin removes its veth; the agent no longer knows the
		// attachment, which is fine for a DEL.
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := n.rt.Del(ctx, leak.Pod); err != nil {
			t.Errorf("cleaning up the leaked sandbox: %v", err)
		}
		_ = leak.netns.Delete()
	})
	ctx := context.Background()
	zero := int64(0)
	if err := kube.CoreV1().Pods(ns).Delete(ctx, "leak", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, timeout, func() (bool, string) {
		_, err := kube.CoreV1().Pods(ns).Get(ctx, "leak", metav1.GetOptions{})
		return err != nil, fmt.Sprintf("pod %s/leak still exists (%v)", ns, err)
	})
	leakIPs := leak.IPs()
	key := ns + "/leak"

	rep, run := ipamCheck(t, n)
	if run.code == 0 || rep.Errors == 0 {
		t.Fatalf("check passed with a leak:\n%s", run)
	}
	leaks := findingsOf(rep, ipamcheck.KindLeaked)
	var found *ipamcheck.Finding
	for i, f := range leaks {
		if f.Pod == key {
			found = &leaks[i]
		}
	}
	if found == nil {
		t.Fatalf("no leaked-address finding for pod %s:\n%s", key, run)
	}
	var want []string
	for _, a := range leakIPs {
		want = append(want, a.String())
	}
	slices.Sort(want)
	got := slices.Sorted(slices.Values(found.IPs))
	if !slices.Equal(got, want) || found.PodUID != leak.UID || found.Severity != ipamcheck.Error {
		t.Fatalf("leak finding %+v, want addresses %v of pod uid %s, an error", *found, want, leak.UID)
	}
	if mentions(rep, ns+"/keep", keep.IPs()...) {
		t.Fatalf("check reports the live pod %s/keep:\n%s", ns, run)
	}
	// The readable form names the same.
	text := dbg(t, n, "ipam", "check")
	if text.code == 0 || !strings.Contains(text.stdout, "leaked-address") || !strings.Contains(text.stdout, key) || !strings.Contains(text.stdout, leakIPs[0].String()) {
		t.Fatalf("check's table does not fail naming %s and %s:\n%s", key, leakIPs[0], text)
	}
	t.Logf("%s", text)

	// A live pod's address is not released without --force.
	refused := dbg(t, n, "ipam", "release", keep.ipOf(tables.IPv4).String())
	if refused.code == 0 || !strings.Contains(refused.stderr, "still exists") {
		t.Fatalf("releasing the address of a live pod was not refused:\n%s", refused)
	}

	rel := runCommand(t, n, found.Command)
	if rel.code != 0 || !strings.Contains(rel.stdout, "Released") {
		t.Fatalf("%s\n(the agent's garbage collection may have released the leak first if this run took minutes)", rel)
	}
	t.Logf("%s", rel)
	rows, err := n.allocations()
	if err != nil {
		t.Fatal(err)
	}
	var have []netip.Addr
	for _, r := range rows {
		have = append(have, r.IP)
	}
	for _, a := range leakIPs {
		if slices.Contains(have, a) {
			t.Errorf("%s is still allocated on %s after release", a, n.name)
		}
	}
	for _, a := range keep.IPs() {
		if !slices.Contains(have, a) {
			t.Errorf("%s of the live pod is no longer allocated after releasing another pod's", a)
		}
	}

	rep, run = ipamCheck(t, n)
	if run.code != 0 || rep.Errors != 0 || mentions(rep, key, leakIPs...) {
		t.Fatalf("check after release:\n%s", run)
	}
}

// TestDbgIPAMCIDROnTwoNodes: a CIDR node1 uses, written by hand into
// node2's CiliumNode as well. check on node1 fails naming the CIDR and
// both nodes (and the allocator reports the same on the CiliumNodes);
// release refuses to take it from node1, which uses it, and takes it from
// node2; check is clean again and the allocator's error goes.
//
// node2's agent is stopped meanwhile: a CIDR its node does not need and
// that stays empty is given back by the agent itself after 30 seconds
// (nodeipam's releaseSettle), which would race the release under test.
//
// Routes meanwhile: node1 never routes the CIDR elsewhere (its own
// connected route to its pods stays), node3 routes it through node1 (the
// first by name), and afterwards a pod of node3 reaches node1's pod. The
// CIDR is one of a pool of this test's own, gone at the end.
func TestDbgIPAMCIDROnTwoNodes(t *testing.T) {
	logAgentsOnFailure(t)
	n1, n2 := nodes[0], nodes[1]
	ctx := context.Background()
	const poolName = "dbg"
	createPool(t, poolName, []string{"198.18.104.0/24"}, 26)
	ns := namespace(t, "dbgcidr", v4pool(poolName))
	p := startPod(t, n1, ns, "user", nil)
	stopped := false
	defer func() {
		if !stopped {
			p.stop(t)
		}
	}()
	x := nodeCIDRContaining(t, n1.name, p.ipOf(tables.IPv4))

	if err := n2.agent.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !n2.agent.Running() {
			if err := n2.agent.Start(); err != nil {
				t.Errorf("starting %s's agent again: %v", n2.name, err)
			}
		}
	})
	defer suiteWatch.Exempt(x, "written into a second CiliumNode by hand")()
	cns := herald.CiliumV2().CiliumNodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cn, err := cns.Get(ctx, n2.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		// node2 holds nothing of the pool: a new entry, after its own.
		cn.Spec.IPAM.Pools.Allocated = append(cn.Spec.IPAM.Pools.Allocated, v2.IPAMPoolAllocation{Pool: poolName, CIDRs: []v2.IPAMPodCIDR{v2.IPAMPodCIDR(x.String())}})
		_, err = cns.Update(ctx, cn, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("writing %s into CiliumNode %s: %v", x, n2.name, err)
	}
	// The allocator sees it too, and leaves it to an operator.
	waitOperatorError(t, n2.name, func(msg string) bool {
		return strings.Contains(msg, "CIDR "+x.String()+" is also allocated to node "+n1.name)
	})

	n3 := nodes[2]
	waitFor(t, timeout, func() (bool, string) {
		out, _ := exec.Command("ip", "-n", lan.Host(n3.name).Netns, "route", "show", "proto", "196", x.String()).CombinedOutput()
		return strings.Contains(string(out), "via "+lan.Host(n1.name).IP.String()), fmt.Sprintf("%s's route to %s: %q, want via %s", n3.name, x, out, n1.name)
	})
	if out, _ := exec.Command("ip", "-n", lan.Host(n1.name).Netns, "route", "show", "proto", "196", x.String()).CombinedOutput(); len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("%s routes its own CIDR %s elsewhere: %s", n1.name, x, out)
	}

	rep, run := ipamCheck(t, n1)
	twice := findingsOf(rep, ipamcheck.KindCIDROnTwoNodes)
	if run.code == 0 || len(twice) != 1 {
		t.Fatalf("check on %s does not fail with one cidr-on-two-nodes finding:\n%s", n1.name, run)
	}
	f := twice[0]
	wantCommand := fmt.Sprintf("herald-dbg ipam release --cidr %s --node %s", x, n2.name)
	if !slices.Equal(f.CIDRs, []string{x.String()}) || !slices.Equal(f.Nodes, []string{n1.name, n2.name}) || f.Command != wantCommand {
		t.Fatalf("finding %+v, want CIDR %s on %s and %s, fixed by %q", f, x, n1.name, n2.name, wantCommand)
	}
	t.Logf("%s", dbg(t, n1, "ipam", "check"))

	// node1 uses it: not taken from node1 without --force.
	refused := dbg(t, n1, "ipam", "release", "--cidr", x.String(), "--node", n1.name)
	if refused.code == 0 || !strings.Contains(refused.stderr, "refusing to remove "+x.String()+" from CiliumNode "+n1.name) {
		t.Fatalf("removing a CIDR in use from its node was not refused:\n%s", refused)
	}
	if !listsCIDR(t, n1.name, x) {
		t.Fatalf("CiliumNode %s lost %s although release refused", n1.name, x)
	}

	rel := runCommand(t, n1, f.Command)
	if rel.code != 0 || !strings.Contains(rel.stdout, "Removed "+x.String()+" (pool "+poolName+") from CiliumNode "+n2.name) {
		t.Fatal(rel)
	}
	t.Logf("%s", rel)
	if listsCIDR(t, n2.name, x) {
		t.Fatalf("CiliumNode %s still lists %s after release", n2.name, x)
	}
	if !listsCIDR(t, n1.name, x) {
		t.Fatalf("CiliumNode %s lost %s, released from %s", n1.name, x, n2.name)
	}
	rep, run = ipamCheck(t, n1)
	if run.code != 0 || rep.Errors != 0 {
		t.Fatalf("check after release:\n%s", run)
	}

	if err := n2.agent.Start(); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := n2.waitReady(ctx2); err != nil {
		t.Fatal(err)
	}
	waitOperatorError(t, n2.name, func(msg string) bool { return !strings.Contains(msg, x.String()) })
	rep, run = ipamCheck(t, n2)
	if run.code != 0 || rep.Errors != 0 {
		t.Fatalf("check on %s once its agent is back:\n%s", n2.name, run)
	}

	peer := startPod(t, n3, ns, "peer", nil)
	if err := peer.netns.Ping(ctx, p.ipOf(tables.IPv4).String()); err != nil {
		t.Fatalf("%s's pod cannot reach %s's pod %s after the CIDR was listed twice: %v", n3.name, n1.name, p.ipOf(tables.IPv4), err)
	}
	peer.stop(t)

	// The pool goes once node1 gave its CIDR back (empty for a while).
	p.stop(t)
	stopped = true
	if err := herald.CiliumV2alpha1().CiliumPodIPPools().Delete(ctx, poolName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, timeout, func() (bool, string) {
		_, err := herald.CiliumV2alpha1().CiliumPodIPPools().Get(ctx, poolName, metav1.GetOptions{})
		return err != nil, fmt.Sprintf("pool %s still exists after its pod went (%v)", poolName, err)
	})
}

// nodeCIDRContaining returns the CIDR of the node's CiliumNode that holds a.
func nodeCIDRContaining(t *testing.T, node string, a netip.Addr) netip.Prefix {
	t.Helper()
	cn, err := herald.CiliumV2().CiliumNodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, al := range cn.Spec.IPAM.Pools.Allocated {
		for _, c := range al.CIDRs {
			if p := mustPrefix(string(c)); p.Contains(a) {
				return p
			}
		}
	}
	t.Fatalf("CiliumNode %s lists no CIDR with %s: %+v", node, a, cn.Spec.IPAM.Pools.Allocated)
	return netip.Prefix{}
}

func listsCIDR(t *testing.T, node string, p netip.Prefix) bool {
	t.Helper()
	cn, err := herald.CiliumV2().CiliumNodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, al := range cn.Spec.IPAM.Pools.Allocated {
		if slices.Contains(al.CIDRs, v2.IPAMPodCIDR(p.String())) {
			return true
		}
	}
	return false
}

// waitOperatorError waits until the CiliumNode's operator-status error
// satisfies ok.
func waitOperatorError(t *testing.T, node string, ok func(string) bool) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		cn, err := herald.CiliumV2().CiliumNodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		msg := cn.Status.IPAM.OperatorStatus.Error
		return ok(msg), fmt.Sprintf("CiliumNode %s operator-status error: %q", node, msg)
	})
}
