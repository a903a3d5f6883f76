package realcluster

import (
	"net"
	"path/filepath"
)

// The cluster's PKI (test/pki), as kubeadm lays it out: one CA signs the
// API server's serving certificate and every client certificate
// (administrator, controller-manager, scheduler, kubelets, kube-proxy,
// the API server's own client to the kubelets); a separate key pair signs
// service-account tokens. Kubelets sign their own serving certificates,
// as they do by default. Certificates are written once; a cluster brought
// up again in the same directory keeps them (its kubeconfigs stay valid).

// identity is the subject of a client certificate: Kubernetes takes the
// user from CN and the groups from O.
type identity struct {
	file   string // base name of the .crt/.key pair
	user   string
	groups []string
}

func (c *Cluster) ensurePKI() error {
	clients := []identity{
		{file: "admin", user: "herald-admin", groups: []string{"system:masters"}},
		{file: "kube-controller-manager", user: "system:kube-controller-manager"},
		{file: "kube-scheduler", user: "system:kube-scheduler"},
		{file: "kube-proxy", user: "system:kube-proxy"},
		{file: "apiserver-kubelet-client", user: "kube-apiserver-kubelet-client", groups: []string{"system:masters"}},
	}
	for _, n := range c.state.Nodes {
		clients = append(clients, identity{file: "kubelet-" + n, user: "system:node:" + n, groups: []string{"system:nodes"}})
	}
	names := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"}
	ips := []net.IP{net.IP(c.cp.apiAddr.AsSlice()), net.IP(ServiceCIDR.Addr().Next().AsSlice()), net.IPv4(127, 0, 0, 1)}
	// An HA cluster's API servers answer on the VIPs and, to the kubernetes
	// Service, on their nodes' addresses.
	ips = append(ips, net.IP(ControlPlaneVIP.AsSlice()), net.IP(ControlPlaneVIP6.AsSlice()), net.IPv6loopback)
	for _, n := range c.Nodes {
		ips = append(ips, net.IP(n.IP.AsSlice()), net.IP(n.IP6.AsSlice()))
	}
	k := c.p.pki()
	if err := k.EnsureCA("herald-realcluster-ca"); err != nil {
		return err
	}
	if err := k.EnsureServing("apiserver", names, ips); err != nil {
		return err
	}
	for _, id := range clients {
		if err := k.EnsureClient(id.file, id.user, id.groups...); err != nil {
			return err
		}
	}
	for _, who := range []string{"admin", "kube-controller-manager", "kube-scheduler"} {
		if err := k.WriteKubeconfig(c.p.kubeconfig(who), c.Server, who); err != nil {
			return err
		}
	}
	for _, n := range c.state.Nodes {
		nd := c.p.node(n)
		if err := k.WriteKubeconfig(filepath.Join(nd, "kubelet.kubeconfig"), c.Server, "kubelet-"+n); err != nil {
			return err
		}
		if err := k.WriteKubeconfig(filepath.Join(nd, "kube-proxy.kubeconfig"), c.Server, "kube-proxy"); err != nil {
			return err
		}
	}
	return nil
}
