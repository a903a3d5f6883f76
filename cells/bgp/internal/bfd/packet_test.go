package bfd

import (
	"bytes"
	"errors"
	"testing"
)

func validPacket() Packet {
	return Packet{Diag: DiagNeighborDown, State: StateUp, Poll: true, DetectMult: 3,
		MyDiscriminator: 0x01020304, YourDiscriminator: 0x0a0b0c0d, DesiredMinTx: 100000, RequiredMinRx: 300000}
}

func TestEncodeLayout(t *testing.T) {
	p := validPacket()
	got := p.Append(nil)
	want := []byte{
		0x23,  // version 1, diag 3
		0xe0,  // state Up (3<<6), poll
		3, 24, // detect mult, length
		1, 2, 3, 4, // my discriminator
		0xa, 0xb, 0xc, 0xd,
		0, 0x01, 0x86, 0xa0, // 100000 µs
		0, 0x04, 0x93, 0xe0, // 300000 µs
		0, 0, 0, 0,
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded\n%x\nwant\n%x", got, want)
	}
	back, err := Decode(got)
	if err != nil || back != p {
		t.Fatalf("decode(encode(p)) = %+v, %v; want %+v", back, err, p)
	}
}

func TestDecodeValidation(t *testing.T) {
	mod := func(f func(b []byte) []byte) []byte {
		p := validPacket()
		return f(p.Append(nil))
	}
	cases := []struct {
		name string
		b    []byte
		err  error
	}{
		{"valid", mod(func(b []byte) []byte { return b }), nil},
		{"padding after length is ignored", mod(func(b []byte) []byte { return append(b, 0, 0, 0) }), nil},
		{"short", mod(func(b []byte) []byte { return b[:23] }), ErrShort},
		{"version 0", mod(func(b []byte) []byte { b[0] &= 0x1f; return b }), ErrVersion},
		{"version 2", mod(func(b []byte) []byte { b[0] = 2<<5 | b[0]&0x1f; return b }), ErrVersion},
		{"length below 24", mod(func(b []byte) []byte { b[3] = 23; return b }), ErrLength},
		{"length beyond payload", mod(func(b []byte) []byte { b[3] = 25; return b }), ErrLength},
		{"detect mult 0", mod(func(b []byte) []byte { b[2] = 0; return b }), ErrDetectMult},
		{"multipoint", mod(func(b []byte) []byte { b[1] |= flagMultipoint; return b }), ErrMultipoint},
		{"my discriminator 0", mod(func(b []byte) []byte { copy(b[4:8], []byte{0, 0, 0, 0}); return b }), ErrMyDiscr},
		{"your discriminator 0 while up", mod(func(b []byte) []byte { copy(b[8:12], []byte{0, 0, 0, 0}); return b }), ErrYourDiscr},
		{"your discriminator 0 while down", mod(func(b []byte) []byte {
			copy(b[8:12], []byte{0, 0, 0, 0})
			b[1] = byte(StateDown) << 6
			return b
		}), nil},
		{"your discriminator 0 while admin down", mod(func(b []byte) []byte {
			copy(b[8:12], []byte{0, 0, 0, 0})
			b[1] = byte(StateAdminDown) << 6
			return b
		}), nil},
		{"auth bit with a short length", mod(func(b []byte) []byte { b[1] |= flagAuth; return b }), ErrLength},
		{"auth section, auth not in use", mod(func(b []byte) []byte {
			b[1] |= flagAuth
			b[3] = 28
			return append(b, 1, 4, 1, 0)
		}), ErrAuthNotInUse},
		{"poll and final", mod(func(b []byte) []byte { b[1] |= flagFinal; return b }), ErrPollAndFinal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(c.b)
			if !errors.Is(err, c.err) {
				t.Fatalf("Decode: %v, want %v", err, c.err)
			}
		})
	}
}

// FuzzDecode: any input decodes or is refused without a panic, and what
// decodes encodes back to the same mandatory section.
func FuzzDecode(f *testing.F) {
	p := validPacket()
	f.Add(p.Append(nil))
	down := Packet{State: StateDown, DetectMult: 3, MyDiscriminator: 7, DesiredMinTx: 1000000, RequiredMinRx: 300000}
	f.Add(down.Append(nil))
	f.Add([]byte{0x20, 0x44, 3, 26, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Decode(b)
		if err != nil {
			return
		}
		enc := p.Append(nil)
		if !bytes.Equal(enc[:2], b[:2]) || !bytes.Equal(enc[4:HeaderLen], b[4:HeaderLen]) || enc[2] != b[2] {
			t.Fatalf("re-encoded %x from %x", enc, b[:HeaderLen])
		}
		again, err := Decode(enc)
		if err != nil || again != p {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, p)
		}
	})
}
