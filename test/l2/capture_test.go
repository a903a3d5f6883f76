package l2

import (
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/mdlayher/packet"

	"github.com/heraldlb/herald/test/netlab"
)

// capture records the frames of one EtherType arriving on a namespace's
// eth0 (AF_PACKET), for the whole run, and sends frames from there. parse
// keeps the frames of interest, given their position and arrival time.
type capture[F any] struct {
	conn *packet.Conn
	mac  net.HardwareAddr

	mu      sync.Mutex
	frames  []F
	readErr error
	done    chan struct{}
}

func openCapture[F any](ns string, etherType int, parse func(b []byte, seq int, at time.Time) (F, bool)) (*capture[F], error) {
	c := &capture[F]{done: make(chan struct{})}
	err := netlab.InNetns(ns, func() error {
		ifi, err := net.InterfaceByName(devName)
		if err != nil {
			return err
		}
		conn, err := packet.Listen(ifi, packet.Raw, etherType, nil)
		if err != nil {
			return fmt.Errorf("AF_PACKET socket on %s: %w", devName, err)
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

func (c *capture[F]) close() {
	_ = c.conn.Close()
	<-c.done
}

// mark returns the capture position: frames captured from now on have a
// seq >= mark.
func (c *capture[F]) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.frames)
}

// since returns the frames captured from position seq on, and the capture's
// error if it stopped.
func (c *capture[F]) since(seq int) ([]F, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.frames[min(seq, len(c.frames)):]), c.readErr
}
