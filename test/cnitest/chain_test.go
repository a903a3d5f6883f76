package cnitest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"

	v1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/test/cnitest"
	"github.com/heraldlb/herald/test/netlab"
)

// prefix names every namespace of this suite (and the bridge), so that an
// interrupted run's leftovers can be found and removed.
const prefix = "hcni-"

// node is one test node: its namespace, a runtime on it and a fake agent.
type node struct {
	ns               *cnitest.Netns
	rt               *cnitest.Runtime
	socket, stateDir string
}

// setupNode builds the node's namespace, herald-ipam and the runtime; the
// bridge is the plugin's to create. Everything goes when the test ends.
func setupNode(t *testing.T) *node {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("test/cnitest needs root (network namespaces, the bridge plugin); the project's tests run as root")
	}
	pluginDir, err := cnitest.RequirePlugins()
	if err != nil {
		t.Fatal(err)
	}
	// One run at a time on a machine: the cleanup below removes every
	// namespace of the prefix.
	unlock, err := netlab.Lock("cnitest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unlock)
	for _, err := range cnitest.CleanupNetns(prefix) {
		t.Fatalf("removing an earlier run's namespaces: %v", err)
	}
	t.Cleanup(func() {
		for _, err := range cnitest.CleanupNetns(prefix) {
			t.Error(err)
		}
	})

	binDir := t.TempDir()
	if _, err := cnitest.BuildHeraldIPAM(binDir); err != nil {
		t.Fatal(err)
	}
	// A unix socket path must fit in 108 bytes: not under t.TempDir().
	sockDir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })

	n := &node{socket: filepath.Join(sockDir, "ipam.sock"), stateDir: t.TempDir()}
	if n.ns, err = cnitest.NewNetns(prefix + "node"); err != nil {
		t.Fatal(err)
	}
	conflist, err := cnitest.BridgeNetwork{
		Name: "herald", Bridge: prefix + "br0", IsGateway: true, IPMasq: false,
		IPAM: map[string]any{"socket": n.socket, "stateDir": n.stateDir},
	}.Conflist()
	if err != nil {
		t.Fatal(err)
	}
	n.rt, err = cnitest.NewRuntime(cnitest.RuntimeOptions{
		Conflist:   conflist,
		NodeNetns:  n.ns.Path(),
		PluginDirs: []string{pluginDir, binDir},
		CacheDir:   t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// newPod makes a Pod with its own namespace.
func newPod(t *testing.T, name string) cnitest.Pod {
	t.Helper()
	ns, err := cnitest.NewNetns(prefix + name)
	if err != nil {
		t.Fatal(err)
	}
	return cnitest.Pod{Namespace: "default", Name: name, UID: "uid-" + name, ContainerID: prefix + "ctr-" + name, Netns: ns.Path()}
}

func podNetns(p cnitest.Pod) *cnitest.Netns { return &cnitest.Netns{Name: filepath.Base(p.Netns)} }

func attachment(p cnitest.Pod) v1.Attachment {
	return v1.Attachment{ContainerID: p.ContainerID, IfName: "eth0"}
}

// cniCode is the CNI error code of err, 0 if it is not a CNI error.
func cniCode(err error) (uint, string) {
	var e *types.Error
	if errors.As(err, &e) {
		return e.Code, e.Msg
	}
	return 0, ""
}

// TestBridgeChain drives herald-ipam under the real bridge plugin through
// libcni, as a runtime does, against a fake agent: a node and two Pods.
func TestBridgeChain(t *testing.T) {
	n := setupNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	agent := startFakeAgent(t, n.socket, true, "")
	a, b := newPod(t, "a"), newPod(t, "b")

	if err := n.rt.Status(ctx); err != nil {
		t.Fatalf("STATUS with a ready agent: %v", err)
	}

	// ADD: each Pod gets an address of the agent's subnet on eth0, the
	// bridge in the node's namespace holds the gateway.
	results := map[string]*current.Result{}
	for _, p := range []cnitest.Pod{a, b} {
		res, err := n.rt.Add(ctx, p)
		if err != nil {
			t.Fatalf("ADD %s: %v", p.Name, err)
		}
		results[p.Name] = res
		addr, ok := agent.holds(attachment(p))
		if !ok {
			t.Fatalf("agent holds nothing for %s", p.Name)
		}
		if len(res.IPs) != 1 || res.IPs[0].Address.String() != addr || res.IPs[0].Gateway.String() != fakeGateway {
			t.Fatalf("ADD %s: result IPs %v, agent gave %s gateway %s", p.Name, res.IPs, addr, fakeGateway)
		}
		if len(res.Routes) != 1 || res.Routes[0].Dst.String() != "0.0.0.0/0" || res.Routes[0].GW.String() != fakeGateway {
			t.Errorf("ADD %s: routes %v", p.Name, res.Routes)
		}
		out, err := podNetns(p).Exec(ctx, "ip", "-4", "-o", "addr", "show", "dev", "eth0")
		if err != nil || !strings.Contains(string(out), " "+addr+" ") {
			t.Fatalf("%s's eth0: %v %s; want %s", p.Name, err, out, addr)
		}
		out, err = podNetns(p).Exec(ctx, "ip", "-4", "route", "show", "default")
		if err != nil || !strings.Contains(string(out), "via "+fakeGateway+" dev eth0") {
			t.Errorf("%s's default route: %v %s", p.Name, err, out)
		}
	}
	out, err := n.ns.Exec(ctx, "ip", "-4", "-o", "addr", "show", "dev", prefix+"br0")
	if err != nil || !strings.Contains(string(out), " "+fakeGateway+"/24 ") {
		t.Fatalf("bridge %sbr0 in the node's namespace: %v %s; want %s/24", prefix, err, out, fakeGateway)
	}
	// ... and only there: the plugins ran in the node's namespace, not in
	// the test's.
	if _, err := net.InterfaceByName(prefix + "br0"); err == nil {
		t.Errorf("bridge %sbr0 is in the test process's namespace", prefix)
	}
	adds, _, _, _ := agent.seen()
	wantAdds := []v1.AddRequest{
		{Attachment: attachment(a), Netns: a.Netns, Network: "herald", Bridge: prefix + "br0", Pod: v1.PodRef{Namespace: "default", Name: "a", UID: "uid-a"}},
		{Attachment: attachment(b), Netns: b.Netns, Network: "herald", Bridge: prefix + "br0", Pod: v1.PodRef{Namespace: "default", Name: "b", UID: "uid-b"}},
	}
	if !reflect.DeepEqual(adds, wantAdds) {
		t.Errorf("agent got ADDs\n%+v\nwant\n%+v", adds, wantAdds)
	}

	// The Pods reach each other across the bridge.
	ipA, ipB := results["a"].IPs[0].Address.IP.String(), results["b"].IPs[0].Address.IP.String()
	if err := podNetns(a).Ping(ctx, ipB); err != nil {
		t.Errorf("a -> b: %v", err)
	}
	if err := podNetns(b).Ping(ctx, ipA); err != nil {
		t.Errorf("b -> a: %v", err)
	}

	// CHECK: bridge checks the devices, herald-ipam asks the agent.
	for _, p := range []cnitest.Pod{a, b} {
		if err := n.rt.Check(ctx, p); err != nil {
			t.Errorf("CHECK %s: %v", p.Name, err)
		}
	}
	if _, _, checks, _ := agent.seen(); len(checks) != 2 || checks[0].IPs[0] != results["a"].IPs[0].Address.String() {
		t.Errorf("agent got CHECKs %+v", checks)
	}

	// GC with both valid: libcni deletes nothing, and bridge passes no GC
	// on; herald-ipam's own GC, as a GC-aware main plugin would delegate it,
	// tells the agent the network and both attachments.
	if err := n.rt.GC(ctx, a.Attachment(), b.Attachment()); err != nil {
		t.Fatalf("GC: %v", err)
	}
	if _, dels, _, gcs := agent.seen(); len(dels) != 0 || len(gcs) != 0 {
		t.Errorf("libcni GC with every attachment valid: agent got DELs %+v GCs %+v", dels, gcs)
	}
	if err := n.rt.DelegateGC(ctx, a.Attachment(), b.Attachment()); err != nil {
		t.Fatalf("herald-ipam GC: %v", err)
	}
	_, _, _, gcs := agent.seen()
	if want := []v1.GCRequest{{Network: "herald", ValidAttachments: []v1.Attachment{attachment(a), attachment(b)}}}; !reflect.DeepEqual(gcs, want) {
		t.Errorf("agent got GCs %+v, want %+v", gcs, want)
	}

	// DEL releases: the agent sees it, the Pod's interface is gone.
	if err := n.rt.Del(ctx, a); err != nil {
		t.Fatalf("DEL a: %v", err)
	}
	if _, dels, _, _ := agent.seen(); !reflect.DeepEqual(dels, []v1.DelRequest{{Attachment: attachment(a), Pod: v1.PodRef{Namespace: "default", Name: "a", UID: "uid-a"}}}) {
		t.Errorf("agent got DELs %+v", dels)
	}
	if _, ok := agent.holds(attachment(a)); ok {
		t.Error("agent still holds a's address")
	}
	if out, err := podNetns(a).Exec(ctx, "ip", "link", "show", "eth0"); err == nil {
		t.Errorf("a's eth0 still there after DEL: %s", out)
	}

	// A new sandbox in a's namespace that the runtime then forgets: libcni's
	// GC deletes it (a DEL through bridge), which reaches the agent.
	a2 := a
	a2.ContainerID = prefix + "ctr-a2"
	if _, err := n.rt.Add(ctx, a2); err != nil {
		t.Fatalf("ADD a2: %v", err)
	}
	if err := n.rt.GC(ctx, b.Attachment()); err != nil {
		t.Fatalf("GC: %v", err)
	}
	if _, ok := agent.holds(attachment(a2)); ok {
		t.Error("GC without a2 among the valid attachments: the agent still holds its address")
	}
	if _, ok := agent.holds(attachment(b)); !ok {
		t.Error("GC released b, a valid attachment")
	}

	// The agent goes away. DEL still succeeds, twice, and leaves the request
	// for the agent in the state directory.
	agent.stop()
	for i := range 2 {
		if err := n.rt.Del(ctx, b); err != nil {
			t.Fatalf("DEL b without agent (%d): %v", i, err)
		}
	}
	wantQueued := map[string]v1.DelRequest{
		b.ContainerID + "_eth0.json": {Attachment: attachment(b), Pod: v1.PodRef{Namespace: "default", Name: "b", UID: "uid-b"}},
	}
	checkPending(t, n.stateDir, wantQueued)
	if out, err := podNetns(b).Exec(ctx, "ip", "link", "show", "eth0"); err == nil {
		t.Errorf("b's eth0 still there after DEL: %s", out)
	}

	// ADD without agent: try again later (11), passed on by bridge. Bridge
	// undoes its half-done ADD with a DEL to herald-ipam, which is queued;
	// so is the runtime's DEL of the failed sandbox.
	a3 := a
	a3.ContainerID = prefix + "ctr-a3"
	_, err = n.rt.Add(ctx, a3)
	if code, msg := cniCode(err); code != v1.CodeTryAgainLater || !strings.Contains(msg, n.socket) {
		t.Errorf("ADD without agent: %v; want CNI error 11 naming %s", err, n.socket)
	}
	if err := n.rt.Del(ctx, a3); err != nil {
		t.Errorf("DEL of the failed sandbox: %v", err)
	}
	wantQueued[a3.ContainerID+"_eth0.json"] = v1.DelRequest{Attachment: attachment(a3), Pod: v1.PodRef{Namespace: "default", Name: "a", UID: "uid-a"}}
	checkPending(t, n.stateDir, wantQueued)

	// STATUS: 50 without agent, and with an agent that is not ready.
	if code, _ := cniCode(n.rt.Status(ctx)); code != 50 {
		t.Errorf("STATUS without agent: %v, want CNI error 50", n.rt.Status(ctx))
	}
	startFakeAgent(t, n.socket, false, "no CIDR of pool default for IPv4 yet")
	err = n.rt.Status(ctx)
	if code, msg := cniCode(err); code != 50 || msg != "no CIDR of pool default for IPv4 yet" {
		t.Errorf("STATUS with an agent that is not ready: %v, want CNI error 50 with its message", err)
	}
}

// checkPending checks the queued DELs in the state directory.
func checkPending(t *testing.T, stateDir string, want map[string]v1.DelRequest) {
	t.Helper()
	dir := filepath.Join(stateDir, v1.PendingDelDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("pending DELs: %v", err)
	}
	got := map[string]v1.DelRequest{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var req v1.DelRequest
		if err := json.Unmarshal(b, &req); err != nil {
			t.Fatalf("%s: %v: %s", e.Name(), err, b)
		}
		got[e.Name()] = req
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pending DELs %+v, want %+v", got, want)
	}
}

// TestDelegateAddDel runs herald-ipam alone, as bridge execs it: the agent
// gets the same request as through the chain (the bridge named, the Pod
// from CNI_ARGS), and no device is created.
func TestDelegateAddDel(t *testing.T) {
	n := setupNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	agent := startFakeAgent(t, n.socket, true, "")
	p := cnitest.Pod{Namespace: "default", Name: "solo", UID: "uid-solo", ContainerID: prefix + "ctr-solo", Netns: filepath.Join(cnitest.NetnsDir, prefix+"solo")}

	res, err := n.rt.DelegateAdd(ctx, p)
	if err != nil {
		t.Fatalf("ADD: %v", err)
	}
	addr, ok := agent.holds(attachment(p))
	if !ok || len(res.IPs) != 1 || res.IPs[0].Address.String() != addr {
		t.Fatalf("ADD result %v, agent holds %q", res.IPs, addr)
	}
	adds, _, _, _ := agent.seen()
	want := v1.AddRequest{Attachment: attachment(p), Netns: p.Netns, Network: "herald", Bridge: prefix + "br0", Pod: v1.PodRef{Namespace: "default", Name: "solo", UID: "uid-solo"}}
	if len(adds) != 1 || !reflect.DeepEqual(adds[0], want) {
		t.Errorf("agent got ADDs %+v, want %+v", adds, want)
	}
	if out, err := n.ns.Exec(ctx, "ip", "-o", "link", "show", prefix+"br0"); err == nil {
		t.Errorf("the IPAM plugin alone created the bridge: %s", out)
	}

	if err := n.rt.DelegateDel(ctx, p); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	if _, ok := agent.holds(attachment(p)); ok {
		t.Error("the agent still holds the address after DEL")
	}
}
