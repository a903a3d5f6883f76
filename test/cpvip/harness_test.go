package cpvip

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// waitTimeout bounds every wait of the harness test: it checks outcomes,
// never durations.
const waitTimeout = 60 * time.Second

// TestHarness brings the control plane up without agents and checks that
// every part and every fault does what the proofs rely on, then that Down
// leaves nothing behind.
func TestHarness(t *testing.T) {
	cp := upT(t, Options{})

	t.Run("etcd", func(t *testing.T) { checkEtcd(t, cp) })
	t.Run("readyz", func(t *testing.T) { checkReadyz(t, cp) })
	t.Run("block readyz", func(t *testing.T) { checkBlockReadyz(t, cp.Nodes[0]) })
	t.Run("freeze", func(t *testing.T) { checkFreeze(t, cp, cp.Nodes[1]) })
	t.Run("cut", func(t *testing.T) { checkCut(t, cp.Nodes[2]) })
	t.Run("api loop", func(t *testing.T) { checkAPILoop(t, cp, cp.Nodes[2]) })
	t.Run("watch vip", func(t *testing.T) { checkWatch(t, cp, VIP) })
	t.Run("watch vip6", func(t *testing.T) { checkWatch(t, cp, VIP6) })

	pids := map[int]bool{}
	for _, n := range cp.Nodes {
		ps, err := PIDs(n.Host.Netns)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			pids[p] = true
		}
	}
	if len(pids) < 6 {
		t.Fatalf("want at least etcd and kube-apiserver in each node's namespace, found pids %v", pids)
	}
	// Down now (the cleanup's is then a no-op), to see what it leaves.
	if err := cp.Down(); err != nil {
		t.Fatalf("Down: %v", err)
	}
	checkNothingLeft(t, cp.Dir, pids)
}

// poll calls cond until it returns nil, failing the test with its last
// error after waitTimeout.
func poll(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func checkEtcd(t *testing.T, cp *ControlPlane) {
	for _, n := range cp.Nodes {
		members, err := n.EtcdMembers(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, m := range members {
			names = append(names, m.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, NodeNames) {
			t.Errorf("etcd of %s lists members %v, want %v", n.Name, names, NodeNames)
		}
	}
}

func checkReadyz(t *testing.T, cp *ControlPlane) {
	ctx := context.Background()
	for _, n := range cp.Nodes {
		if err := n.Readyz(ctx); err != nil {
			t.Errorf("loopback: %v", err)
		}
		if err := n.ReadyzAt(ctx); err != nil {
			t.Errorf("from the client: %v", err)
		}
	}
}

func checkBlockReadyz(t *testing.T, n *CPNode) {
	ctx := context.Background()
	if err := n.BlockReadyz(true); err != nil {
		t.Fatal(err)
	}
	err := n.Readyz(ctx)
	if err == nil || !strings.Contains(err.Error(), "connection re") {
		t.Errorf("blocked /readyz on loopback of %s: got %v, want a reset or refused connection", n.Name, err)
	}
	if err := n.ReadyzAt(ctx); err != nil {
		t.Errorf("blocked /readyz on loopback of %s also blocks its LAN address: %v", n.Name, err)
	}
	if err := n.BlockReadyz(false); err != nil {
		t.Fatal(err)
	}
	poll(t, "unblocked /readyz", func() error { return n.Readyz(ctx) })
}

func checkFreeze(t *testing.T, cp *ControlPlane, n *CPNode) {
	ctx := context.Background()
	if err := n.Freeze(); err != nil {
		t.Fatal(err)
	}
	thawed := false
	defer func() {
		if !thawed {
			_ = n.Thaw()
		}
	}()
	checkStates(t, n, true)
	if err := n.ReadyzAt(ctx); err == nil {
		t.Errorf("frozen %s answered /readyz", n.Name)
	}
	// The two others keep etcd's quorum: their API servers stay ready.
	for _, m := range cp.Nodes {
		if m != n {
			poll(t, "readyz of "+m.Name+" while "+n.Name+" is frozen", func() error { return m.Readyz(ctx) })
		}
	}
	if err := n.Thaw(); err != nil {
		t.Fatal(err)
	}
	thawed = true
	checkStates(t, n, false)
	poll(t, "readyz of thawed "+n.Name, func() error { return n.Readyz(ctx) })
}

// checkStates checks that every process in the node's namespace is
// stopped (state T), or that none is.
func checkStates(t *testing.T, n *CPNode, stopped bool) {
	t.Helper()
	pids, err := PIDs(n.Host.Netns)
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		// pid (comm) state ...: the state follows the last ')'.
		s := string(stat)
		state := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]
		if (state == "T") != stopped {
			t.Errorf("pid %d in %s is in state %s, stopped=%v wanted", pid, n.Host.Netns, state, stopped)
		}
	}
}

func checkCut(t *testing.T, n *CPNode) {
	ctx := context.Background()
	if err := n.Cut(); err != nil {
		t.Fatal(err)
	}
	err := n.ReadyzAt(ctx)
	if herr := n.Heal(); herr != nil {
		t.Fatal(herr)
	}
	if err == nil {
		t.Errorf("the client reached %s while it was cut off", n.Name)
	}
	poll(t, "readyz of healed "+n.Name, func() error { return n.ReadyzAt(ctx) })
}

// checkAPILoop runs the loop against one node's API server, kills it and
// starts it again: the loop records one failure window.
func checkAPILoop(t *testing.T, cp *ControlPlane, n *CPNode) {
	ctx := context.Background()
	kc := filepath.Join(cp.Dir, "node.kubeconfig")
	if err := cp.WriteKubeconfig(kc, n.Host.IP); err != nil {
		t.Fatal(err)
	}
	loop, err := cp.APILoop(ctx, kc)
	if err != nil {
		t.Fatal(err)
	}
	defer loop.Stop()
	poll(t, "API loop succeeds", func() error { return lastResult(loop, false) })
	if err := n.KillAPIServer(); err != nil {
		t.Fatal(err)
	}
	poll(t, "API loop fails", func() error { return lastResult(loop, true) })
	if err := n.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	if err := n.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	poll(t, "API loop succeeds again", func() error { return lastResult(loop, false) })
	rec := loop.Stop()
	ws := rec.Windows()
	if len(ws) != 1 || ws[0].Failures == 0 {
		t.Fatalf("want one failure window, got %v", ws)
	}
	t.Logf("%d requests, longest failure window %v", len(rec.Requests), rec.Longest())
}

// lastResult is nil when the loop's latest request failed (failed) or
// succeeded (!failed).
func lastResult(l *APILoop, failed bool) error {
	rs := l.Snapshot().Requests
	if len(rs) == 0 {
		return fmt.Errorf("no request yet")
	}
	last := rs[len(rs)-1]
	if (last.Err != nil) != failed {
		return fmt.Errorf("latest request: %v", last.Err)
	}
	return nil
}
