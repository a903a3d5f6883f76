/*
Copyright The Herald Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// Mode selects the hook the ARP responder runs at.
type Mode string

const (
	// ModeXDP attaches the XDP program (XDP_TX). Native (driver) mode is
	// tried first and generic (SKB) mode is the fallback, except on veth
	// devices, which always get generic mode: see Attach.
	ModeXDP Mode = "xdp"
	// ModeTCX attaches the tc program at tcx ingress (bpf_redirect back out
	// of the same device). Needs Linux >= 6.6.
	ModeTCX Mode = "tcx"
)

// Names of the maps; with a pin directory they are pinned under these names
// (bpftool map dump pinned DIR/l2_responder_v4).
const (
	MapResponderV4 = "l2_responder_v4"
	MapResponderV6 = "l2_responder_v6"
	MapConfig      = "l2_responder_config"
	MapConflicts   = "l2_responder_conflicts"
)

// pinnedMaps are the maps Load pins.
var pinnedMaps = []string{MapResponderV4, MapResponderV6, MapConfig, MapConflicts}

const (
	progXDP = "l2_responder_xdp"
	progTC  = "l2_responder_tc"
)

// DefaultBPFFSRoot is where bpffs is conventionally mounted.
const DefaultBPFFSRoot = "/sys/fs/bpf"

// Entry is one entry of the l2_responder_v4 or l2_responder_v6 map: answer
// ARP requests (IPv4) or Neighbor Solicitations (IPv6) for IP arriving on
// Ifindex with MAC.
type Entry struct {
	IP            netip.Addr
	Ifindex       int
	MAC           net.HardwareAddr
	ResponsesSent uint64
}

// Responder owns the loaded ARP responder: its program, its two maps and the
// links attaching the program to interfaces. Its methods are safe for
// concurrent use; after Close they return an error.
//
// Links are never pinned: when the process exits, the kernel detaches the
// program and nothing keeps answering for leases the agent may no longer
// hold. The maps are pinned (when Load got a pin directory) so that their
// entries and counters survive a restart.
type Responder struct {
	mode   Mode
	prog   *ebpf.Program
	v4     *ebpf.Map
	v6     *ebpf.Map
	config *ebpf.Map
	// conflicts records other hosts speaking for the IPs this node answers
	// for.
	conflicts *ebpf.Map

	mu     sync.Mutex
	links  map[int]*attachment
	closed bool

	// xdpFlags, when not zero, forces the XDP attach mode (tests and
	// benchmarks compare native and generic mode with it).
	xdpFlags link.XDPAttachFlags
}

type attachment struct {
	link       link.Link
	xdpGeneric bool // XDP only: attached in generic (SKB) mode
}

// Load loads the responder program of the given mode and its maps into the
// kernel. It attaches nothing (see Attach).
//
// If pinDir is not empty, the maps are pinned there as l2_responder_v4,
// l2_responder_v6 and l2_responder_config, and maps already pinned there are reused when they
// are compatible with this program (same type, key and value size, max
// entries, flags), so that entries and counters survive a restart. An
// incompatible pinned map (left by a version with a different layout) is
// replaced by a new, empty one. The directory is created if needed; if it
// is under /sys/fs/bpf and no bpffs is mounted there (the case inside
// `ip netns exec`), bpffs is mounted at /sys/fs/bpf first, and a pinDir
// elsewhere that is not on bpffs gets a bpffs mounted on itself.
func Load(mode Mode, pinDir string) (*Responder, error) {
	// Kernels before 5.11 charge BPF maps to RLIMIT_MEMLOCK, whose default
	// is too low for ours: lift it (needs CAP_SYS_RESOURCE there; a no-op
	// on newer kernels). If that fails, creating the maps says so.
	memlockErr := rlimit.RemoveMemlock()
	var progName string
	switch mode {
	case ModeXDP:
		progName = progXDP
	case ModeTCX:
		progName = progTC
	default:
		return nil, fmt.Errorf("bpf: unknown responder mode %q (want %q or %q)", mode, ModeXDP, ModeTCX)
	}

	spec, err := loadL2responder()
	if err != nil {
		return nil, err
	}
	// Load only the program of this mode.
	for name := range spec.Programs {
		if name != progName {
			delete(spec.Programs, name)
		}
	}

	var opts ebpf.CollectionOptions
	if pinDir != "" {
		if err := preparePinDir(pinDir); err != nil {
			return nil, err
		}
		for _, name := range pinnedMaps {
			spec.Maps[name].Pinning = ebpf.PinByName
		}
		opts.Maps.PinPath = pinDir
		if err := removeIncompatiblePins(spec, pinDir); err != nil {
			return nil, err
		}
	}

	coll, err := ebpf.NewCollectionWithOptions(spec, opts)
	if err != nil {
		var verr *ebpf.VerifierError
		if errors.As(err, &verr) {
			return nil, fmt.Errorf("bpf: loading the %s responder: %+v", mode, verr)
		}
		if memlockErr != nil && errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("bpf: loading the %s responder: %w (and lifting the locked-memory limit failed: %v; on kernels before 5.11 the agent needs CAP_SYS_RESOURCE or an unlimited memlock limit)", mode, err, memlockErr)
		}
		return nil, fmt.Errorf("bpf: loading the %s responder: %w", mode, err)
	}
	r := &Responder{
		mode:   mode,
		prog:   coll.Programs[progName],
		v4:     coll.Maps[MapResponderV4],
		v6:     coll.Maps[MapResponderV6],
		config: coll.Maps[MapConfig],

		conflicts: coll.Maps[MapConflicts],
		links:     make(map[int]*attachment),
	}
	return r, nil
}

func preparePinDir(pinDir string) error {
	pinDir = filepath.Clean(pinDir)
	root := pinDir
	if pinDir == DefaultBPFFSRoot || strings.HasPrefix(pinDir, DefaultBPFFSRoot+"/") {
		root = DefaultBPFFSRoot
	} else if err := os.MkdirAll(pinDir, 0o755); err != nil {
		return fmt.Errorf("bpf: creating pin directory: %w", err)
	}
	if err := EnsureBPFFS(root); err != nil {
		return err
	}
	if err := os.MkdirAll(pinDir, 0o755); err != nil {
		return fmt.Errorf("bpf: creating pin directory: %w", err)
	}
	return nil
}

// removeIncompatiblePins unpins the maps in pinDir that cannot be reused for
// spec, so that loading creates (and pins) fresh ones instead of failing.
func removeIncompatiblePins(spec *ebpf.CollectionSpec, pinDir string) error {
	for _, name := range pinnedMaps {
		path := filepath.Join(pinDir, name)
		m, err := ebpf.LoadPinnedMap(path, nil)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err == nil {
			err = spec.Maps[name].Compatible(m)
			m.Close()
			if err == nil {
				continue
			}
		}
		// Incompatible, or not a map at all: replace it.
		if rerr := os.Remove(path); rerr != nil {
			return fmt.Errorf("bpf: removing unusable pinned map %s (%v): %w", path, err, rerr)
		}
	}
	return nil
}

// Mode returns the mode the responder was loaded with.
func (r *Responder) Mode() Mode { return r.mode }

// Attach attaches the responder to the interface with the given index, in
// the calling thread's network namespace. Attaching an attached interface is
// a no-op.
//
// ModeXDP tries native (driver) mode and falls back to generic mode. On veth
// devices it uses generic mode directly: a native XDP_TX on a veth is
// delivered to the peer only if the peer has NAPI enabled (an XDP program or
// GRO on the peer), which the agent can neither see nor control, and the
// reply would otherwise be dropped silently.
func (r *Responder) Attach(ifindex int) error {
	if ifindex <= 0 {
		return fmt.Errorf("bpf: invalid ifindex %d", ifindex)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errClosed
	}
	if _, ok := r.links[ifindex]; ok {
		return nil
	}

	var (
		a   attachment
		err error
	)
	switch r.mode {
	case ModeXDP:
		a, err = r.attachXDP(ifindex)
	case ModeTCX:
		a.link, err = link.AttachTCX(link.TCXOptions{
			Interface: ifindex,
			Program:   r.prog,
			Attach:    ebpf.AttachTCXIngress,
			// First, so that no other tcx program consumes ARP before us.
			Anchor: link.Head(),
		})
		if err != nil {
			err = fmt.Errorf("bpf: attaching tcx ingress to ifindex %d: %w", ifindex, err)
		}
	}
	if err != nil {
		return err
	}
	r.links[ifindex] = &a
	return nil
}

func (r *Responder) attachXDP(ifindex int) (attachment, error) {
	attach := func(flags link.XDPAttachFlags) (attachment, error) {
		l, err := link.AttachXDP(link.XDPOptions{Program: r.prog, Interface: ifindex, Flags: flags})
		return attachment{link: l, xdpGeneric: flags == link.XDPGenericMode}, err
	}
	if r.xdpFlags != 0 {
		a, err := attach(r.xdpFlags)
		if err != nil {
			return a, fmt.Errorf("bpf: attaching xdp (flags %d) to ifindex %d: %w", r.xdpFlags, ifindex, err)
		}
		return a, nil
	}
	if !isVeth(ifindex) {
		a, err := attach(link.XDPDriverMode)
		if err == nil {
			return a, nil
		}
	}
	a, err := attach(link.XDPGenericMode)
	if err != nil {
		return a, fmt.Errorf("bpf: attaching xdp to ifindex %d: %w", ifindex, err)
	}
	return a, nil
}

// isVeth reports whether the interface (in the calling thread's network
// namespace) is a veth device.
func isVeth(ifindex int) bool {
	iface, err := net.InterfaceByIndex(ifindex)
	if err != nil {
		return false
	}
	// The driver is not exposed by the interface; sysfs shows it, but /sys
	// belongs to the namespace that mounted it. The ethtool ioctl works in
	// the calling thread's namespace.
	drv, err := ethtoolDriver(iface.Name)
	return err == nil && drv == "veth"
}

// Detach detaches the responder from the interface. Detaching an interface
// that is not attached is a no-op.
func (r *Responder) Detach(ifindex int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.links[ifindex]
	if !ok {
		return nil
	}
	delete(r.links, ifindex)
	if err := a.link.Close(); err != nil {
		return fmt.Errorf("bpf: detaching from ifindex %d: %w", ifindex, err)
	}
	return nil
}

// Attached returns the indexes of the interfaces the responder is attached
// to, sorted.
func (r *Responder) Attached() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]int, 0, len(r.links))
	for ifindex := range r.links {
		out = append(out, ifindex)
	}
	slices.Sort(out)
	return out
}

// xdpGeneric reports whether ifindex is attached in XDP generic mode.
func (r *Responder) xdpGeneric(ifindex int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.links[ifindex]
	return ok && a.xdpGeneric
}

var errClosed = errors.New("bpf: responder is closed")

// mapKey returns the map for ip's family and ip's key in it.
func (r *Responder) mapKey(ip netip.Addr, ifindex int) (*ebpf.Map, any, error) {
	if ifindex <= 0 || ifindex > int(^uint32(0)>>1) {
		return nil, nil, fmt.Errorf("bpf: invalid ifindex %d", ifindex)
	}
	ip = ip.Unmap()
	switch {
	case ip.Is4():
		b := ip.As4()
		// Network byte order in memory, whatever the host's byte order.
		return r.v4, &l2responderL2ResponderKey{Ip4: binary.NativeEndian.Uint32(b[:]), Ifindex: uint32(ifindex)}, nil
	case ip.Is6() && ip.Zone() == "":
		return r.v6, &l2responderL2ResponderKey6{Ip6: ip.As16(), Ifindex: uint32(ifindex)}, nil
	}
	return nil, nil, fmt.Errorf("bpf: %v is not an IPv4 or IPv6 address without zone", ip)
}

// Upsert makes the responder answer ARP requests (IPv4) or Neighbor
// Solicitations (IPv6) for ip arriving on ifindex with mac, and reports
// whether the entry is new. An existing entry keeps its responses_sent
// counter (a reply sent while the entry is rewritten may go uncounted).
func (r *Responder) Upsert(ip netip.Addr, ifindex int, mac net.HardwareAddr) (created bool, err error) {
	if len(mac) != 6 {
		return false, fmt.Errorf("bpf: %q is not an Ethernet MAC address", mac)
	}
	var want [6]uint8
	copy(want[:], mac)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false, errClosed
	}
	m, key, err := r.mapKey(ip, ifindex)
	if err != nil {
		return false, err
	}

	for range 3 {
		var cur l2responderL2ResponderEntry
		err := m.Lookup(key, &cur)
		switch {
		case err == nil:
			if cur.Mac == want {
				return false, nil
			}
			cur.Mac = want
			err = m.Update(key, &cur, ebpf.UpdateExist)
			if errors.Is(err, ebpf.ErrKeyNotExist) {
				continue // deleted meanwhile
			}
		case errors.Is(err, ebpf.ErrKeyNotExist):
			err = m.Update(key, &l2responderL2ResponderEntry{Mac: want}, ebpf.UpdateNoExist)
			if errors.Is(err, ebpf.ErrKeyExist) {
				continue // created meanwhile
			}
			created = err == nil
		}
		if err != nil {
			return false, fmt.Errorf("bpf: upserting %v on ifindex %d: %w", ip, ifindex, err)
		}
		return created, nil
	}
	return false, fmt.Errorf("bpf: upserting %v on ifindex %d: concurrent modification", ip, ifindex)
}

// Delete stops the responder answering for ip on ifindex. Deleting a missing
// entry is a no-op.
func (r *Responder) Delete(ip netip.Addr, ifindex int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errClosed
	}
	m, key, err := r.mapKey(ip, ifindex)
	if err != nil {
		return err
	}
	if err := m.Delete(key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("bpf: deleting %v on ifindex %d: %w", ip, ifindex, err)
	}
	return nil
}

// Entries returns the entries of both maps, IPv4 first, sorted by IP and
// ifindex.
func (r *Responder) Entries() ([]Entry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errClosed
	}
	return entriesOf(r.v4, r.v6)
}

// entriesOf reads an l2_responder_v4 and an l2_responder_v6 map, sorted by
// IP and ifindex.
func entriesOf(v4, v6 *ebpf.Map) ([]Entry, error) {
	var (
		key4  l2responderL2ResponderKey
		key6  l2responderL2ResponderKey6
		value l2responderL2ResponderEntry
		out   []Entry
	)
	add := func(ip netip.Addr, ifindex uint32) {
		out = append(out, Entry{
			IP:            ip,
			Ifindex:       int(ifindex),
			MAC:           slices.Clone(net.HardwareAddr(value.Mac[:])),
			ResponsesSent: value.ResponsesSent,
		})
	}
	it := v4.Iterate()
	for it.Next(&key4, &value) {
		var b [4]byte
		binary.NativeEndian.PutUint32(b[:], key4.Ip4)
		add(netip.AddrFrom4(b), key4.Ifindex)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("bpf: iterating %s: %w", MapResponderV4, err)
	}
	if v6 != nil {
		it = v6.Iterate()
		for it.Next(&key6, &value) {
			add(netip.AddrFrom16(key6.Ip6), key6.Ifindex)
		}
		if err := it.Err(); err != nil {
			return nil, fmt.Errorf("bpf: iterating %s: %w", MapResponderV6, err)
		}
	}
	slices.SortFunc(out, func(a, b Entry) int {
		if c := a.IP.Compare(b.IP); c != 0 {
			return c
		}
		return a.Ifindex - b.Ifindex
	})
	return out, nil
}

// Conflict is an entry of l2_responder_conflicts: another host spoke for IP
// on Ifindex (an ARP packet with IP as its sender address, a Neighbor
// Advertisement for it) while this node answered for it.
type Conflict struct {
	IP      netip.Addr
	Ifindex int
	MAC     net.HardwareAddr // the other host's, as last seen
	Seen    uint64           // packets
	// Ago is how long ago the last one was seen.
	Ago time.Duration
}

// Conflicts returns the entries of l2_responder_conflicts.
func (r *Responder) Conflicts() ([]Conflict, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errClosed
	}
	now, err := monotonicNow()
	if err != nil {
		return nil, err
	}
	return conflictsOf(r.conflicts, now)
}

// conflictsOf reads an l2_responder_conflicts map; now is CLOCK_MONOTONIC.
func conflictsOf(m *ebpf.Map, now uint64) ([]Conflict, error) {
	var (
		key   l2responderL2ResponderKey6
		value l2responderL2Conflict
		out   []Conflict
	)
	it := m.Iterate()
	for it.Next(&key, &value) {
		out = append(out, Conflict{
			IP:      netip.AddrFrom16(key.Ip6).Unmap(),
			Ifindex: int(key.Ifindex),
			MAC:     slices.Clone(net.HardwareAddr(value.Mac[:])),
			Seen:    value.Seen,
			Ago:     time.Duration(now - value.LastNs),
		})
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("bpf: iterating %s: %w", MapConflicts, err)
	}
	return out, nil
}

// ForgetConflict removes the conflict entry of ip on ifindex: the next
// packet of another host for it creates a new one.
func (r *Responder) ForgetConflict(ip netip.Addr, ifindex int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errClosed
	}
	// As16 maps IPv4 to ::ffff:a.b.c.d, as the program keys it.
	key := l2responderL2ResponderKey6{Ip6: ip.As16(), Ifindex: uint32(ifindex)}
	if err := r.conflicts.Delete(&key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("bpf: forgetting the conflict for %v on ifindex %d: %w", ip, ifindex, err)
	}
	return nil
}

// Has reports whether the responder has an entry for ip on ifindex.
func (r *Responder) Has(ip netip.Addr, ifindex int) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false, errClosed
	}
	m, key, err := r.mapKey(ip, ifindex)
	if err != nil {
		return false, err
	}
	var v l2responderL2ResponderEntry
	switch err := m.Lookup(key, &v); {
	case err == nil:
		return true, nil
	case errors.Is(err, ebpf.ErrKeyNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("bpf: looking up %v on ifindex %d: %w", ip, ifindex, err)
	}
}

// Heartbeat tells the datapath that the agent is alive: the responder
// answers only while less than maxAge has passed since the last Heartbeat.
// Until the first Heartbeat it answers nothing. The time is CLOCK_MONOTONIC,
// the clock of bpf_ktime_get_ns.
func (r *Responder) Heartbeat(maxAge time.Duration) error {
	if maxAge < 0 {
		return fmt.Errorf("bpf: negative heartbeat max age %v", maxAge)
	}
	return r.heartbeat(func() time.Duration { return maxAge })
}

// HeartbeatUntil makes the program answer until deadline and no longer.
// Unlike Heartbeat(time.Until(deadline)), a pause of this process between
// the caller's clock reading and the map write cannot stretch the deadline:
// the kernel clock is read first, the remaining time after it, so a pause
// in between only shortens it.
func (r *Responder) HeartbeatUntil(deadline time.Time) error {
	return r.heartbeat(func() time.Duration { return max(time.Until(deadline), 0) })
}

// heartbeat writes the kernel clock's now and the max age, which maxAge
// computes after now was read.
func (r *Responder) heartbeat(maxAge func() time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errClosed
	}
	now, err := monotonicNow()
	if err != nil {
		return err
	}
	cfg := l2responderL2ResponderConfig{HeartbeatNs: now, MaxAgeNs: uint64(maxAge())}
	if err := r.config.Put(uint32(0), &cfg); err != nil {
		return fmt.Errorf("bpf: writing heartbeat: %w", err)
	}
	return nil
}

// monotonicNow is CLOCK_MONOTONIC in nanoseconds, the clock of
// bpf_ktime_get_ns.
func monotonicNow() (uint64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, fmt.Errorf("bpf: reading CLOCK_MONOTONIC: %w", err)
	}
	return uint64(ts.Nano()), nil
}

// Close detaches the responder from every interface and releases the
// program and maps. Pinned maps stay pinned (and keep their entries).
func (r *Responder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	var errs []error
	for ifindex, a := range r.links {
		if err := a.link.Close(); err != nil {
			errs = append(errs, fmt.Errorf("bpf: detaching from ifindex %d: %w", ifindex, err))
		}
	}
	clear(r.links)
	for _, c := range []interface{ Close() error }{r.prog, r.v4, r.v6, r.config, r.conflicts} {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
