package bfd

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"
)

// fuzzInput reads a fuzz input front to back; past its end it reads
// zeros.
type fuzzInput struct {
	b []byte
}

func (in *fuzzInput) done() bool { return len(in.b) == 0 }

func (in *fuzzInput) byte() byte {
	if len(in.b) == 0 {
		return 0
	}
	v := in.b[0]
	in.b = in.b[1:]
	return v
}

func (in *fuzzInput) u16() uint16 { return uint16(in.byte())<<8 | uint16(in.byte()) }
func (in *fuzzInput) u32() uint32 { return uint32(in.u16())<<16 | uint32(in.u16()) }

// jitter is a session's jitter drawn from the input, so that a failure
// replays.
func (in *fuzzInput) jitter() func() float64 {
	r := rand.New(rand.NewPCG(uint64(in.u32()), uint64(in.u32())))
	return r.Float64
}

// Operations of FuzzSessionInvariants, one input byte each (mod 16).
const (
	opPacket    = 0 // 0-7: a packet from the remote system
	opWait      = 8 // 8-10: the clock moves on by up to 65 s
	opNextEvent = 11
	opAdminDown = 15
)

const peerDiscr = 0x0a0b0c0d

// FuzzSessionInvariants drives one session with packets made of the
// input, clock moves and the local AdminDown, and checks after each what
// RFC 5880 requires whatever the remote system sends (see checked).
func FuzzSessionInvariants(f *testing.F) {
	for _, s := range sessionSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in := &fuzzInput{b: b}
		cfg := Config{DesiredMinTx: time.Duration(in.u16()%5001) * time.Millisecond,
			RequiredMinRx: time.Duration(in.u16()%5001) * time.Millisecond, DetectMult: in.byte()}
		cfg.Passive = cfg.DetectMult&0x80 != 0
		cfg.DetectMult &= 0x7f
		discr := max(in.u32(), 1)
		now := t0
		c := newChecked(t, cfg, discr, now, in.jitter())
		for !in.done() {
			switch op := in.byte() % 16; {
			case op < opWait:
				wire := fuzzPacket(in, discr)
				p, err := Decode(wire)
				if err != nil {
					continue // the transport drops it (FuzzDecode covers Decode)
				}
				if send, final := c.receive(now, p); send {
					c.packet(final)
				}
			case op < opNextEvent:
				now = now.Add(time.Duration(in.u16()) * time.Millisecond)
				if c.advance(now) {
					c.packet(false)
				}
			case op < opAdminDown:
				// As the transport does: the clock to the next event.
				if next := c.s.NextEvent(); next.After(now) {
					now = next
				}
				if c.advance(now) {
					c.packet(false)
				}
			default:
				c.adminDown(now)
				c.packet(false)
			}
		}
	})
}

// fuzzPacket is a control packet on the wire, its fields from the input:
// byte 0 and 1 as on the wire (version, diagnostic, state, flags), the
// detect multiplier, a choice of discriminators (mostly the peer's and
// the session's), and the intervals in one of four scales.
func fuzzPacket(in *fuzzInput, local uint32) []byte {
	b := []byte{Version<<5 | in.byte()&0x1f, in.byte(), in.byte(), HeaderLen}
	sel := in.byte()
	my := [...]uint32{peerDiscr, peerDiscr + 1, 0, in.u32()}[sel&3]
	your := [...]uint32{local, 0, local + 1, in.u32()}[sel>>2&3]
	b = binary.BigEndian.AppendUint32(b, my)
	b = binary.BigEndian.AppendUint32(b, your)
	b = binary.BigEndian.AppendUint32(b, fuzzInterval(in))
	b = binary.BigEndian.AppendUint32(b, fuzzInterval(in))
	return binary.BigEndian.AppendUint32(b, 0)
}

// fuzzInterval is microseconds: whole milliseconds, or any.
func fuzzInterval(in *fuzzInput) uint32 {
	switch in.byte() % 4 {
	case 0:
		return 0
	case 1:
		return uint32(in.u16()) * 1000
	case 2:
		return uint32(in.u16())
	}
	return in.u32()
}

// seed builds FuzzSessionInvariants inputs.
type seed []byte

func newSeed(txMs, rxMs uint16, mult byte, passive bool) seed {
	if passive {
		mult |= 0x80
	}
	s := seed(binary.BigEndian.AppendUint16(nil, txMs))
	s = binary.BigEndian.AppendUint16(s, rxMs)
	s = append(s, mult, 0, 0, 0, 1)          // discriminator 1
	return append(s, 0, 0, 0, 7, 0, 0, 0, 9) // jitter
}

// Selectors of fuzzPacket's discriminators.
const (
	yourOurs  = 0 << 2
	yourZero  = 1 << 2
	yourOther = 2 << 2
	myZero    = 2
)

func (s seed) pkt(st State, flags, mult, sel byte, txMs, rxMs uint16) seed {
	s = append(s, opPacket, 0, byte(st)<<6|flags, mult, sel, 0, 0, 0, 0, 0, 0, 0, 0, 1)
	s = binary.BigEndian.AppendUint16(s, txMs)
	s = append(s, 1)
	return binary.BigEndian.AppendUint16(s, rxMs)
}

func (s seed) wait(ms uint16) seed { return binary.BigEndian.AppendUint16(append(s, opWait), ms) }

func (s seed) next(n int) seed {
	for range n {
		s = append(s, opNextEvent)
	}
	return s
}

func (s seed) adminDown() seed { return append(s, opAdminDown) }

// up brings the session up: Down (the remote system does not know us
// yet), then Init.
func (s seed) up(txMs, rxMs uint16) seed {
	return s.pkt(StateDown, 0, 3, yourZero, txMs, rxMs).pkt(StateInit, 0, 3, yourOurs, txMs, rxMs)
}

func sessionSeeds() [][]byte {
	return [][]byte{
		// Up, the poll answered, then silence: detection time expires.
		newSeed(100, 100, 3, false).next(1).up(100, 100).pkt(StateUp, flagFinal, 3, yourOurs, 100, 100).next(20),
		// Up with a slower rate (an increase waits for the Final), polled by the remote system.
		newSeed(2000, 300, 3, false).up(300, 300).pkt(StateUp, flagPoll, 3, yourOurs, 50, 50).
			next(1).pkt(StateUp, flagFinal, 3, yourOurs, 300, 300).next(3).pkt(StateDown, 0, 3, yourZero, 1000, 1000).next(5),
		// Packets to discard: another discriminator, multiplier 0, my discriminator 0.
		newSeed(300, 300, 3, false).pkt(StateInit, 0, 3, yourOther, 100, 100).pkt(StateDown, 0, 0, yourZero, 100, 100).
			pkt(StateDown, 0, 3, yourZero|myZero, 100, 100).next(3),
		// Remote AdminDown while Up, then the local AdminDown.
		newSeed(300, 300, 1, false).up(300, 300).wait(200).pkt(StateAdminDown, 0, 3, yourOurs, 300, 300).
			up(300, 300).adminDown().pkt(StateUp, 0, 3, yourOurs, 300, 300).next(3),
		// The remote system asks for no packets, then demand mode while Up.
		newSeed(50, 50, 3, false).pkt(StateDown, 0, 3, yourZero, 1000, 0).wait(5000).up(50, 50).
			pkt(StateUp, flagFinal|flagDemand, 3, yourOurs, 50, 50).wait(1000).next(5),
		// AdminDown from Up at 2 s: back to 1 s at once.
		newSeed(2000, 100, 3, false).up(100, 100).pkt(StateUp, flagFinal, 3, yourOurs, 100, 100).next(1).adminDown().next(2),
		// Passive: silent until the remote system speaks, again after it went silent.
		newSeed(300, 300, 3, true).next(2).wait(3000).up(300, 300).next(30).wait(10000),
	}
}
