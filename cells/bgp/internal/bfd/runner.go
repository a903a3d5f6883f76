package bfd

import (
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"
)

// runner is one session's goroutine and sending socket.
type runner struct {
	peer, local netip.Addr
	port        uint16 // the peer's, ControlPort
	cfg         Config
	discr       uint32
	conn        *net.UDPConn
	rx          chan Packet
	stop, done  chan struct{}
	log         *slog.Logger
}

// run drives sess until stop is closed, then says AdminDown and closes
// the socket. report is called at the start and on every change that
// Status shows (state, diagnostic, negotiated timers).
func (r *runner) run(sess *Session, report func(Status)) {
	defer close(r.done)
	defer r.conn.Close()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	last := sess.Status()
	report(last)
	for {
		if next := sess.NextEvent(); !next.IsZero() {
			timer.Reset(time.Until(next))
		} else {
			timer.Reset(time.Hour)
		}
		select {
		case <-r.stop:
			sess.AdminDown(time.Now())
			// Three packets: the peer hears it even if one is lost.
			for range 3 {
				r.send(sess.Packet(false))
			}
			return
		case p := <-r.rx:
			if send, final := sess.Receive(time.Now(), p); send {
				r.send(sess.Packet(final))
			}
		case <-timer.C:
			if sess.Advance(time.Now()) {
				r.send(sess.Packet(false))
			}
		}
		if st := sess.Status(); changed(last, st) {
			if st.State != last.State {
				r.log.Info("BFD session state changed", "from", last.State, "to", st.State, "diag", st.LocalDiag,
					"txInterval", st.TxInterval, "detectTime", st.DetectTime)
			}
			last = st
			report(st)
		}
	}
}

func changed(a, b Status) bool {
	return a.State != b.State || a.RemoteState != b.RemoteState || a.LocalDiag != b.LocalDiag ||
		a.TxInterval != b.TxInterval || a.DetectTime != b.DetectTime
}

func (r *runner) send(p Packet) {
	var buf [HeaderLen]byte
	to := netip.AddrPortFrom(r.peer, r.port)
	if _, err := r.conn.WriteToUDPAddrPort(p.Append(buf[:0]), to); err != nil {
		r.log.Debug("Sending BFD packet failed", "error", err)
	}
}

func randUint32() uint32 { return rand.Uint32() }
