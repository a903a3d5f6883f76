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
//	marks, frames, err := prober.Finish(start)
//	windows, doubles := client.DoubleAnswers(frames, vip, marks)
//
// Needs root (network namespaces, AF_PACKET).
package arpwatch

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"

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

	raw syscall.RawConn

	mu sync.Mutex
	// recorded is signalled (with mu) each time the reader took a frame
	// off the socket: Mark waits on it.
	recorded *sync.Cond
	frames   []F
	readErr  error
	done     chan struct{}
}

// OpenCapture opens an AF_PACKET socket for etherType on eth0 inside the
// network namespace netns (the socket stays in that namespace, whichever
// thread reads it) and starts recording. For every frame read, parse gets
// the raw bytes, the position the frame would take in the capture and its
// arrival time, and returns the frame to keep, or false to drop it (a
// dropped frame takes no position).
//
// The arrival time is the kernel's (SO_TIMESTAMPNS): when the frame was
// received, not when the reader got to it. On a busy machine the reader
// can lag by tens of milliseconds, and a gap between two replies measured
// at the reader would be that much too long or too short. OpenCapture
// returns once the kernel stamps frames on receipt (awaitReceiveStamps), so
// that this holds from the first frame on.
func OpenCapture[F any](netns string, etherType int, parse func(b []byte, seq int, at time.Time) (F, bool)) (*Capture[F], error) {
	c := &Capture[F]{done: make(chan struct{})}
	c.recorded = sync.NewCond(&c.mu)
	err := netlab.InNetns(netns, func() error {
		ifi, err := net.InterfaceByName(Device)
		if err != nil {
			return err
		}
		conn, err := packet.Listen(ifi, packet.Raw, etherType, nil)
		if err != nil {
			return fmt.Errorf("AF_PACKET socket on %s: %w", Device, err)
		}
		raw, err := conn.SyscallConn()
		if err == nil {
			err = enableTimestamps(raw)
		}
		if err != nil {
			_ = conn.Close()
			return err
		}
		c.conn, c.raw, c.mac = conn, raw, ifi.HardwareAddr
		return nil
	})
	if err == nil {
		err = awaitReceiveStamps(10 * time.Second)
	}
	if err != nil {
		if c.conn != nil {
			_ = c.conn.Close()
		}
		return nil, err
	}
	go c.read(parse)
	return c, nil
}

// read records frames until the socket is closed. It waits for a frame
// without taking it off the socket (MSG_PEEK), and takes it off and
// records it under the lock: so a frame is always either queued on the
// socket or recorded, never in between, which is what Mark relies on.
func (c *Capture[F]) read(parse func(b []byte, seq int, at time.Time) (F, bool)) {
	defer close(c.done)
	defer c.recorded.Broadcast()
	buf, oob := make([]byte, 2048), make([]byte, 128)
	for {
		var err error
		rerr := c.raw.Read(func(fd uintptr) bool {
			_, _, err = unix.Recvfrom(int(fd), buf[:1], unix.MSG_PEEK|unix.MSG_DONTWAIT)
			return err != unix.EAGAIN
		})
		var n, oobn int
		c.mu.Lock()
		if rerr == nil && err == nil {
			rerr = c.raw.Read(func(fd uintptr) bool {
				n, oobn, _, _, err = unix.Recvmsg(int(fd), buf, oob, unix.MSG_DONTWAIT)
				return err != unix.EAGAIN
			})
		}
		var at time.Time
		if err == nil && rerr == nil {
			at, err = receivedAt(oob[:oobn])
		}
		if err = errors.Join(rerr, err); err != nil {
			c.readErr = err
			c.mu.Unlock()
			return
		}
		if f, ok := parse(buf[:n], len(c.frames), at); ok {
			c.frames = append(c.frames, f)
		}
		c.recorded.Broadcast()
		c.mu.Unlock()
	}
}

// queued says whether a frame waits on the socket, not yet recorded.
// Call with mu held.
func (c *Capture[F]) queued() bool {
	if c.raw == nil {
		return false // no socket: frames recorded by hand (unit tests)
	}
	return packetQueued(c.raw)
}

// Close stops the capture and waits for its reader to return. The frames
// captured so far stay readable with Since.
func (c *Capture[F]) Close() {
	_ = c.conn.Close()
	<-c.done
}

// Mark returns the capture position: frames that arrive from now on have a
// position (seq) >= Mark, and those that arrived before have a smaller
// one, even if the reader has not read them yet (Mark waits for it: on a
// busy machine the reader can lag by more than a probe interval, and a
// late-read reply would count for the next probe). The socket does not see
// the frames it sends itself, so a mark taken just before sending delimits
// what came after.
func (c *Capture[F]) Mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.readErr == nil && c.queued() {
		c.recorded.Wait()
	}
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
