// Package bfd is Bidirectional Forwarding Detection in asynchronous mode
// (RFC 5880) over single-hop UDP (RFC 5881), as Herald's BGP speaker uses
// it: the control packet codec and the session state machine, both pure
// (no sockets, no clock of their own), and the UDP transport that drives
// them. Echo, demand mode and authentication are not implemented: a
// packet asking for authentication is discarded, as §6.8.6 requires of a
// system that does not use it.
package bfd

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// State is bfd.SessionState (RFC 5880 §4.1), with the wire values.
type State uint8

const (
	StateAdminDown State = 0
	StateDown      State = 1
	StateInit      State = 2
	StateUp        State = 3
)

func (s State) String() string {
	switch s {
	case StateAdminDown:
		return "admin-down"
	case StateDown:
		return "down"
	case StateInit:
		return "init"
	case StateUp:
		return "up"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Diag is the diagnostic code: why the local session last left Up.
type Diag uint8

const (
	DiagNone                 Diag = 0
	DiagControlDetectExpired Diag = 1
	DiagEchoFailed           Diag = 2
	DiagNeighborDown         Diag = 3
	DiagForwardingReset      Diag = 4
	DiagPathDown             Diag = 5
	DiagConcatPathDown       Diag = 6
	DiagAdminDown            Diag = 7
	DiagReverseConcatDown    Diag = 8
)

var diagNames = [...]string{"none", "control detection time expired", "echo function failed",
	"neighbor signaled session down", "forwarding plane reset", "path down", "concatenated path down",
	"administratively down", "reverse concatenated path down"}

func (d Diag) String() string {
	if int(d) < len(diagNames) {
		return diagNames[d]
	}
	return fmt.Sprintf("diag(%d)", uint8(d))
}

// Version is the only protocol version there is.
const Version = 1

// Sizes of the mandatory section, and with the smallest authentication
// section.
const (
	HeaderLen     = 24
	minAuthLength = HeaderLen + 2
)

// Packet is a BFD control packet's mandatory section. Intervals are in
// microseconds, as on the wire.
type Packet struct {
	Diag       Diag
	State      State
	Poll       bool
	Final      bool
	CPI        bool // control plane independent
	Auth       bool // an authentication section follows
	Demand     bool
	Multipoint bool
	DetectMult uint8

	MyDiscriminator   uint32
	YourDiscriminator uint32
	DesiredMinTx      uint32
	RequiredMinRx     uint32
	RequiredMinEchoRx uint32
}

// Flag bits of the second byte.
const (
	flagPoll       = 0x20
	flagFinal      = 0x10
	flagCPI        = 0x08
	flagAuth       = 0x04
	flagDemand     = 0x02
	flagMultipoint = 0x01
)

// Append encodes p (version 1, no authentication section) after b.
func (p *Packet) Append(b []byte) []byte {
	flags := uint8(p.State)<<6 | boolBit(p.Poll, flagPoll) | boolBit(p.Final, flagFinal) |
		boolBit(p.CPI, flagCPI) | boolBit(p.Auth, flagAuth) | boolBit(p.Demand, flagDemand) | boolBit(p.Multipoint, flagMultipoint)
	b = append(b, Version<<5|uint8(p.Diag)&0x1f, flags, p.DetectMult, HeaderLen)
	b = binary.BigEndian.AppendUint32(b, p.MyDiscriminator)
	b = binary.BigEndian.AppendUint32(b, p.YourDiscriminator)
	b = binary.BigEndian.AppendUint32(b, p.DesiredMinTx)
	b = binary.BigEndian.AppendUint32(b, p.RequiredMinRx)
	return binary.BigEndian.AppendUint32(b, p.RequiredMinEchoRx)
}

func boolBit(v bool, bit uint8) uint8 {
	if v {
		return bit
	}
	return 0
}

// Errors of Decode: each is a reason §6.8.6 gives to discard a packet.
var (
	ErrShort        = errors.New("bfd: packet shorter than its mandatory section")
	ErrVersion      = errors.New("bfd: version is not 1")
	ErrLength       = errors.New("bfd: length field too small or larger than the payload")
	ErrDetectMult   = errors.New("bfd: detect multiplier is zero")
	ErrMultipoint   = errors.New("bfd: multipoint bit set")
	ErrMyDiscr      = errors.New("bfd: my discriminator is zero")
	ErrYourDiscr    = errors.New("bfd: your discriminator is zero and state is neither Down nor AdminDown")
	ErrAuthNotInUse = errors.New("bfd: authentication present, but not in use")
	ErrPollAndFinal = errors.New("bfd: poll and final both set")
)

// Decode parses and validates a control packet: the checks of RFC 5880
// §6.8.6 that need no session (version, length, detect multiplier,
// multipoint, discriminators, authentication, which this implementation
// never uses). Bytes after Length are ignored (the RFC allows padding).
func Decode(b []byte) (Packet, error) {
	if len(b) < HeaderLen {
		return Packet{}, ErrShort
	}
	if b[0]>>5 != Version {
		return Packet{}, ErrVersion
	}
	p := Packet{
		Diag:              Diag(b[0] & 0x1f),
		State:             State(b[1] >> 6),
		Poll:              b[1]&flagPoll != 0,
		Final:             b[1]&flagFinal != 0,
		CPI:               b[1]&flagCPI != 0,
		Auth:              b[1]&flagAuth != 0,
		Demand:            b[1]&flagDemand != 0,
		Multipoint:        b[1]&flagMultipoint != 0,
		DetectMult:        b[2],
		MyDiscriminator:   binary.BigEndian.Uint32(b[4:]),
		YourDiscriminator: binary.BigEndian.Uint32(b[8:]),
		DesiredMinTx:      binary.BigEndian.Uint32(b[12:]),
		RequiredMinRx:     binary.BigEndian.Uint32(b[16:]),
		RequiredMinEchoRx: binary.BigEndian.Uint32(b[20:]),
	}
	length := int(b[3])
	minLen := HeaderLen
	if p.Auth {
		minLen = minAuthLength
	}
	switch {
	case length < minLen || length > len(b):
		return Packet{}, ErrLength
	case p.DetectMult == 0:
		return Packet{}, ErrDetectMult
	case p.Multipoint:
		return Packet{}, ErrMultipoint
	case p.MyDiscriminator == 0:
		return Packet{}, ErrMyDiscr
	case p.YourDiscriminator == 0 && p.State != StateDown && p.State != StateAdminDown:
		return Packet{}, ErrYourDiscr
	case p.Auth:
		return Packet{}, ErrAuthNotInUse
	case p.Poll && p.Final:
		// §6.8.6 does not list it, but §6.5 forbids it ("MUST NOT set
		// both"): a packet that does is malformed.
		return Packet{}, ErrPollAndFinal
	}
	return p, nil
}
