package frr

import (
	"context"
	"encoding/json"
	"fmt"
)

// BFDPeer is one session of bfdd (`show bfd peers json`). Intervals are
// in milliseconds.
type BFDPeer struct {
	Peer                   string `json:"peer"`
	Local                  string `json:"local"`
	Status                 string `json:"status"` // up, down, init, shutdown
	Diagnostic             string `json:"diagnostic"`
	RemoteDiagnostic       string `json:"remote-diagnostic"`
	ReceiveInterval        int    `json:"receive-interval"`
	TransmitInterval       int    `json:"transmit-interval"`
	DetectMultiplier       int    `json:"detect-multiplier"`
	RemoteReceiveInterval  int    `json:"remote-receive-interval"`
	RemoteTransmitInterval int    `json:"remote-transmit-interval"`
	RemoteDetectMultiplier int    `json:"remote-detect-multiplier"`
}

// BFDCounters are one session's counters (`show bfd peers counters
// json`): how often it came up and went down.
type BFDCounters struct {
	Peer        string `json:"peer"`
	SessionUp   int    `json:"session-up"`
	SessionDown int    `json:"session-down"`
	// ControlIn counts the control packets received from the peer.
	ControlIn int `json:"control-packet-input"`
}

// BFDPeers returns bfdd's sessions by peer address (the router needs
// Options.BFD).
func (r *Router) BFDPeers() (map[string]BFDPeer, error) {
	return showBFD[BFDPeer](r, "show bfd peers json", func(p BFDPeer) string { return p.Peer })
}

// BFDCounters returns bfdd's session counters by peer address.
func (r *Router) BFDCounters() (map[string]BFDCounters, error) {
	return showBFD[BFDCounters](r, "show bfd peers counters json", func(c BFDCounters) string { return c.Peer })
}

func showBFD[T any](r *Router, cmd string, key func(T) string) (map[string]T, error) {
	out, err := r.show(cmd)
	if err != nil {
		return nil, err
	}
	var list []T
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("frr: parsing %q: %w: %.200s", cmd, err, out)
	}
	m := map[string]T{}
	for _, p := range list {
		m[key(p)] = p
	}
	return m, nil
}

// WaitBFDPeers polls BFDPeers until cond holds; it returns the last
// sessions read.
func (r *Router) WaitBFDPeers(ctx context.Context, cond func(map[string]BFDPeer) bool) (map[string]BFDPeer, error) {
	var ps map[string]BFDPeer
	err := Wait(ctx, func() (bool, error) {
		var err error
		if ps, err = r.BFDPeers(); err != nil {
			return false, err
		}
		return cond(ps), nil
	})
	return ps, err
}
