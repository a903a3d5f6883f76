// Package realcluster runs a real Kubernetes cluster on one machine, from
// what the project builds or installs, offline, to prove Herald as users
// run it: installed with Helm as a DaemonSet, its image in a container
// runtime, its CNI plugin called by containerd for pods the kubelet
// creates.
//
// The cluster:
//   - a control plane in the root network namespace: etcd (Debian),
//     kube-apiserver on the LAN's first address (198.18.16.1:6443), and
//     kube-controller-manager and kube-scheduler on loopback, built from
//     k8s.io/kubernetes by install/dev/ensure-tools.sh; x509 client
//     certificates for everyone, Node and RBAC authorization;
//   - nodes node1, node2, ... (198.18.16.11, ...; fd00:18:16::b, ...), each
//     a network namespace on the LAN (test/netlab) with a mount namespace
//     of its own (see Node), running containerd 1.6 and runc (Debian), a
//     kubelet and kube-proxy (iptables mode);
//   - a client namespace on the LAN (198.18.16.100), for users' traffic.
//
// Images are built offline (package images) and imported into every
// node's containerd; nothing is pulled. Everything binds to loopback or to
// the cluster's own namespaces (the API server to the host's end of the
// LAN; the e2e step HostBindsLoopbackOnly checks it), and every address is
// in 198.18.0.0/15 or fd00::/8.
//
// Up brings a cluster up in a directory, Open attaches to one that is up,
// Down tears it down (whatever state it is in) and puts back the host
// settings the kubelets changed. The command herald-realcluster (cmd/)
// does the same from the shell; Documentation/real-cluster.md says how,
// and what differs from a production cluster. Needs root.
package realcluster
