// Package cpvip is the test harness for Herald's control-plane VIP mode
// (`herald-agent control-plane-vip`): a three-node highly available
// Kubernetes control plane in network namespaces, the faults the proofs
// inject into it, and the observers that measure what a client sees.
//
// Up builds a test/netlab LAN (hcp-*, 198.18.40.0/24 and
// fd00:18:0:40::/64) with three control-plane hosts cp1..cp3 (.11-.13) and
// a client (.50). Each control-plane host runs, in its own namespace, an
// etcd member of a three-member cluster and a kube-apiserver on port 6443
// that stores in its local member and serves on every address (its own,
// loopback, and the VIPs 198.18.40.100 and fd00:18:0:40::100 once
// something announces them). With Options.StartAgents each host also runs
// the agent, which elects an owner for the VIPs and answers ARP and NDP
// for them. Kubeconfigs for the VIPs serve clients in the client's
// namespace.
//
// Faults, per node: kill -9 and restart of the API server, of the agent,
// SIGSTOP/SIGCONT of everything in the node's namespace, a network
// partition, and an nftables rule that fails the agent's /readyz probe on
// loopback while the API server stays reachable on the LAN. Observers, from
// the client's namespace: WatchVIP probes who has a VIP every 10 ms on the
// wire and records every reply (who answered when, how long a failover
// took, and any request answered by two MACs); APILoop lists the Nodes
// through a VIP every 50 ms with client-go and records the failures.
//
// How it differs from a real control plane: there are no kubelets,
// controller-manager, scheduler or static Pods; the processes are children
// of the test (they die with it) rather than systemd units (but
// CPNode.BootSystemd boots a systemd of the node's own, for the agent's
// unit as shipped: TestSystemdUnit); etcd and the
// kube-apiserver use plain HTTP between them and one test CA for
// everything; all three hosts share one kernel, so a "frozen node" is its
// processes stopped, not its kernel, and a partition is its bridge port
// taken off the LAN. What the VIP mode depends on is real: three API
// servers that become ready and unready on their own, etcd quorum, and
// ARP/NDP and TCP on a real (virtual) Ethernet.
//
// Up takes a machine-wide lock and removes what an interrupted run left;
// run the tests as root under the shared integration-test lock:
//
//	flock /tmp/herald-itest.lock go test -race -count=1 ./test/cpvip/ -run TestHarness -v
package cpvip
