package cpvip

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// KubeVipEnv names a kube-vip binary for the benchmark and its harness's
// test; without it they build one with hack/kube-vip.sh (BuildKubeVip).
const KubeVipEnv = "HERALD_KUBEVIP"

// KubeVipTimings are kube-vip's Lease timings in whole seconds, as its
// flags take them: --leaseDuration, --leaseRenewDuration, --leaseRetry.
type KubeVipTimings struct{ Duration, RenewDeadline, Retry int }

// KubeVipDefaults are the timings kube-vip runs with when its manifest
// sets none (kube-vip v0.9); KubeVipFastest the shortest client-go's
// leader election accepts in whole seconds (the duration longer than the
// renew deadline, the deadline longer than 1.2 retry periods).
var (
	KubeVipDefaults = KubeVipTimings{Duration: 5, RenewDeadline: 3, Retry: 1}
	KubeVipFastest  = KubeVipTimings{Duration: 3, RenewDeadline: 2, Retry: 1}
)

// kubeVipArgv is node n's kube-vip as its documentation runs it in front
// of the API servers: control-plane mode, ARP, the Kubernetes Lease
// election (plndr-cp-lock in kube-system), both VIPs on the LAN device.
// Its metrics server is off: the benchmark reads none.
func kubeVipArgv(bin, node string, t KubeVipTimings) []string {
	return []string{bin, "manager",
		"--controlplane", "--arp", "--leaderElection",
		"--address=" + VIP.String() + "," + VIP6.String(),
		"--vipSubnet=32,128",
		"--interface=" + agentDevice,
		"--nodeName=" + node,
		"--namespace=kube-system",
		"--leaseDuration=" + strconv.Itoa(t.Duration),
		"--leaseRenewDuration=" + strconv.Itoa(t.RenewDeadline),
		"--leaseRetry=" + strconv.Itoa(t.Retry),
		"--prometheusHTTPServer=",
	}
}

// kubeVipDaemons are kube-vip in control-plane mode on every node. kube-vip
// reads the API server's address from /etc/kubernetes/admin.conf, or else
// from $HOME/.kube/config; each node's kube-vip gets a HOME of its own whose
// kubeconfig names the node's own API server on 127.0.0.1, which is what
// kube-vip's static Pod reaches through its `kubernetes` host alias.
//
// kube-vip exits when it loses the Lease (it panics after removing the
// VIPs, for its kubelet to start it again): Settled starts such a node's
// kube-vip again, as the kubelet would, before the next trial.
type kubeVipDaemons struct {
	bin     string
	timings KubeVipTimings
	procs   map[*CPNode]*process
}

func newKubeVipDaemons(bin string, t KubeVipTimings) *kubeVipDaemons {
	return &kubeVipDaemons{bin: bin, timings: t, procs: map[*CPNode]*process{}}
}

func (k *kubeVipDaemons) Name() string {
	return fmt.Sprintf("kube-vip lease %ds/%ds/%ds", k.timings.Duration, k.timings.RenewDeadline, k.timings.Retry)
}

func (k *kubeVipDaemons) Start(cp *ControlPlane) error {
	if _, err := os.Stat("/etc/kubernetes/admin.conf"); err == nil {
		return errors.New("kube-vip would read this machine's /etc/kubernetes/admin.conf instead of the node's kubeconfig: move it away for the benchmark")
	}
	for _, n := range cp.Nodes {
		dir := filepath.Join(n.Dir, fmt.Sprintf("kube-vip-%d-%d-%d", k.timings.Duration, k.timings.RenewDeadline, k.timings.Retry))
		home := filepath.Join(dir, "home")
		kubeconfig, err := os.ReadFile(n.Kubeconfig)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(home, ".kube", "config"), kubeconfig, 0o600); err != nil {
			return err
		}
		p := &process{name: "kube-vip", netns: n.Host.Netns, dir: dir}
		// env execs kube-vip in place: the pid stays the daemon's.
		argv := append([]string{"env", "HOME=" + home}, kubeVipArgv(k.bin, n.Name, k.timings)...)
		if err := p.start(argv); err != nil {
			return err
		}
		k.procs[n] = p
	}
	return nil
}

func (k *kubeVipDaemons) Kill(n *CPNode) error    { return k.procs[n].stop(syscall.SIGKILL) }
func (k *kubeVipDaemons) Restart(n *CPNode) error { return k.procs[n].restart() }

// Settled: every node's kube-vip runs and has seen who holds the Lease. A
// kube-vip that exited on its own (it lost the Lease) is started again.
func (k *kubeVipDaemons) Settled(cp *ControlPlane) error {
	for _, n := range cp.Nodes {
		p := k.procs[n]
		if _, ok := p.running(); !ok {
			if err := p.restart(); err != nil {
				return err
			}
			return fmt.Errorf("%s: kube-vip had exited, started it again", n.Name)
		}
		if !strings.Contains(p.latestLog(), "New leader") {
			return fmt.Errorf("%s: kube-vip has not seen a leader yet", n.Name)
		}
	}
	return nil
}

// Stop is kube-vip's clean shutdown (SIGTERM): it gives the Lease up and
// removes the VIPs.
func (k *kubeVipDaemons) Stop(cp *ControlPlane) error {
	var errs []error
	for _, n := range cp.Nodes {
		errs = append(errs, k.procs[n].stop(syscall.SIGTERM))
	}
	return errors.Join(errs...)
}

func (k *kubeVipDaemons) Logs(cp *ControlPlane) string {
	var s string
	for _, n := range cp.Nodes {
		if p := k.procs[n]; p != nil {
			s += p.logs(30)
		}
	}
	return s
}

// BuildKubeVip returns the kube-vip binary: $HERALD_KUBEVIP, else the one
// hack/kube-vip.sh builds and caches.
func BuildKubeVip(repoRoot string) (string, error) {
	if bin := os.Getenv(KubeVipEnv); bin != "" {
		return bin, nil
	}
	cmd := exec.Command(filepath.Join(repoRoot, "hack", "kube-vip.sh"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/kube-vip.sh: %w: %s", err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}
