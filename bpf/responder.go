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
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

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
