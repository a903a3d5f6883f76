package arpwatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// enableTimestamps makes the kernel stamp each frame with the time it was
// received (SO_TIMESTAMPNS); receivedAt reads the stamp.
func enableTimestamps(raw syscall.RawConn) error {
	var err error
	if cerr := raw.Control(func(fd uintptr) {
		err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); cerr != nil {
		return cerr
	}
	if err != nil {
		return fmt.Errorf("SO_TIMESTAMPNS: %w", err)
	}
	return nil
}

// receivedAt returns the kernel's receive time from a frame's control
// messages. A frame without one is an error, not a guess: every frame on a
// socket with SO_TIMESTAMPNS carries it.
func receivedAt(oob []byte) (time.Time, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, err
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			return time.Unix(sec, nsec), nil
		}
	}
	return time.Time{}, errors.New("frame without a receive timestamp")
}

// awaitReceiveStamps returns once the kernel stamps packets as they
// arrive. The first SO_TIMESTAMPNS socket switches stamping on for the
// whole kernel only when a deferred work item has run; a packet received
// before that has no stamp, and the kernel fills in the time it is read
// (net/socket.c: "race occurred between timestamp enabling and packet
// receiving"). That is the reader's time, which the stamps are there to
// replace. A datagram sent to itself over loopback tells when stamping is
// live: its stamp is then no later than the moment it was seen queued.
func awaitReceiveStamps(timeout time.Duration) error {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return fmt.Errorf("loopback socket to check receive stamps: %w", err)
	}
	defer conn.Close()
	raw, err := conn.SyscallConn()
	if err == nil {
		err = enableTimestamps(raw)
	}
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	buf, oob := make([]byte, 16), make([]byte, 128)
	for {
		if _, err := conn.WriteToUDP([]byte("stamp"), conn.LocalAddr().(*net.UDPAddr)); err != nil {
			return err
		}
		for !packetQueued(raw) {
			if time.Now().After(deadline) {
				return errors.New("a datagram to loopback never arrived")
			}
			time.Sleep(50 * time.Microsecond)
		}
		seen := time.Now()
		_, oobn, _, _, err := conn.ReadMsgUDP(buf, oob)
		if err != nil {
			return err
		}
		at, err := receivedAt(oob[:oobn])
		if err != nil {
			return err
		}
		if !at.After(seen) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the kernel did not stamp packets on receipt within %s", timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// packetQueued says whether a packet waits on a packet or UDP socket:
// for both, SIOCINQ is the length of the next one.
func packetQueued(raw syscall.RawConn) bool {
	next := 0
	_ = raw.Control(func(fd uintptr) {
		next, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ)
	})
	return next > 0
}
