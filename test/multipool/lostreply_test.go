package multipool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	cnitypes "github.com/containernetworking/cni/pkg/types"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
)

// killingProxy sits between herald-ipam and a node's agent: when the agent
// answers an ADD, the proxy kills the agent with SIGKILL and drops the
// answer. The address is allocated and journaled, and nobody was told.
type killingProxy struct {
	socket string
	mu     sync.Mutex
	lost   []netip.Addr // addresses of the dropped answers
}

func startKillingProxy(t *testing.T, n *node) *killingProxy {
	t.Helper()
	kp := &killingProxy{socket: filepath.Join(n.dir, "killing-proxy.sock")}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: "herald-agent"})
	rp.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", n.socket)
	}}
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.URL.Path != ipamv1.PathAdd || resp.StatusCode != http.StatusOK {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		var got ipamv1.AddResponse
		if err := json.Unmarshal(body, &got); err != nil {
			return err
		}
		if err := n.agent.Kill9(); err != nil {
			return err
		}
		kp.mu.Lock()
		for _, c := range got.IPs {
			kp.lost = append(kp.lost, netip.MustParsePrefix(c.Address).Addr())
		}
		kp.mu.Unlock()
		return errors.New("the agent was killed before its answer reached the plugin")
	}
	l, err := net.Listen("unix", kp.socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rp}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return kp
}

func (kp *killingProxy) lostAddrs() []netip.Addr {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	return slices.Clone(kp.lost)
}

// TestKillBetweenAllocationAndReply: the agent is killed after it
// allocated and journaled a pod's addresses, before the runtime heard of
// them; the runtime's ADD fails. For one pod the runtime DELs the failed
// sandbox (queued: the agent is down); for the other it never does (it
// crashed too) and only its garbage collection knows. The restarted agent
// never hands out an address it journaled for a sandbox that may exist;
// the queued DEL and the GC release them; nothing leaks.
func TestKillBetweenAllocationAndReply(t *testing.T) {
	logAgentsOnFailure(t)
	n := nodes[0]
	ns := namespace(t, "lostreply", nil)
	kp := startKillingProxy(t, n)
	viaProxy, err := n.runtime(kp.socket, "cni-cache-proxy")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	// ADD through the proxy until an answer was dropped (the agent may
	// still be starting: those ADDs allocate nothing).
	loseReply := func(p *pod) []netip.Addr {
		before := len(kp.lostAddrs())
		waitFor(t, timeout, func() (bool, string) {
			if !n.agent.Running() {
				if err := n.agent.Start(); err != nil {
					return false, err.Error()
				}
			}
			err := p.node.rt.Del(ctx, p.Pod) // nothing yet, or a refused ADD's leftovers
			if err == nil {
				_, err = viaProxy.Add(ctx, p.Pod)
			}
			return len(kp.lostAddrs()) > before, fmt.Sprintf("ADD through the proxy: %v", err)
		})
		return kp.lostAddrs()[before:]
	}

	a := newPod(t, n, ns, "a", nil)
	lostA := loseReply(a)
	staleA := a.Attachment()
	// The runtime cleans up the failed sandbox: the agent is down, so the
	// plugin queues the DEL.
	if err := n.rt.Del(ctx, a.Pod); err != nil {
		t.Fatalf("DEL while the agent is down: %v", err)
	}

	b := newPod(t, n, ns, "b", nil)
	lostB := loseReply(b) // and no DEL for b's sandbox
	staleB := b.Attachment()
	t.Logf("answers dropped: a %v, b %v", lostA, lostB)

	if err := n.agent.Start(); err != nil {
		t.Fatal(err)
	}
	// New sandboxes for both pods, as kubelet makes after a failed one.
	for _, p := range []*pod{a, b} {
		p.ContainerID += "-2"
		waitFor(t, timeout, func() (bool, string) {
			err := p.add(ctx)
			if err != nil {
				_ = n.rt.Del(ctx, p.Pod)
			}
			return err == nil, fmt.Sprintf("ADD of %s's new sandbox: %v", p.Name, err)
		})
		for _, ip := range p.IPs() {
			if slices.Contains(lostB, ip) {
				t.Fatalf("%s's new sandbox got %s, journaled for b's first sandbox, which the runtime may still have", p.Name, ip)
			}
		}
	}

	// The queued DEL released a's first addresses; b's first are held
	// until the runtime's GC says that sandbox is gone.
	holders := func() (map[netip.Addr]string, error) {
		rows, err := n.allocations()
		if err != nil {
			return nil, err
		}
		out := map[netip.Addr]string{}
		for _, r := range rows {
			if r.PodNS == ns {
				out[r.IP] = r.ContainerID
			}
		}
		return out, nil
	}
	waitFor(t, timeout, func() (bool, string) {
		h, err := holders()
		if err != nil {
			return false, err.Error()
		}
		for _, ip := range lostA {
			if h[ip] == staleA.ContainerID {
				return false, fmt.Sprintf("%s still held by a's failed sandbox (queued DEL not replayed)", ip)
			}
		}
		for _, ip := range lostB {
			if h[ip] != staleB.ContainerID {
				return false, fmt.Sprintf("%s held by %q, want b's first sandbox until GC", ip, h[ip])
			}
		}
		return true, ""
	})

	// The runtime's GC: every sandbox on the node but b's first.
	rows, err := n.allocations()
	if err != nil {
		t.Fatal(err)
	}
	var valid []cnitypes.GCAttachment
	for _, r := range rows {
		if r.ContainerID != staleB.ContainerID {
			valid = append(valid, cnitypes.GCAttachment{ContainerID: r.ContainerID, IfName: r.IfName})
		}
	}
	if err := n.rt.DelegateGC(ctx, valid...); err != nil {
		t.Fatalf("GC: %v", err)
	}
	h, err := holders()
	if err != nil {
		t.Fatal(err)
	}
	want := map[netip.Addr]string{}
	for _, p := range []*pod{a, b} {
		for _, ip := range p.IPs() {
			want[ip] = p.ContainerID
		}
	}
	if !maps.Equal(h, want) {
		t.Fatalf("namespace %s holds %v after GC, want exactly the live sandboxes' %v", ns, h, want)
	}
	a.stop(t)
	b.stop(t)
}
