package realcluster

import (
	"fmt"
	"path/filepath"
	"time"
)

// containerdConfig is the node's containerd 1.6 configuration: the default
// paths (the node's own, in its mount namespace), runc through the v2 shim
// with cgroupfs, the CNI configuration and plugins at the usual places, and
// the sandbox image the cluster loads (no registry is reachable).
//
// restrict_oom_score_adj: root on these machines lacks CAP_SYS_RESOURCE,
// so nothing can lower an oom_score_adj; kubelet asks for -998 for every
// sandbox and runc would fail. This is containerd's switch for that case
// (rootless and nested setups use it).
func containerdConfig(sandboxImage string) string {
	return fmt.Sprintf(`version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "/run/containerd/containerd.sock"

[ttrpc]
  address = "/run/containerd/containerd.sock.ttrpc"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/opt/cni/bin"
    conf_dir = "/etc/cni/net.d"
`, sandboxImage)
}

// kubeletConfig is the node's KubeletConfiguration. Its cgroups live under
// the node's subtree; it serves on the node's address (10250) and its
// health on the node's loopback; x509 clients of the cluster CA and
// webhook authorization, as kubeadm sets it up. Pods get a resolv.conf
// naming their own loopback (there is no cluster DNS, and no query may
// leave the machine). Images are never pulled
// (IfNotPresent everywhere, and nothing to pull from) nor collected; the
// eviction thresholds are low because the disk is shared by every node.
// maxRestartPeriod, when set, caps the crash-loop back-off (see
// Options.MaxRestartPeriod).
func kubeletConfig(n *Node, maxRestartPeriod time.Duration) string {
	backOff := ""
	if maxRestartPeriod > 0 {
		backOff = fmt.Sprintf("featureGates:\n  KubeletCrashLoopBackOffMax: true\ncrashLoopBackOff:\n  maxContainerRestartPeriod: %s\n", maxRestartPeriod)
	}
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: 10250
healthzBindAddress: 127.0.0.1
healthzPort: 10248
readOnlyPort: 0
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook
cgroupDriver: cgroupfs
cgroupRoot: %s
cgroupsPerQOS: true
failSwapOn: false
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
staticPodPath: /etc/kubernetes/manifests
clusterDomain: cluster.local
resolvConf: %s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
maxPods: 250
serializeImagePulls: false
rotateCertificates: false
serverTLSBootstrap: false
%s`, n.IP, n.pki.CA(), n.Cgroup, filepath.Join(n.Dir, "resolv.conf"), backOff)
}

// kubeProxyConfig is the node's KubeProxyConfiguration: iptables mode, its
// health on the node's address, and the host-wide conntrack sysctls left
// alone (they are the host's, not the node's). minSync, when set, is
// iptables.minSyncPeriod (Options.KubeProxyMinSyncPeriod).
func kubeProxyConfig(n *Node, minSync time.Duration) string {
	iptables := ""
	if minSync > 0 {
		iptables = fmt.Sprintf("iptables:\n  minSyncPeriod: %s\n", minSync)
	}
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
mode: iptables
healthzBindAddress: %s:10256
metricsBindAddress: 127.0.0.1:10249
conntrack:
  maxPerCore: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
%s`, filepath.Join(n.Dir, "kube-proxy.kubeconfig"), n.Name, n.IP, iptables)
}
