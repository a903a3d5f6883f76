package status

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// The conditions of the cluster-wide BGP resources, as Cilium's operator
// writes them (operator/pkg/bgpv2: update*Condition): every type always
// present, False while all is well, with one reason per type and Cilium's
// messages. Herald's InvalidSpec is shaped the same way.

// clusterConfigConditions: Cilium's three conditions and InvalidSpec.
// owners are the cluster configs that apply on each node, by node name
// (nodeOwners): a config that selects a node another config owns is told
// so, the owner is not (Cilium's ConflictingClusterConfig).
func clusterConfigConditions(cc *tables.BGPClusterConfig, nodes []*tables.Node, peerConfigs map[string]*tables.BGPPeerConfig, owners map[string]string) []tables.BGPCondition {
	selected := 0
	var conflicts []string
	for _, n := range nodes {
		if !cc.SelectsNode(n.Labels) {
			continue
		}
		selected++
		if o := owners[n.Name]; o != "" && o != cc.Name && !slices.Contains(conflicts, o) {
			conflicts = append(conflicts, o)
		}
	}
	slices.Sort(conflicts)
	var missing, invalid []string
	if cc.NodeSelectorError != "" {
		invalid = append(invalid, cc.NodeSelectorError)
	}
	for _, inst := range cc.Instances {
		for _, p := range inst.Peers {
			if p.PeerConfig != "" && peerConfigs[p.PeerConfig] == nil {
				missing = append(missing, p.PeerConfig)
			}
			if p.AddressError != "" {
				invalid = append(invalid, fmt.Sprintf("instance %q peer %q: peerAddress %s", inst.Name, p.Name, p.AddressError))
			}
		}
	}
	slices.Sort(missing)
	missing = slices.Compact(missing)

	// A selector that does not parse selects nothing: InvalidSpec says
	// so, NoMatchingNode would only repeat it.
	noMatch := tables.BGPCondition{Type: v2alpha1.BGPClusterConfigConditionNoMatchingNode, Reason: "NoMatchingNode",
		True: selected == 0 && cc.NodeSelectorError == "", Message: "No node matches spec.nodeSelector"}
	missingPCs := tables.BGPCondition{Type: v2alpha1.BGPClusterConfigConditionMissingPeerConfigs, Reason: "MissingPeerConfigs"}
	if len(missing) > 0 {
		missingPCs.True, missingPCs.Message = true, fmt.Sprintf("Referenced CiliumBGPPeerConfig(s) are missing: %v", missing)
	}
	conflicting := tables.BGPCondition{Type: v2alpha1.BGPClusterConfigConditionConflictingClusterConfigs, Reason: "ConflictingClusterConfigs"}
	if len(conflicts) > 0 {
		conflicting.True, conflicting.Message = true, fmt.Sprintf("Selecting the same node(s) with ClusterConfig(s): %v", conflicts)
	}
	return []tables.BGPCondition{noMatch, missingPCs, conflicting, invalidSpec(invalid)}
}

// peerConfigConditions: Cilium's MissingAuthSecret and InvalidSpec. A
// Secret without the "password" key counts as missing too: Herald does
// not configure the peers without their password (Cilium only checks
// that the Secret exists).
func peerConfigConditions(pc *tables.BGPPeerConfig, secrets map[string]*tables.BGPSecret) []tables.BGPCondition {
	missing := tables.BGPCondition{Type: v2alpha1.BGPPeerConfigConditionMissingAuthSecret, Reason: "MissingAuthSecret"}
	if pc.AuthSecret != "" {
		s, ok := secrets[pc.AuthSecret]
		switch {
		case !ok:
			missing.True, missing.Message = true, fmt.Sprintf("Referenced Auth Secret %q is missing", pc.AuthSecret)
		case !s.HasPassword:
			missing.True, missing.Message = true, fmt.Sprintf("Referenced Auth Secret %q has no \"password\" key", pc.AuthSecret)
		}
	}
	return []tables.BGPCondition{missing, invalidSpec(append(slices.Clone(pc.Errors), pc.SelectorErrors()...))}
}

// advertisementConditions: InvalidSpec.
func advertisementConditions(a *tables.BGPAdvertisement) []tables.BGPCondition {
	return []tables.BGPCondition{invalidSpec(a.Errors())}
}

func invalidSpec(problems []string) tables.BGPCondition {
	return tables.BGPCondition{Type: tables.ConditionBGPInvalidSpec, Reason: tables.ReasonBGPInvalidSpec,
		True: len(problems) > 0, Message: strings.Join(problems, "; ")}
}

// applyConditions returns the conditions with Herald's set as want says
// and the managed types want lacks removed (status reporting off), the
// others' left alone, sorted by type as Cilium sorts them; and whether
// anything users see changed.
func applyConditions(current []metav1.Condition, want []tables.BGPCondition, managed []string, generation int64, now time.Time) ([]metav1.Condition, bool) {
	out := make([]metav1.Condition, 0, len(current)+len(want))
	changed := false
	for _, w := range want {
		old, had := findCondition(current, w.Type)
		c := metav1.Condition{Type: w.Type, Status: metav1.ConditionFalse, Reason: w.Reason, Message: w.Message, ObservedGeneration: generation}
		if w.True {
			c.Status = metav1.ConditionTrue
		}
		c, diff := transition(old, had, c, now)
		changed = changed || diff
		out = append(out, c)
	}
	for _, c := range current {
		switch {
		case slices.ContainsFunc(want, func(w tables.BGPCondition) bool { return w.Type == c.Type }):
		case slices.Contains(managed, c.Type):
			changed = true // Herald's, no longer wanted
		default:
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
	return out, changed
}

// transition keeps the old transition time while the status stays, and
// reports whether anything users see changed.
func transition(old metav1.Condition, had bool, want metav1.Condition, now time.Time) (metav1.Condition, bool) {
	want.LastTransitionTime = metav1.NewTime(now.UTC().Truncate(time.Second))
	if had && old.Status == want.Status {
		want.LastTransitionTime = old.LastTransitionTime
	}
	diff := !had || old.Status != want.Status || old.Reason != want.Reason || old.Message != want.Message || old.ObservedGeneration != want.ObservedGeneration
	return want, diff
}

func findCondition(cs []metav1.Condition, typ string) (metav1.Condition, bool) {
	for _, c := range cs {
		if c.Type == typ {
			return c, true
		}
	}
	return metav1.Condition{}, false
}
