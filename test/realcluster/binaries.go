package realcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/heraldlb/herald/test/cluster"
	"github.com/heraldlb/herald/test/cnitest"
)

// binaries are the programs the cluster runs: Kubernetes' own, built by
// install/dev/ensure-tools.sh into the cache (make tools), etcd, containerd,
// runc and ctr from Debian, the reference CNI plugins from the cache.
type binaries struct {
	etcd, apiserver, controllerManager, scheduler, kubelet, kubeProxy, kubectl, helm string
	containerd, ctr                                                                  string
	cniPlugins                                                                       string // directory
}

func findBinaries() (binaries, error) {
	cache := filepath.Dir(cluster.ApiserverPath(cluster.KubeVersion))
	k8s := func(name string) string { return filepath.Join(cache, name+"-"+cluster.KubeVersion) }
	b := binaries{
		apiserver: k8s("kube-apiserver"), controllerManager: k8s("kube-controller-manager"),
		scheduler: k8s("kube-scheduler"), kubelet: k8s("kubelet"), kubeProxy: k8s("kube-proxy"),
		kubectl: k8s("kubectl"), helm: filepath.Join(cache, "helm-"+helmVersion()),
		cniPlugins: cnitest.PluginsDir(),
	}
	var missing []string
	for _, name := range []string{"etcd", "containerd", "ctr"} {
		p, err := exec.LookPath(name)
		if err != nil {
			missing = append(missing, name)
		}
		switch name {
		case "etcd":
			b.etcd = p
		case "containerd":
			b.containerd = p
		case "ctr":
			b.ctr = p
		}
	}
	if _, err := exec.LookPath("runc"); err != nil {
		missing = append(missing, "runc")
	}
	for _, p := range []string{b.apiserver, b.controllerManager, b.scheduler, b.kubelet, b.kubeProxy, b.kubectl, b.helm,
		filepath.Join(b.cniPlugins, "bridge"), filepath.Join(b.cniPlugins, "loopback")} {
		if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return b, fmt.Errorf("realcluster: missing %s: run make tools (install/dev/ensure-tools.sh)", strings.Join(missing, ", "))
	}
	return b, nil
}

// helmVersion is the Helm CLI ensure-tools.sh builds (install/dev/tools-helm).
func helmVersion() string {
	return requireVersion(filepath.Join(cluster.RepoRoot(), "install", "dev", "tools-helm", "go.mod"), "helm.sh/helm/v3")
}

func requireVersion(gomod, module string) string {
	b, _ := os.ReadFile(gomod)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == module {
			return f[1]
		}
	}
	return "unknown"
}
