package cnitest

import (
	"encoding/json"
	"fmt"
)

// BridgeNetwork is a network of the bridge plugin whose IPAM is
// herald-ipam (or, for comparisons, another IPAM plugin): the shape of
// install/cni/10-herald.conflist.
type BridgeNetwork struct {
	Name       string // the network's name; "herald" when empty
	CNIVersion string // "1.1.0" when empty
	Bridge     string // the bridge device in the node's namespace
	IsGateway  bool   // the bridge holds the gateway address of the pods' subnet
	IPMasq     bool
	// IPAM is the ipam section; its type is herald-ipam unless it says
	// otherwise.
	IPAM map[string]any
}

// Conflist renders the network configuration list.
func (b BridgeNetwork) Conflist() ([]byte, error) {
	if b.Bridge == "" {
		return nil, fmt.Errorf("cnitest: BridgeNetwork without a bridge name")
	}
	name, ver := b.Name, b.CNIVersion
	if name == "" {
		name = "herald"
	}
	if ver == "" {
		ver = "1.1.0"
	}
	ipam := map[string]any{"type": "herald-ipam"}
	for k, v := range b.IPAM {
		ipam[k] = v
	}
	return json.MarshalIndent(map[string]any{
		"cniVersion": ver,
		"name":       name,
		"plugins": []any{map[string]any{
			"type":      "bridge",
			"bridge":    b.Bridge,
			"isGateway": b.IsGateway,
			"ipMasq":    b.IPMasq,
			"ipam":      ipam,
		}},
	}, "", "  ")
}
