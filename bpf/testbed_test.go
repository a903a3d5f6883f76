/*
Copyright The Herald Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package bpf

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// The test traffic stays inside two network namespaces created here, "node"
// and "client", joined by a veth pair, with addresses from 198.18.0.0/15
// (RFC 2544 benchmarking range) only.

func requireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Fatal("needs root (network namespaces, BPF); run it as root, as make test does")
	}
}

var testbedSeq atomic.Uint32

type testbed struct {
	node, client   netns.NsHandle
	nodeIfindex    int
	nodeMAC        net.HardwareAddr
	clientIface    *net.Interface
	nodeIP         netip.Addr // configured on the node's veth: the kernel answers
	clientIP       netip.Addr
	vip, otherIP   netip.Addr // not configured anywhere
	nodeName, peer string
}

// newTestbed creates the namespaces and the veth pair in 198.18.N.0/24, N
// unique per testbed in this process.
func newTestbed(tb testing.TB) *testbed {
	tb.Helper()
	requireRoot(tb)
	n := byte(testbedSeq.Add(1))
	prefix := func(host byte) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, n, host}) }
	tbd := &testbed{
		node:     netns.None(),
		client:   netns.None(),
		nodeIP:   prefix(1),
		clientIP: prefix(2),
		vip:      prefix(200),
		otherIP:  prefix(201),
		nodeName: "hnode0",
		peer:     "hclient0",
	}
	base := fmt.Sprintf("herald-bpf-%d-%d", os.Getpid(), n)

	var err error
	func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		orig, gerr := netns.Get()
		if gerr != nil {
			err = gerr
			return
		}
		defer orig.Close()
		// NewNamed switches the thread into the new namespace; switch back
		// after each one.
		if tbd.node, err = netns.NewNamed(base + "-node"); err != nil {
			return
		}
		if err = netns.Set(orig); err != nil {
			panic(err) // thread stuck in a foreign namespace
		}
		if tbd.client, err = netns.NewNamed(base + "-client"); err != nil {
			return
		}
		if err = netns.Set(orig); err != nil {
			panic(err)
		}
	}()
	tb.Cleanup(func() {
		if tbd.node.IsOpen() {
			tbd.node.Close()
			_ = netns.DeleteNamed(base + "-node")
		}
		if tbd.client.IsOpen() {
			tbd.client.Close()
			_ = netns.DeleteNamed(base + "-client")
		}
	})
	if err != nil {
		tb.Fatalf("creating namespaces: %v", err)
	}

	nh, err := netlink.NewHandleAt(tbd.node)
	if err != nil {
		tb.Fatal(err)
	}
	defer nh.Close()
	ch, err := netlink.NewHandleAt(tbd.client)
	if err != nil {
		tb.Fatal(err)
	}
	defer ch.Close()

	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: tbd.nodeName},
		PeerName:      tbd.peer,
		PeerNamespace: netlink.NsFd(tbd.client),
	}
	if err := nh.LinkAdd(veth); err != nil {
		tb.Fatalf("creating veth: %v", err)
	}
	setup := func(h *netlink.Handle, name string, addr netip.Addr) netlink.Link {
		l, err := h.LinkByName(name)
		if err != nil {
			tb.Fatal(err)
		}
		a, _ := netlink.ParseAddr(netip.PrefixFrom(addr, 24).String())
		if err := h.AddrAdd(l, a); err != nil {
			tb.Fatalf("adding %v to %s: %v", addr, name, err)
		}
		if err := h.LinkSetUp(l); err != nil {
			tb.Fatal(err)
		}
		return l
	}
	nl := setup(nh, tbd.nodeName, tbd.nodeIP)
	cl := setup(ch, tbd.peer, tbd.clientIP)
	tbd.nodeIfindex = nl.Attrs().Index
	tbd.nodeMAC = nl.Attrs().HardwareAddr
	tbd.clientIface = &net.Interface{
		Index:        cl.Attrs().Index,
		Name:         tbd.peer,
		HardwareAddr: cl.Attrs().HardwareAddr,
		MTU:          cl.Attrs().MTU,
	}
	tbd.waitReady(tb)
	return tbd
}

// waitReady waits until the kernel of the node answers ARP for its address.
// Until the link watcher has activated the veths' qdiscs (up to a second
// after they come up), both ends drop what they send.
func (tbd *testbed) waitReady(tb testing.TB) {
	tb.Helper()
	ac := tbd.arpClient(tb)
	defer ac.c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := ac.resolve(tbd.nodeIP, 50*time.Millisecond)
		if err == nil {
			return
		}
		if !errors.Is(err, errNoReply) || time.Now().After(deadline) {
			tb.Fatalf("the node's kernel does not answer ARP for %v: %v", tbd.nodeIP, err)
		}
	}
}

// inNetns runs f on a thread switched into ns.
func inNetns(ns netns.NsHandle, f func() error) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	if err := netns.Set(ns); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	ferr := f()
	if err := netns.Set(orig); err != nil {
		// Leave the thread locked: the runtime discards it when the
		// goroutine exits.
		return errors.Join(ferr, err)
	}
	runtime.UnlockOSThread()
	return ferr
}

func (tbd *testbed) attach(tb testing.TB, r *Responder) {
	tb.Helper()
	if err := inNetns(tbd.node, func() error { return r.Attach(tbd.nodeIfindex) }); err != nil {
		tb.Fatalf("attach: %v", err)
	}
}

// passXDPOnClient attaches an XDP_PASS program to the client's veth. A
// native XDP_TX on the node's veth reaches the client only if the client's
// veth has NAPI enabled, which an XDP program (or GRO) does.
func (tbd *testbed) passXDPOnClient(tb testing.TB) {
	tb.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:         ebpf.XDP,
		License:      "MIT",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2 /* XDP_PASS */), asm.Return()},
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { prog.Close() })
	var l link.Link
	err = inNetns(tbd.client, func() (err error) {
		l, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: tbd.clientIface.Index, Flags: link.XDPDriverMode})
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
}

// arpClient is an ARP client on the client's veth.
type arpClient struct {
	tbd *testbed
	c   *arp.Client
}

func (tbd *testbed) arpClient(tb testing.TB) *arpClient {
	tb.Helper()
	var c *arp.Client
	err := inNetns(tbd.client, func() (err error) {
		// The raw socket belongs to the namespace it is created in.
		c, err = arp.Dial(tbd.clientIface)
		return err
	})
	if err != nil {
		tb.Fatalf("arp.Dial: %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	return &arpClient{tbd: tbd, c: c}
}

var errNoReply = errors.New("no ARP reply")

// resolve sends one ARP request for ip and waits up to timeout for the
// reply. It checks the whole reply (Ethernet and ARP addresses) and returns
// the MAC it announces, or errNoReply.
func (ac *arpClient) resolve(ip netip.Addr, timeout time.Duration) (net.HardwareAddr, error) {
	if err := ac.c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	if err := ac.c.Request(ip); err != nil {
		return nil, err
	}
	return ac.readReply(ip)
}

func (ac *arpClient) readReply(ip netip.Addr) (net.HardwareAddr, error) {
	me := ac.tbd.clientIface.HardwareAddr
	for {
		p, eth, err := ac.c.Read()
		if err != nil {
			var nerr net.Error
			if errors.As(err, &nerr) && nerr.Timeout() {
				return nil, errNoReply
			}
			return nil, err
		}
		if p.Operation != arp.OperationReply || p.SenderIP != ip {
			continue
		}
		switch {
		case eth.EtherType != ethernet.EtherTypeARP:
			return nil, fmt.Errorf("reply ethertype %v", eth.EtherType)
		case eth.Destination.String() != me.String():
			return nil, fmt.Errorf("reply to Ethernet %v, want %v", eth.Destination, me)
		case eth.Source.String() != p.SenderHardwareAddr.String():
			return nil, fmt.Errorf("reply from Ethernet %v but ARP sender %v", eth.Source, p.SenderHardwareAddr)
		case p.TargetHardwareAddr.String() != me.String() || p.TargetIP != ac.tbd.clientIP:
			return nil, fmt.Errorf("reply target %v/%v, want %v/%v", p.TargetHardwareAddr, p.TargetIP, me, ac.tbd.clientIP)
		}
		return p.SenderHardwareAddr, nil
	}
}

// send writes a hand-made ARP packet (broadcast).
func (ac *arpClient) send(op arp.Operation, senderIP, targetIP netip.Addr) error {
	p, err := arp.NewPacket(op, ac.tbd.clientIface.HardwareAddr, senderIP, ethernet.Broadcast, targetIP)
	if err != nil {
		return err
	}
	return ac.c.WriteTo(p, ethernet.Broadcast)
}
