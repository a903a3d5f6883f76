// Package backends gives the nodes of a test LAN the traffic path of a
// cluster without Cilium: each node gets one pod (a namespace behind it,
// netlab.AddPod) running httpecho, and runs the real kube-proxy in its own
// namespace. A connection to a VIP that reaches a node is DNATed there by
// kube-proxy to a pod, on that node or another, and the pod answers with
// its node's name.
//
// There is no kube-controller-manager and there are no kubelets, so
// Services are selector-less and their EndpointSlices are written here
// (SetEndpoints). Curl fetches a VIP with the real curl from any namespace
// of the LAN: a client host, a router.
//
// The L2 and BGP suites share it. Needs root.
package backends

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/test/cluster"
	"github.com/heraldlb/herald/test/netlab"
)

// answerPrefix starts every answer of a pod's httpecho: "pod-<node>: ...".
const answerPrefix = "pod-"

// Options say where the backends go and how they are reached.
type Options struct {
	Cluster *cluster.Cluster // kube-proxy's apiserver
	LAN     *netlab.LAN      // the nodes' LAN, where the pods are added
	// WorkDir holds the httpecho binary (bin/) and, per node, the logs of
	// httpecho and kube-proxy (<node>/, created if missing).
	WorkDir string
	// Nodes are the LAN's hosts that are nodes; their names are the
	// Kubernetes Node names. The i-th node's pod is named pod<i+1>.
	Nodes []string
	// PodNet returns the i-th node's pod networks: an IPv4 /24 inside
	// 198.18.0.0/15 and an optional IPv6 /64 inside fd00::/8 (zero for
	// none), see netlab.AddPod.
	PodNet func(i int) (net4, net6 netip.Prefix)
	Port   int // httpecho's port in every pod, e.g. 8080
	// KubeProxyMode is kube-proxy's --proxy-mode: "" (iptables) or
	// "nftables".
	KubeProxyMode string
}

// Backends are the pods, their httpecho and the nodes' kube-proxies.
type Backends struct {
	// Pods are the pods by node name.
	Pods map[string]*netlab.Pod
	// Port is httpecho's port, the EndpointSlices' port.
	Port int

	mu    sync.Mutex
	stops []func() // last first
}

// Start builds httpecho, gives every node its pod with httpecho in it and
// starts kube-proxy on every node, waiting until each is healthy. On error
// it stops what it started (the pods' namespaces are the LAN's: its
// teardown removes them).
func Start(o Options) (*Backends, error) {
	if o.Cluster == nil || o.LAN == nil || o.PodNet == nil || o.WorkDir == "" || o.Port == 0 {
		return nil, errors.New("backends: Options need Cluster, LAN, PodNet, WorkDir and Port")
	}
	root := cluster.RepoRoot()
	if root == "" {
		return nil, errors.New("backends: cannot find the repository root")
	}
	bin := filepath.Join(o.WorkDir, "bin", "httpecho")
	build := exec.Command("go", "build", "-o", bin, "./test/netlab/cmd/httpecho")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("backends: building httpecho: %w\n%s", err, out)
	}
	b := &Backends{Pods: map[string]*netlab.Pod{}, Port: o.Port}
	for i, name := range o.Nodes {
		if err := b.startNode(o, bin, i, name); err != nil {
			b.Stop()
			return nil, err
		}
	}
	return b, nil
}

// startNode adds the i-th node's pod, starts httpecho in it and kube-proxy
// on the node.
func (b *Backends) startNode(o Options, bin string, i int, name string) error {
	host := o.LAN.Host(name)
	if host == nil {
		return fmt.Errorf("backends: no host %s on the LAN", name)
	}
	dir := filepath.Join(o.WorkDir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	net4, net6 := o.PodNet(i)
	p, err := o.LAN.AddPod(name, fmt.Sprintf("pod%d", i+1), net4, net6)
	if err != nil {
		return err
	}
	b.Pods[name] = p

	logf, err := os.Create(filepath.Join(dir, "httpecho.log"))
	if err != nil {
		return err
	}
	echo := exec.Command("ip", "netns", "exec", p.Netns, bin,
		"-listen", fmt.Sprintf(":%d", o.Port), "-name", answerPrefix+name)
	echo.Stdout, echo.Stderr = logf, logf
	// If the test process dies without its teardown, its backends go too
	// rather than keep a pod namespace alive.
	echo.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := echo.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("backends: starting httpecho in %s: %w", p.Netns, err)
	}
	b.onStop(func() { _ = echo.Process.Kill(); _ = echo.Wait(); logf.Close() })

	kp, err := o.Cluster.StartKubeProxy(cluster.KubeProxyOptions{
		Netns: host.Netns, Node: name, HealthzIP: host.IP.String(), Dir: dir, Mode: o.KubeProxyMode,
	})
	if err != nil {
		return err
	}
	b.onStop(func() { _ = kp.Stop() })
	return nil
}

func (b *Backends) onStop(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stops = append(b.stops, f)
}

// Stop kills the httpecho processes and stops the kube-proxies (their rules
// stay in the nodes' namespaces, which the LAN's teardown removes). It can
// be called more than once.
func (b *Backends) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := len(b.stops) - 1; i >= 0; i-- {
		b.stops[i]()
	}
	b.stops = nil
}

// SetEndpoints writes the EndpointSlice <svc>-pods of the selector-less
// Service ns/svc, creating it the first time: the pods of the nodes, of the
// family's address, ready, on their node (externalTrafficPolicy Local and
// Herald read nodeName), port "http" b.Port/TCP. No nodes makes it empty,
// which leaves the Service without a ready endpoint.
func (b *Backends) SetEndpoints(ctx context.Context, kube kubernetes.Interface, ns, svc string, family corev1.IPFamily, nodes ...string) error {
	addrType := discoveryv1.AddressTypeIPv4
	if family == corev1.IPv6Protocol {
		addrType = discoveryv1.AddressTypeIPv6
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:   svc + "-pods",
			Labels: map[string]string{discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: "herald-test"},
		},
		AddressType: addrType,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(b.Port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints:   []discoveryv1.Endpoint{},
	}
	for _, n := range nodes {
		p := b.Pods[n]
		if p == nil {
			return fmt.Errorf("backends: no pod on %s", n)
		}
		ip := p.IP
		if family == corev1.IPv6Protocol {
			ip = p.IP6
		}
		if !ip.IsValid() {
			return fmt.Errorf("backends: the pod on %s has no %s address", n, family)
		}
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{ip.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			NodeName:   ptr.To(n),
		})
	}
	api := kube.DiscoveryV1().EndpointSlices(ns)
	cur, err := api.Get(ctx, slice.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = api.Create(ctx, slice, metav1.CreateOptions{})
	case err == nil:
		slice.ResourceVersion = cur.ResourceVersion
		_, err = api.Update(ctx, slice, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("backends: writing EndpointSlice %s/%s: %w", ns, slice.Name, err)
	}
	return nil
}

// Curl fetches http://vip/ from the namespace netns with the real curl,
// giving up after timeout, and returns its output, trimmed (the answer, or
// curl's error message).
func Curl(netns string, vip netip.Addr, timeout time.Duration) (string, error) {
	host := vip.String()
	if vip.Is6() {
		host = "[" + host + "]" // -g (no URL globbing) leaves the brackets alone
	}
	out, err := exec.Command("ip", "netns", "exec", netns, "curl", "-sS", "-g",
		"--max-time", fmt.Sprintf("%.1f", timeout.Seconds()), "http://"+host+"/").CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// ServedBy returns the node whose pod gave answer (a Curl output), and
// false if answer is not a pod's.
func ServedBy(answer string) (node string, ok bool) {
	rest, ok := strings.CutPrefix(answer, answerPrefix)
	if !ok {
		return "", false
	}
	node, _, ok = strings.Cut(rest, ":")
	if !ok || node == "" {
		return "", false
	}
	return node, true
}
