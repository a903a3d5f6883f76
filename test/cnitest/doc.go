// Package cnitest runs CNI operations the way a container runtime does, with
// the real plugins: bridge (built by install/dev/ensure-cni-plugins.sh)
// delegating to herald-ipam (built from this tree), driven by libcni.
//
//   - plugins.go: where the reference plugins are, and building herald-ipam.
//   - netns.go: named network namespaces ("node" and "pod"), and running a
//     command in one (ping).
//   - nsexec.go: runs the plugin processes inside the node's namespace.
//   - runtime.go: Add, Del, Check, GC and Status of one network for a Pod.
//   - conflist.go: a bridge network with herald-ipam as its IPAM.
//
// Choice of driver: libcni in-process rather than cnitool under
// `ip netns exec`. libcni is what containerd and CRI-O are built on; it
// returns typed results and *types.Error with the plugin's code (tests
// check codes 11 and 50), takes container IDs and GC's valid attachments
// directly, keeps the result cache CHECK and GC need, and needs no extra
// binary. Only the plugin processes must run in the node's namespace, and a
// child process starts in the network namespace of the thread that forks
// it: nsexec.go forks each plugin from a goroutine locked to a thread that
// has entered the node's namespace, and gives the thread back only once it
// is back in its own namespace.
//
// Everything needs root (network namespaces, the bridge plugin).
package cnitest
