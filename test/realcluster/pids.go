package realcluster

// DaemonPIDs returns the process ids of the cluster's daemons that run, by
// name: the control plane's ("etcd", "kube-apiserver", ...) and each
// node's ("node1/containerd", "node1/kubelet", "node1/kube-proxy"; with
// HA, "node1/etcd" and "node1/kube-apiserver" too). What the runtimes
// start (shims, containers) is in the nodes' cgroups (Node.Cgroup).
func (c *Cluster) DaemonPIDs() map[string]int {
	out := map[string]int{}
	add := func(prefix string, ds ...daemon) {
		for _, d := range ds {
			if pid, ok := d.pid(); ok {
				out[prefix+d.name] = pid
			}
		}
	}
	add("", c.cp.daemons()...)
	for _, n := range c.Nodes {
		add(n.Name+"/", n.daemons()...)
	}
	for _, n := range c.ControlPlaneNodes() {
		add(n.Name+"/", c.etcdMember(n), c.APIServer(n))
	}
	return out
}
