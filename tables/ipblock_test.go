package tables

import (
	"math/big"
	"net/netip"
	"strings"
	"testing"
)

// iprangeSize counts addresses; kept local so this package does not depend
// on the allocator.
func iprangeSize(from, to interface{ AsSlice() []byte }) *big.Int {
	n := new(big.Int).Sub(new(big.Int).SetBytes(to.AsSlice()), new(big.Int).SetBytes(from.AsSlice()))
	return n.Add(n, big.NewInt(1))
}

func TestSizeAndPrefixRange(t *testing.T) {
	tests := []struct {
		cidr        string
		first, last string
		size        string
	}{
		{"10.0.10.0/24", "10.0.10.0", "10.0.10.255", "256"},
		{"10.0.0.0/8", "10.0.0.0", "10.255.255.255", "16777216"},
		{"1.2.3.4/32", "1.2.3.4", "1.2.3.4", "1"},
		{"2004::/64", "2004::", "2004::ffff:ffff:ffff:ffff", "18446744073709551616"},
		{"::/0", "::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "340282366920938463463374607431768211456"},
	}
	for _, tt := range tests {
		p, err := ParseCIDR(tt.cidr)
		if err != nil {
			t.Fatalf("%s: %v", tt.cidr, err)
		}
		first, last := PrefixRange(p)
		if first.String() != tt.first || last.String() != tt.last {
			t.Errorf("%s: got [%s, %s], want [%s, %s]", tt.cidr, first, last, tt.first, tt.last)
		}
		if got := iprangeSize(first, last).String(); got != tt.size {
			t.Errorf("%s: size %s, want %s", tt.cidr, got, tt.size)
		}
	}
}

func TestParseRange(t *testing.T) {
	tests := []struct {
		start, stop string
		wantErr     bool
		size        string
	}{
		{"20.0.20.100", "20.0.20.200", false, "101"},
		{"1.2.3.4", "", false, "1"},
		{"2001:db8::1", "2001:db8::ff", false, "255"},
		{"20.0.20.200", "20.0.20.100", true, ""},
		{"1.2.3.4", "2001:db8::1", true, ""},
		{"hello", "", true, ""},
		{"1.2.3.4", "1.2.3", true, ""},
		{"fe80::1%eth0", "", true, ""},
	}
	for _, tt := range tests {
		from, to, err := ParseRange(tt.start, tt.stop)
		if (err != nil) != tt.wantErr {
			t.Errorf("%q-%q: err=%v, wantErr=%v", tt.start, tt.stop, err, tt.wantErr)
			continue
		}
		if err == nil && iprangeSize(from, to).String() != tt.size {
			t.Errorf("%q-%q: size %s, want %s", tt.start, tt.stop, iprangeSize(from, to), tt.size)
		}
	}
}

// FuzzParseBlock checks that the block parser never panics and that every
// block it accepts is a well-formed range of one family.
func FuzzParseBlock(f *testing.F) {
	f.Add("10.0.10.0/24", "", "")
	f.Add("2004::0/64", "", "")
	f.Add("", "20.0.20.100", "20.0.20.200")
	f.Add("", "1.2.3.4", "")
	f.Add("", "20.0.20.200", "20.0.20.100")
	f.Add("::ffff:1.2.3.4/120", "", "")
	f.Fuzz(func(t *testing.T, cidr, start, stop string) {
		b, err := ParseBlock(cidr, start, stop)
		if err != nil {
			return
		}
		if !b.From.IsValid() || !b.To.IsValid() || b.From.BitLen() != b.To.BitLen() || b.To.Less(b.From) {
			t.Fatalf("accepted malformed block %+v from (%q, %q, %q)", b, cidr, start, stop)
		}
		if b.From.Zone() != "" || b.From.Is4In6() || b.To.Is4In6() {
			t.Fatalf("accepted zoned or mapped address %+v", b)
		}
		if !b.Overlaps(b) {
			t.Fatalf("block does not overlap itself: %+v", b)
		}
	})
}

// TestParseBlockRejectsMappedRange: a block that reaches into the
// IPv4-mapped addresses would hand out IPv4 addresses written as IPv6 (the
// fuzzer found "::/80", whose last address is ::ffff:255.255.255.255).
func TestParseBlockRejectsMappedRange(t *testing.T) {
	for _, tt := range []struct {
		cidr, start, stop string
		ok                bool
	}{
		{cidr: "::/80"},
		{cidr: "::/0"},
		{cidr: "::fffe:0:0/95"},
		{start: "::fffe:ffff:ffff", stop: "::1:0:0:0"},
		{cidr: "::/97", ok: true}, // ends at ::7fff:ffff
		{cidr: "2004::/64", ok: true},
		{cidr: "::1:0:0:0/96", ok: true}, // right after the mapped range
		{start: "::1", stop: "::fffe:ffff:ffff", ok: true},
	} {
		_, err := ParseBlock(tt.cidr, tt.start, tt.stop)
		if (err == nil) != tt.ok {
			t.Errorf("ParseBlock(%q, %q, %q): %v, want ok=%v", tt.cidr, tt.start, tt.stop, err, tt.ok)
		}
		if err != nil && !tt.ok && !strings.Contains(err.Error(), "IPv4-mapped") {
			t.Errorf("ParseBlock(%q, %q, %q): %v, want it to say IPv4-mapped", tt.cidr, tt.start, tt.stop, err)
		}
	}
}

func TestBlockOverlapsPrefix(t *testing.T) {
	for _, tt := range []struct {
		cidr, start, stop, prefix string
		want                      bool
	}{
		{cidr: "10.0.10.0/24", prefix: "10.0.0.0/16", want: true},
		{cidr: "10.0.0.0/16", prefix: "10.0.10.0/28", want: true},
		{cidr: "10.0.10.0/24", prefix: "10.0.11.0/24"},
		{start: "10.0.10.250", stop: "10.0.11.5", prefix: "10.0.11.0/30", want: true},
		{start: "10.0.10.250", stop: "10.0.10.255", prefix: "10.0.11.0/30"},
		{start: "10.0.11.4", prefix: "10.0.11.0/30"},
		{start: "10.0.11.3", prefix: "10.0.11.0/30", want: true},
		{cidr: "fd00::/120", prefix: "fd00::80/121", want: true},
		// The families never overlap, not even ::ffff:10.0.0.0/104.
		{cidr: "10.0.0.0/8", prefix: "::/0"},
	} {
		b, err := ParseBlock(tt.cidr, tt.start, tt.stop)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.OverlapsPrefix(netip.MustParsePrefix(tt.prefix)); got != tt.want {
			t.Errorf("%s overlaps %s = %v, want %v", b.Describe(), tt.prefix, got, tt.want)
		}
	}
}
