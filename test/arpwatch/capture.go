// Package arpwatch watches and drives address resolution on a test LAN the
// way a host on it would: it captures the ARP (IPv4) and Neighbor
// Advertisement (IPv6) frames arriving on a network namespace's eth0, sends
// who-has requests and neighbor solicitations from there, and classifies
// what came back: which MACs answered a request, whether two nodes answered
// the same one, which frames were gratuitous announcements.
//
// The end-to-end suites use it to check, from outside the agents, what an
// L2 announcement looks like on the wire. Frames are read with AF_PACKET, not
// through the kernel's neighbour table: the table keeps one MAC per address
// and hides exactly what the tests look for (a second answer, a malformed
// reply, an answer that lasted a few milliseconds).
//
// Typical use from a TestMain, with a test/netlab host as the client:
//
//	client, err := arpwatch.OpenARPClient(clientHost.Netns, clientHost.IP)
//	if err != nil { ... }
//	defer client.Close()
//
//	res, err := client.Probe(vip)       // who answers now?
//	start := client.Mark()               // or: watch a whole fault
//	prober := client.StartMarkedProber(vip, 20*time.Millisecond)
//	... kill an agent ...
//	marks, err := prober.Stop()
//	time.Sleep(arpwatch.ProbeWindow)
//	frames, err := client.Since(start)
//	windows, doubles := client.DoubleAnswers(frames, vip, marks)
//
// Needs root (network namespaces, AF_PACKET).
package arpwatch

import (
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/mdlayher/packet"

	"github.com/heraldlb/herald/test/netlab"
)

// Device is the interface captures open in their namespace: every test/netlab
// host, node and client alike, has its LAN port there.
const Device = "eth0"

// Capture records the frames of one EtherType arriving on a namespace's
// eth0, from the moment it is opened until Close, and sends frames from
// there. It keeps the whole run in memory so that a test can look back at
// any stretch of it: Mark notes a position, Since returns what came after.
// F is the parsed frame type; the parse function passed to OpenCapture
// decides which frames are kept.
type Capture[F any] struct {
	conn *packet.Conn
	mac  net.HardwareAddr

	mu      sync.Mutex
	frames  []F
	readErr error
	done    chan struct{}
}

// OpenCapture opens an AF_PACKET socket for etherType on eth0 inside the
// network namespace netns (the socket stays in that namespace, whichever
// thread reads it) and starts recording. For every frame read, parse gets
// the raw bytes, the position the frame would take in the capture and its
// arrival time, and returns the frame to keep, or false to drop it (a
// dropped frame takes no position).
func OpenCapture[F any](netns string, etherType int, parse func(b []byte, seq int, at time.Time) (F, bool)) (*Capture[F], error) {
	c := &Capture[F]{done: make(chan struct{})}
	err := netlab.InNetns(netns, func() error {
		ifi, err := net.InterfaceByName(Device)
		if err != nil {
			return err
		}
		conn, err := packet.Listen(ifi, packet.Raw, etherType, nil)
		if err != nil {
			return fmt.Errorf("AF_PACKET socket on %s: %w", Device, err)
		}
		c.conn, c.mac = conn, ifi.HardwareAddr
		return nil
	})
	if err != nil {
		return nil, err
	}
	go func() {
		defer close(c.done)
		buf := make([]byte, 2048)
		for {
			n, _, err := c.conn.ReadFrom(buf)
			if err != nil {
				c.mu.Lock()
				c.readErr = err
				c.mu.Unlock()
				return
			}
			c.mu.Lock()
			if f, ok := parse(buf[:n], len(c.frames), time.Now()); ok {
				c.frames = append(c.frames, f)
			}
			c.mu.Unlock()
		}
	}()
	return c, nil
}

// Close stops the capture and waits for its reader to return. The frames
// captured so far stay readable with Since.
func (c *Capture[F]) Close() {
	_ = c.conn.Close()
	<-c.done
}

// Mark returns the capture position: frames captured from now on have a
// position (seq) >= Mark. The socket does not see the frames it sends
// itself, so a mark taken just before sending delimits what came after.
func (c *Capture[F]) Mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.frames)
}

// Since returns the frames captured from position seq on (a copy), and the
// capture's read error if it stopped.
func (c *Capture[F]) Since(seq int) ([]F, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.frames[min(seq, len(c.frames)):]), c.readErr
}

// Send writes frame, a whole Ethernet frame, out of the captured
// interface, addressed to dst.
func (c *Capture[F]) Send(frame []byte, dst net.HardwareAddr) error {
	_, err := c.conn.WriteTo(frame, &packet.Addr{HardwareAddr: dst})
	return err
}
