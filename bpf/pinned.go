package bpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cilium/ebpf"
)

// Pinned is what a running agent's responder maps hold, read from their
// pins: the entries with their counters, and until when it answers.
type Pinned struct {
	Entries []Entry
	// AnswersFor is how much longer the responder answers without a new
	// heartbeat; zero or negative means it is silent.
	AnswersFor time.Duration
	// NeverRefreshed is true until the agent's first heartbeat.
	NeverRefreshed bool
	// Conflicts are other hosts' packets for the node's addresses not yet
	// collected by the agent (it reports and removes them every second).
	Conflicts []Conflict
}

// ResponderInfo is what an agent's herald/responder shell command prints
// (JSON): whether it runs a responder, and where its maps are pinned.
// herald-dbg bpf responder reads them there: the agent's are under
// <bpf-root>/herald, the control-plane VIP agent's under
// <bpf-root>/herald-control-plane.
type ResponderInfo struct {
	Enabled bool   `json:"enabled"`
	PinDir  string `json:"pinDir"`
}

// ReadPinned reads the maps pinned in pinDir (<bpf-root>/herald) without
// loading anything: for herald-dbg, beside a running agent.
func ReadPinned(pinDir string) (*Pinned, error) {
	ro := &ebpf.LoadPinOptions{ReadOnly: true}
	v4, err := ebpf.LoadPinnedMap(filepath.Join(pinDir, MapResponderV4), ro)
	if err != nil {
		return nil, fmt.Errorf("bpf: opening %s: %w", filepath.Join(pinDir, MapResponderV4), err)
	}
	defer v4.Close()
	// An agent of before IPv6 support pinned no l2_responder_v6.
	v6, err := ebpf.LoadPinnedMap(filepath.Join(pinDir, MapResponderV6), ro)
	switch {
	case errors.Is(err, os.ErrNotExist):
		v6 = nil
	case err != nil:
		return nil, fmt.Errorf("bpf: opening %s: %w", filepath.Join(pinDir, MapResponderV6), err)
	default:
		defer v6.Close()
	}
	entries, err := entriesOf(v4, v6)
	if err != nil {
		return nil, err
	}
	cfgMap, err := ebpf.LoadPinnedMap(filepath.Join(pinDir, MapConfig), ro)
	if err != nil {
		return nil, fmt.Errorf("bpf: opening %s: %w", filepath.Join(pinDir, MapConfig), err)
	}
	defer cfgMap.Close()
	var cfg l2responderL2ResponderConfig
	if err := cfgMap.Lookup(uint32(0), &cfg); err != nil {
		return nil, fmt.Errorf("bpf: reading %s: %w", MapConfig, err)
	}
	now, err := monotonicNow()
	if err != nil {
		return nil, err
	}
	p := &Pinned{Entries: entries, NeverRefreshed: cfg.HeartbeatNs == 0}
	if cm, err := ebpf.LoadPinnedMap(filepath.Join(pinDir, MapConflicts), ro); err == nil {
		defer cm.Close()
		if p.Conflicts, err = conflictsOf(cm, now); err != nil {
			return nil, err
		}
	}
	if !p.NeverRefreshed {
		p.AnswersFor = time.Duration(int64(cfg.HeartbeatNs+cfg.MaxAgeNs) - int64(now))
	}
	return p, nil
}
