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

// problem is one condition Herald manages on a resource: True with the
// message while the problem exists. A problem a resource never had is not
// added; one that went away turns False.
type problem struct {
	typ, message string // message "" = no problem
}

// clusterConfigProblems: Cilium's three conditions and InvalidSpec.
func clusterConfigProblems(cc *tables.BGPClusterConfig, all []*tables.BGPClusterConfig, nodes []*tables.Node, peerConfigs map[string]*tables.BGPPeerConfig) []problem {
	var selected []string
	for _, n := range nodes {
		if cc.SelectsNode(n.Labels) {
			selected = append(selected, n.Name)
		}
	}
	noMatch := ""
	if len(selected) == 0 && cc.NodeSelectorError == "" {
		noMatch = "no node matches spec.nodeSelector"
	}
	var missing []string
	var invalid []string
	if cc.NodeSelectorError != "" {
		invalid = append(invalid, cc.NodeSelectorError)
	}
	for _, inst := range cc.Instances {
		for _, p := range inst.Peers {
			if p.PeerConfig != "" && peerConfigs[p.PeerConfig] == nil && !slices.Contains(missing, p.PeerConfig) {
				missing = append(missing, p.PeerConfig)
			}
			if p.AddressError != "" {
				invalid = append(invalid, fmt.Sprintf("instance %q peer %q: peerAddress %s", inst.Name, p.Name, p.AddressError))
			}
		}
	}
	missingMsg := ""
	if len(missing) > 0 {
		missingMsg = "CiliumBGPPeerConfigs not found: " + strings.Join(missing, ", ") + "; the peers that refer to them are not configured"
	}
	var conflicts []string
	for _, other := range all {
		if other.Name == cc.Name {
			continue
		}
		for _, n := range nodes {
			if cc.SelectsNode(n.Labels) && other.SelectsNode(n.Labels) {
				conflicts = append(conflicts, fmt.Sprintf("%s (node %s)", other.Name, n.Name))
				break
			}
		}
	}
	conflictMsg := ""
	if len(conflicts) > 0 {
		conflictMsg = "selects nodes also selected by " + strings.Join(conflicts, ", ") + "; on such a node only the first by name applies"
	}
	return []problem{
		{v2alpha1.BGPClusterConfigConditionNoMatchingNode, noMatch},
		{v2alpha1.BGPClusterConfigConditionMissingPeerConfigs, missingMsg},
		{v2alpha1.BGPClusterConfigConditionConflictingClusterConfigs, conflictMsg},
		{tables.ConditionBGPInvalidSpec, strings.Join(invalid, "; ")},
	}
}

// peerConfigProblems: Cilium's MissingAuthSecret and InvalidSpec.
func peerConfigProblems(pc *tables.BGPPeerConfig, secrets map[string]*tables.BGPSecret, namespace string) []problem {
	missing := ""
	if pc.AuthSecret != "" {
		s, ok := secrets[pc.AuthSecret]
		switch {
		case !ok:
			missing = fmt.Sprintf("Secret %s/%s not found; peers using this config are not configured", namespace, pc.AuthSecret)
		case !s.HasPassword:
			missing = fmt.Sprintf("Secret %s/%s has no \"password\" key; peers using this config are not configured", namespace, pc.AuthSecret)
		}
	}
	return []problem{
		{v2alpha1.BGPPeerConfigConditionMissingAuthSecret, missing},
		{tables.ConditionBGPInvalidSpec, strings.Join(append(slices.Clone(pc.Errors), pc.SelectorErrors()...), "; ")},
	}
}

// advertisementProblems: InvalidSpec.
func advertisementProblems(a *tables.BGPAdvertisement) []problem {
	return []problem{{tables.ConditionBGPInvalidSpec, strings.Join(a.Errors(), "; ")}}
}

// applyProblems returns the conditions with the problems applied, and
// whether that differs from the current ones.
func applyProblems(current []metav1.Condition, problems []problem, generation int64, now time.Time) ([]metav1.Condition, bool) {
	out := make([]metav1.Condition, 0, len(current)+len(problems))
	changed := false
	ours := map[string]bool{}
	for _, p := range problems {
		ours[p.typ] = true
		old, had := findCondition(current, p.typ)
		if p.message == "" && !had {
			continue
		}
		want := metav1.Condition{Type: p.typ, Status: metav1.ConditionFalse, Reason: tables.ReasonBGPOK, ObservedGeneration: generation}
		if p.message != "" {
			want.Status, want.Reason, want.Message = metav1.ConditionTrue, tables.ReasonBGPProblem, p.message
		}
		want, diff := transition(old, had, want, now)
		changed = changed || diff
		out = append(out, want)
	}
	for _, c := range current {
		if !ours[c.Type] {
			out = append(out, c)
		}
	}
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
