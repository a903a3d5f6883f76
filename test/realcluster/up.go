package realcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/heraldlb/herald/test/netlab"
)

// Bringing a cluster up, step by step: the machine claimed, the LAN, what
// Down will need, then the control plane and the nodes.

// Up brings a cluster up in dir (created; an earlier cluster there, or
// one left by an interrupted run, is torn down first).
func Up(ctx context.Context, dir string, o Options) (*Cluster, error) {
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	if o.HA != nil && o.Nodes < 3 {
		return nil, fmt.Errorf("realcluster: an HA control plane needs 3 nodes, not %d", o.Nodes)
	}
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	if dir, err = claim(dir, o.Log); err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, p: paths{dir: dir}, bin: bin}
	c.state.Nodes = NodeNames(o.Nodes)
	c.state.HA = o.HA != nil
	start := time.Now()
	if err := c.up(ctx, o); err != nil {
		if derr := Down(dir); derr != nil {
			err = errors.Join(err, derr)
		}
		return nil, err
	}
	o.Log("up in %s", time.Since(start).Round(100*time.Millisecond))
	return c, nil
}

// claim makes dir (absolute) the machine's one cluster: names and
// addresses are fixed, so another one (a demo left running) goes first,
// and so does whatever an interrupted run left in dir.
func claim(dir string, log func(string, ...any)) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if b, err := os.ReadFile(runningMarker); err == nil && strings.TrimSpace(string(b)) != dir {
		other := strings.TrimSpace(string(b))
		log("tearing down the cluster running in %s", other)
		if err := Down(other); err != nil {
			return "", fmt.Errorf("realcluster: tearing down the cluster in %s: %w", other, err)
		}
	}
	if err := Down(dir); err != nil {
		return "", fmt.Errorf("realcluster: tearing down what was in %s: %w", dir, err)
	}
	if err := os.WriteFile(runningMarker, []byte(dir+"\n"), 0o644); err != nil {
		return "", err
	}
	return dir, os.MkdirAll(dir, 0o755)
}

// up brings the claimed cluster up; Up tears down what it started if it
// fails.
func (c *Cluster) up(ctx context.Context, o Options) error {
	lan, err := newLAN()
	if err != nil {
		return err
	}
	if err := c.wireLAN(lan); err != nil {
		return err
	}
	if err := c.recordHost(); err != nil {
		return err
	}
	if err := c.load(lan); err != nil {
		return err
	}
	if c.state.HA {
		return c.upHA(ctx, o)
	}
	return c.upSingle(ctx, o)
}

// wireLAN puts the nodes, the client and the router on the LAN, routes
// the Service ranges to the host, and keeps them off the real network.
func (c *Cluster) wireLAN(lan *netlab.LAN) error {
	if err := lan.Setup(c.state.Nodes...); err != nil {
		return fmt.Errorf("realcluster: LAN: %w", err)
	}
	if _, err := lan.Add(ClientHost, clientN); err != nil {
		return err
	}
	if _, err := lan.Add(RouterHost, routerN); err != nil {
		return err
	}
	for _, name := range c.state.Nodes {
		if err := routeServices(lan.Host(name).Netns, lan.RootIP()); err != nil {
			return err
		}
	}
	return fenceServiceRanges("add")
}

// recordHost saves what Down needs: the host's sysctls before the
// kubelets change them, the mount points it creates for the nodes' own
// paths, and the ports chosen for the control plane.
func (c *Cluster) recordHost() error {
	c.state.Sysctls = map[string]string{}
	for _, s := range kubeletSysctls {
		if b, err := os.ReadFile("/proc/sys/" + s); err == nil {
			c.state.Sysctls[s] = strings.TrimSpace(string(b))
		}
	}
	var err error
	if c.state.HostDirs, err = makeMountPoints(nodePaths); err != nil {
		return errors.Join(err, c.saveState())
	}
	if c.state.EtcdPort, err = freePorts(2); err != nil {
		return err
	}
	if c.state.KCMPort, err = freePorts(1); err != nil {
		return err
	}
	if c.state.SchedPort, err = freePorts(1); err != nil {
		return err
	}
	return c.saveState()
}

// upSingle starts the one control plane on the host, then the nodes.
func (c *Cluster) upSingle(ctx context.Context, o Options) error {
	o.Log("control plane")
	if err := c.ensurePKI(); err != nil {
		return err
	}
	if err := c.startControlPlane(ctx); err != nil {
		return err
	}
	if err := c.connect(); err != nil {
		return err
	}
	for _, n := range c.Nodes {
		o.Log("node %s: namespaces, containerd", n.Name)
		if err := c.prepareNode(ctx, n, o); err != nil {
			return err
		}
	}
	for _, n := range c.Nodes {
		o.Log("node %s: loading %d images", n.Name, len(o.Images))
		for _, img := range o.Images {
			if err := c.LoadImage(ctx, n, img); err != nil {
				return err
			}
		}
	}
	for _, n := range c.Nodes {
		o.Log("node %s: kubelet, kube-proxy", n.Name)
		if err := n.StartKubelet(ctx); err != nil {
			return err
		}
		if err := n.StartKubeProxy(ctx); err != nil {
			return err
		}
	}
	return c.waitNodesRegistered(ctx)
}
