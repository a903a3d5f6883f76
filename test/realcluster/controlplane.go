package realcluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The control plane runs in the root network namespace: etcd, the
// controller-manager and the scheduler on loopback, kube-apiserver on the
// LAN's .1, where the nodes reach it. One of each, as a single
// control-plane node runs them (no leader election).

// controlPlane knows how to run the control plane's daemons.
type controlPlane struct {
	p         paths
	bin       binaries
	apiAddr   netip.Addr
	etcdPort  int // client port on 127.0.0.1; the peer port is the next one
	kcmPort   int // secure ports on 127.0.0.1
	schedPort int
}

func (c controlPlane) server() string {
	return "https://" + net.JoinHostPort(c.apiAddr.String(), strconv.Itoa(APIServerPort))
}

func (c controlPlane) etcd() daemon {
	url := fmt.Sprintf("http://127.0.0.1:%d", c.etcdPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", c.etcdPort+1)
	return daemon{name: "etcd", dir: c.p.controlPlane(), argv: []string{
		c.bin.etcd, "--name=herald", "--data-dir=" + c.p.controlPlane() + "/etcd",
		"--listen-client-urls=" + url, "--advertise-client-urls=" + url,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=herald=" + peer, "--initial-cluster-state=new",
		"--listen-metrics-urls=", "--logger=zap", "--log-outputs=stderr",
	}}
}

func (c controlPlane) apiserver() daemon {
	return daemon{name: "kube-apiserver", dir: c.p.controlPlane(),
		argv: c.apiserverArgv(c.apiAddr.String(), c.apiAddr, fmt.Sprintf("http://127.0.0.1:%d", c.etcdPort))}
}

// apiserverArgv is kube-apiserver's command line: bound to bind, known to
// the cluster (the kubernetes Service's endpoints) as advertise.
func (c controlPlane) apiserverArgv(bind string, advertise netip.Addr, etcd string) []string {
	k := c.p.pki()
	return []string{
		c.bin.apiserver,
		"--etcd-servers=" + etcd,
		"--bind-address=" + bind, "--advertise-address=" + advertise.String(),
		"--secure-port=" + strconv.Itoa(APIServerPort),
		"--tls-cert-file=" + k.Cert("apiserver"), "--tls-private-key-file=" + k.Key("apiserver"),
		"--client-ca-file=" + k.CA(),
		"--kubelet-client-certificate=" + k.Cert("apiserver-kubelet-client"),
		"--kubelet-client-key=" + k.Key("apiserver-kubelet-client"),
		// Nodes have no DNS names: logs, exec and port-forward go to
		// their addresses.
		"--kubelet-preferred-address-types=InternalIP",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + k.Path("sa.pub"),
		"--service-account-signing-key-file=" + k.Key("sa"),
		// Node: each kubelet may touch only its own Node and Pods;
		// RBAC: the chart's roles are what the agents get.
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true",
		"--service-cluster-ip-range=" + ServiceCIDR.String() + "," + ServiceCIDR6.String(),
		"--profiling=false",
	}
}

func (c controlPlane) controllerManager() daemon {
	k := c.p.pki()
	kc := c.p.kubeconfig("kube-controller-manager")
	return daemon{name: "kube-controller-manager", dir: c.p.controlPlane(), argv: []string{
		c.bin.controllerManager,
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(c.kcmPort),
		"--leader-elect=false",
		// Every controller with its own service account, as kubeadm runs it.
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + k.Key("sa"),
		"--root-ca-file=" + k.CA(),
		"--cluster-signing-cert-file=" + k.CA(), "--cluster-signing-key-file=" + k.Key("ca"),
		// Pod CIDRs are Herald's (multi-pool IPAM), not the controller's.
		"--allocate-node-cidrs=false",
		"--service-cluster-ip-range=" + ServiceCIDR.String() + "," + ServiceCIDR6.String(),
		"--profiling=false",
	}}
}

func (c controlPlane) scheduler() daemon {
	kc := c.p.kubeconfig("kube-scheduler")
	return daemon{name: "kube-scheduler", dir: c.p.controlPlane(), argv: []string{
		c.bin.scheduler,
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(c.schedPort),
		"--leader-elect=false", "--profiling=false",
	}}
}

// daemons in start order.
func (c controlPlane) daemons() []daemon {
	return []daemon{c.etcd(), c.apiserver(), c.controllerManager(), c.scheduler()}
}

// waitHealthy polls an HTTPS health endpoint (any certificate: only the
// answer matters) until it answers 200, or the daemon exits.
func waitHealthy(ctx context.Context, d daemon, url string) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	var last error
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s: %s", url, resp.Status)
		}
		last = err
		if _, ok := d.pid(); !ok {
			return fmt.Errorf("%s exited:\n%s", d.name, tailFile(d.Log(), 30))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy: %v\n%s", d.name, last, tailFile(d.Log(), 30))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *Cluster) startControlPlane(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	health := map[string]string{
		"kube-apiserver":          c.Server + "/readyz",
		"kube-controller-manager": fmt.Sprintf("https://127.0.0.1:%d/healthz", c.cp.kcmPort),
		"kube-scheduler":          fmt.Sprintf("https://127.0.0.1:%d/healthz", c.cp.schedPort),
	}
	for _, d := range c.cp.daemons() {
		if err := d.start(); err != nil {
			return err
		}
		if d.name == "etcd" {
			if err := waitEtcd(cctx, d, c.cp.etcdPort); err != nil {
				return err
			}
			continue
		}
		if err := waitHealthy(cctx, d, health[d.name]); err != nil {
			return err
		}
	}
	return nil
}

func waitEtcd(ctx context.Context, d daemon, port int) error {
	url := fmt.Sprintf("http://127.0.0.1:%d/health", port)
	for {
		out, err := exec.CommandContext(ctx, "curl", "-fsS", "--max-time", "2", url).Output()
		if err == nil && bytes.Contains(out, []byte(`"health":"true"`)) {
			return nil
		}
		if _, ok := d.pid(); !ok {
			return fmt.Errorf("etcd exited:\n%s", tailFile(d.Log(), 30))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("etcd not healthy:\n%s", tailFile(d.Log(), 30))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *Cluster) connect() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 200, 400
	c.RESTConfig = cfg
	c.Client, err = kubernetes.NewForConfig(cfg)
	return err
}
