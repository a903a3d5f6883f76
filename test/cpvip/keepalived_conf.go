package cpvip

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// keepalived is the baseline the control-plane VIP is measured against:
// the Debian package (2.2.7), VRRPv3, one keepalived per node namespace,
// the same VIPs and a health check of the same local /readyz. What follows
// are the limits keepalived 2.2.7 itself enforces (checked with
// `keepalived -t` on the package), which bound how fast it can be made.
const (
	// KeepalivedMinAdvertInterval is the shortest advert_int keepalived
	// accepts ("outside range [0.010000, 255.000000]" below it). VRRPv3
	// carries the interval in centiseconds, so it is also the resolution.
	KeepalivedMinAdvertInterval = 10 * time.Millisecond
	// KeepalivedMaxAdvertInterval is the largest interval VRRPv3's 12-bit
	// centisecond field can carry.
	KeepalivedMaxAdvertInterval = 4095 * 10 * time.Millisecond
	// KeepalivedMinScriptInterval is the shortest vrrp_script interval:
	// interval and timeout are whole seconds in 2.2.7 ("invalid number
	// '0.1'", "must be between 1 and 4294"; 0 is raised to 1).
	KeepalivedMinScriptInterval = time.Second
)

// KeepalivedOptions describe the keepalived of one node.
type KeepalivedOptions struct {
	// Node names the node: router_id, and it appears in the log.
	Node string
	// Interface is the node's LAN device in its namespace.
	Interface string
	// VIP and VIP6 are the virtual addresses; each valid one gets its own
	// vrrp_instance (vip4, vip6), since a VRRPv3 instance carries one
	// address family. At least one must be set.
	VIP, VIP6 netip.Addr
	// SourceIP and SourceIP6 are the node's own addresses on Interface
	// (unicast_src_ip), needed for unicast.
	SourceIP, SourceIP6 netip.Addr
	// Peers and Peers6 are the other nodes' addresses (unicast_peer). With
	// none, the instance of that family sends its adverts to the VRRP
	// multicast group (224.0.0.18, ff02::12).
	Peers, Peers6 []netip.Addr
	// RouterID is virtual_router_id, the same on every node. Both
	// instances use it: VRRP keeps the families apart.
	RouterID uint8
	// Priority is the node's VRRP priority, 1 to 254 (255 would claim to
	// own the address). Give every node the same one for no preference:
	// the first election then goes to the highest address (RFC 5798), and
	// nopreempt keeps a backup from taking over from a healthy master. It
	// does not hold back a second master: of two masters that hear each
	// other (a frozen owner thawed, a cut one healed) the one with the
	// higher priority, then address, keeps the VIP.
	Priority uint8
	// AdvertInterval is advert_int: a multiple of 10 ms, from
	// KeepalivedMinAdvertInterval to KeepalivedMaxAdvertInterval. A backup
	// takes over when it has heard no advert for 3 intervals plus a skew
	// of (256-priority)/256 of one.
	AdvertInterval time.Duration
	// Check is the health check every instance tracks with weight 0: while
	// it fails, the node's instances are in FAULT state and hold no VIP.
	// keepalived's own check (a script) runs at most once a second; a file
	// written by a KeepalivedProber follows a faster one.
	Check KeepalivedCheck
}

// KeepalivedCheck is the health check, one of two kinds.
//
// A script (Script set) is keepalived's own vrrp_script: keepalived runs
// Script every Interval; Fall failures in a row (a non-zero exit, or no
// exit within Timeout) put the node in FAULT, Rise successes in a row take
// it out. keepalived counts its interval in whole seconds.
//
// A file (File set) is a track_file: keepalived watches the file (inotify)
// and the node is in FAULT while it holds anything but 0. A
// KeepalivedProber writes it, with its own interval, fall and rise: the
// way to check more often than once a second.
type KeepalivedCheck struct {
	// Script is the command and its arguments; the command is an absolute
	// path. keepalived splits its script line at blanks, so no word may
	// contain blanks or quotes.
	Script []string
	// Interval and Timeout are whole seconds, at least
	// KeepalivedMinScriptInterval.
	Interval, Timeout time.Duration
	Fall, Rise        int

	// File is an absolute path; set it, and nothing else, for a file check.
	File string
}

// keepalivedName is what a node name, which goes into the config
// unquoted, may be made of.
var keepalivedName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// Validate says what keepalived would reject or silently change in the
// options; KeepalivedConfig renders only options it accepts.
func (o KeepalivedOptions) Validate() error {
	var errs []error
	if !keepalivedName.MatchString(o.Node) {
		errs = append(errs, fmt.Errorf("node name %q: want letters, digits, '_', '.', '-'", o.Node))
	}
	if !keepalivedName.MatchString(o.Interface) {
		errs = append(errs, fmt.Errorf("interface %q: want a device name", o.Interface))
	}
	if !o.VIP.IsValid() && !o.VIP6.IsValid() {
		errs = append(errs, errors.New("no VIP"))
	}
	errs = append(errs, checkFamily("IPv4", o.VIP, o.SourceIP, o.Peers, netip.Addr.Is4)...)
	errs = append(errs, checkFamily("IPv6", o.VIP6, o.SourceIP6, o.Peers6, func(a netip.Addr) bool { return a.Is6() && !a.Is4In6() })...)
	if o.RouterID == 0 {
		errs = append(errs, errors.New("virtual_router_id 0: want 1 to 255"))
	}
	if o.Priority == 0 || o.Priority == 255 {
		errs = append(errs, fmt.Errorf("priority %d: want 1 to 254", o.Priority))
	}
	if d := o.AdvertInterval; d < KeepalivedMinAdvertInterval || d > KeepalivedMaxAdvertInterval || d%(10*time.Millisecond) != 0 {
		errs = append(errs, fmt.Errorf("advert interval %s: want a multiple of 10ms from %s to %s", d, KeepalivedMinAdvertInterval, KeepalivedMaxAdvertInterval))
	}
	if err := o.Check.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkFamily checks one family's VIP, source and peers: all of the
// family, the source set if there are peers, the source not a peer.
func checkFamily(family string, vip, src netip.Addr, peers []netip.Addr, is func(netip.Addr) bool) []error {
	var errs []error
	if !vip.IsValid() {
		if src.IsValid() || len(peers) > 0 {
			errs = append(errs, fmt.Errorf("%s source or peers without an %s VIP", family, family))
		}
		return errs
	}
	if !is(vip) {
		errs = append(errs, fmt.Errorf("%s VIP %s is not %s", family, vip, family))
	}
	if len(peers) > 0 && !src.IsValid() {
		errs = append(errs, fmt.Errorf("%s peers but no %s source address", family, family))
	}
	if src.IsValid() && !is(src) {
		errs = append(errs, fmt.Errorf("%s source %s is not %s", family, src, family))
	}
	for _, p := range peers {
		if !is(p) {
			errs = append(errs, fmt.Errorf("%s peer %s is not %s", family, p, family))
		}
		if p == src || p == vip {
			errs = append(errs, fmt.Errorf("%s peer %s is the node's own address or the VIP", family, p))
		}
	}
	return errs
}

func (c KeepalivedCheck) validate() error {
	if c.File != "" {
		if !filepath.IsAbs(c.File) || strings.ContainsAny(c.File, " \t\n\"'\\") {
			return fmt.Errorf("check file %q: want an absolute path without blanks, quotes or backslashes", c.File)
		}
		if len(c.Script) > 0 || c.Interval != 0 || c.Timeout != 0 || c.Fall != 0 || c.Rise != 0 {
			return errors.New("check: a file check has no script, interval, timeout, fall or rise (its prober has)")
		}
		return nil
	}
	var errs []error
	if len(c.Script) == 0 || !filepath.IsAbs(c.Script[0]) {
		errs = append(errs, fmt.Errorf("check script %q: want an absolute command path (or a check file)", c.Script))
	}
	for _, w := range c.Script {
		if w == "" || strings.ContainsAny(w, " \t\n\"'\\") {
			errs = append(errs, fmt.Errorf("check script word %q: empty, or with blanks, quotes or backslashes", w))
		}
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"interval", c.Interval}, {"timeout", c.Timeout}} {
		if f.d < KeepalivedMinScriptInterval || f.d%time.Second != 0 {
			errs = append(errs, fmt.Errorf("check %s %s: keepalived takes whole seconds, at least %s", f.name, f.d, KeepalivedMinScriptInterval))
		}
	}
	if c.Fall < 1 || c.Rise < 1 {
		errs = append(errs, fmt.Errorf("check fall %d, rise %d: want at least 1", c.Fall, c.Rise))
	}
	return errors.Join(errs...)
}

// KeepalivedConfig renders keepalived.conf for one node, or says why the
// options would not give the configuration they describe.
//
// Every instance starts as BACKUP with nopreempt, so an owner keeps the VIP
// until it fails and a recovered node never takes it back: the rule the
// control-plane VIP follows too. The VIPs are host addresses (/32, /128)
// on Interface, answered by the node's own MAC (no VMAC), as the
// control-plane VIP answers them. There is no authentication: VRRPv3 has
// none.
func KeepalivedConfig(o KeepalivedOptions) (string, error) {
	if err := o.Validate(); err != nil {
		return "", fmt.Errorf("keepalived options for %s: %w", o.Node, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# keepalived.conf of %s (test/cpvip)\n", o.Node)
	fmt.Fprintf(&b, "global_defs {\n\trouter_id %s\n\tvrrp_version 3\n", o.Node)
	// Scripts run as root, and keepalived checks that no one else can
	// change them.
	b.WriteString("\tenable_script_security\n\tscript_user root\n}\n\n")

	writeCheck(&b, o.Check)

	if o.VIP.IsValid() {
		writeInstance(&b, o, "vip4", o.VIP, 32, o.SourceIP, o.Peers)
	}
	if o.VIP6.IsValid() {
		writeInstance(&b, o, "vip6", o.VIP6, 128, o.SourceIP6, o.Peers6)
	}
	return b.String(), nil
}

func writeCheck(b *strings.Builder, c KeepalivedCheck) {
	if c.File != "" {
		// No init_file: the prober, started first, writes the file.
		fmt.Fprintf(b, "track_file check {\n\tfile \"%s\"\n}\n", c.File)
		return
	}
	fmt.Fprintf(b, "vrrp_script check {\n\tscript \"%s\"\n", strings.Join(c.Script, " "))
	fmt.Fprintf(b, "\tinterval %d\n\ttimeout %d\n\tfall %d\n\trise %d\n}\n",
		c.Interval/time.Second, c.Timeout/time.Second, c.Fall, c.Rise)
}

func writeInstance(b *strings.Builder, o KeepalivedOptions, name string, vip netip.Addr, bits int, src netip.Addr, peers []netip.Addr) {
	fmt.Fprintf(b, "\nvrrp_instance %s {\n\tstate BACKUP\n\tnopreempt\n", name)
	fmt.Fprintf(b, "\tinterface %s\n\tvirtual_router_id %d\n\tpriority %d\n", o.Interface, o.RouterID, o.Priority)
	cs := o.AdvertInterval / (10 * time.Millisecond)
	fmt.Fprintf(b, "\tadvert_int %d.%02d\n", cs/100, cs%100)
	if len(peers) > 0 {
		fmt.Fprintf(b, "\tunicast_src_ip %s\n\tunicast_peer {\n", src)
		for _, p := range peers {
			fmt.Fprintf(b, "\t\t%s\n", p)
		}
		b.WriteString("\t}\n")
	}
	fmt.Fprintf(b, "\tvirtual_ipaddress {\n\t\t%s/%d\n\t}\n", vip, bits)
	track := "track_script"
	if o.Check.File != "" {
		track = "track_file"
	}
	fmt.Fprintf(b, "\t%s {\n\t\tcheck weight 0\n\t}\n}\n", track)
}
