package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/heraldlb/herald/test/cgroups"
	"github.com/heraldlb/herald/test/frr"
	"github.com/heraldlb/herald/test/listeners"
	"github.com/heraldlb/herald/test/realcluster"
)

// testHostBindsLoopbackOnly: what the harness runs in the host's network
// namespace (the control plane, and anything else it started that stayed
// there) waits for traffic on loopback only, or on the address the host
// holds on the harness's own link to the LAN (hrc-root: the API server's,
// where the nodes reach it); never on a wildcard or an address of the
// machine's own devices. The rest runs in the project's namespaces: each
// node's daemons and agent in the node's, the backends in their pods',
// FRR in the router's.
//
// It reads the host's socket tables (TCP listeners, unconnected UDP
// sockets) and finds their holders by their descriptors. It can fail: a
// kube-scheduler started with --bind-address=0.0.0.0 failed it, naming the
// scheduler and tcp6 [::]:<port>; and it checks that it found each
// control-plane daemon holding a socket in the host's tables, so that
// finding nothing cannot pass it.
func testHostBindsLoopbackOnly(t *testing.T) {
	// FRR and a backend run while it looks, so that it sees them too.
	frr.StartT(t, frr.Options{Netns: cl.RouterHost.Netns, Dir: filepath.Join(work, "frr-binds"), Name: "tor", Config: cl.RouterConfig()})
	deployBackend(t, newNamespace(t, "binds", nil), "binds", 1, nil)

	host, err := listeners.NetNS("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	// The sockets first: a process that starts after them has none there.
	socks, err := listeners.Listening("/proc/self/net")
	if err != nil {
		t.Fatal(err)
	}
	procs, err := listeners.Processes()
	if err != nil {
		t.Fatal(err)
	}
	holders, err := listeners.AddrHolders()
	if err != nil {
		t.Fatal(err)
	}
	harness := harnessProcesses(procs)
	ownDevice := func(d string) bool { return strings.HasPrefix(d, realcluster.Prefix) }
	held := map[string]int{} // by harness name: sockets in the host's tables
	for _, p := range procs {
		name, ok := harness[p.PID]
		if !ok {
			continue
		}
		for _, s := range socketsOf(p, socks) {
			held[name]++
			t.Logf("%s %s: %s", name, p, s)
			if !listeners.Confined(s.Addr.Addr(), holders, ownDevice) {
				t.Errorf("%s %s waits for traffic on %s in the host's network namespace (devices holding the address: %v): "+
					"bind it to loopback, or run it in one of the cluster's namespaces", name, p, s, holders[s.Addr.Addr().Unmap()])
			}
		}
	}
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		if held[name] == 0 {
			t.Errorf("%s holds no socket in the host's tables: the check did not find it", name)
		}
	}
	expectInNamespaces(t, procs, harness, host)
}

// socketsOf returns the sockets of the table that p holds.
func socketsOf(p listeners.Process, table []listeners.Socket) []listeners.Socket {
	var out []listeners.Socket
	for _, s := range table {
		for _, inode := range p.Sockets {
			if s.Inode == inode {
				out = append(out, s)
			}
		}
	}
	return out
}

// harnessProcesses are the processes the harness started, by pid, with a
// name for messages: its daemons, what runs in the nodes' cgroups
// (shims, containers), and every descendant of these and of the test
// itself (FRR, kubectl, curl), each named after its ancestor.
func harnessProcesses(procs []listeners.Process) map[int]string {
	byPID := map[int]listeners.Process{}
	children := map[int][]int{}
	for _, p := range procs {
		byPID[p.PID] = p
		children[p.PPID] = append(children[p.PPID], p.PID)
	}
	names := map[int]string{os.Getpid(): "the test"}
	for name, pid := range cl.DaemonPIDs() {
		names[pid] = name
	}
	for _, n := range cl.Nodes {
		for _, pid := range cgroups.PIDs(n.Cgroup) {
			if _, ok := names[pid]; !ok && byPID[pid].PID != 0 {
				names[pid] = n.Name + "/" + byPID[pid].Comm
			}
		}
	}
	var queue []int
	for pid := range names {
		queue = append(queue, pid)
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if _, ok := names[c]; !ok {
				names[c] = fmt.Sprintf("%s > %s", names[pid], byPID[c].Comm)
				queue = append(queue, c)
			}
		}
	}
	return names
}

// expectInNamespaces checks that the harness's processes outside the
// control plane run where the documentation says: each node's daemons and
// agent in the node's namespace, the backend in a pod's (not the host's),
// FRR in the router's.
func expectInNamespaces(t *testing.T, procs []listeners.Process, harness map[int]string, host uint64) {
	t.Helper()
	where := map[uint64]string{host: "the host's"}
	for _, ns := range append(nodeNetns(), cl.RouterHost.Netns) {
		ino, err := listeners.NetNS(filepath.Join("/var/run/netns", ns))
		if err != nil {
			t.Fatal(err)
		}
		where[ino] = ns
	}
	found := map[string]string{} // "node1/herald-agent" -> its namespace
	for _, p := range procs {
		name, ok := harness[p.PID]
		if !ok {
			continue
		}
		ns, ok := where[p.NetNS]
		if !ok {
			ns = "a pod's"
		}
		key := name
		if strings.Contains(name, " > ") {
			key = strings.SplitN(name, " > ", 2)[0] + "/" + p.Comm // FRR: "the test/bgpd"
		}
		found[key] = ns
	}
	want := map[string]string{"the test/bgpd": cl.RouterHost.Netns, "the test/zebra": cl.RouterHost.Netns}
	for _, n := range cl.Nodes {
		for _, d := range []string{"containerd", "kubelet", "kube-proxy", "herald-agent"} {
			want[n.Name+"/"+d] = n.Netns
		}
	}
	for key, ns := range want {
		if found[key] != ns {
			t.Errorf("%s: found in %q, want in %s's network namespace", key, found[key], ns)
		}
	}
	var backends []string
	for key, ns := range found {
		if strings.HasSuffix(key, "/httpecho") {
			backends = append(backends, key+" in "+ns)
			if ns != "a pod's" {
				t.Errorf("backend %s runs in %s network namespace, want a pod's", key, ns)
			}
		}
	}
	sort.Strings(backends)
	if len(backends) == 0 {
		t.Error("no backend (httpecho) among the nodes' processes: the check did not find it")
	}
	t.Logf("backends: %v", backends)
}

func nodeNetns() []string {
	var out []string
	for _, n := range cl.Nodes {
		out = append(out, n.Netns)
	}
	return out
}
