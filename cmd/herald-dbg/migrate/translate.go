package migrate

import (
	"cmp"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Translate turns the MetalLB configuration into Herald's objects and the
// findings on every field. The objects keep the MetalLB objects' names.
func Translate(in Input) Result {
	r := Result{Findings: slices.Clone(in.Findings)}
	seen := map[string]string{} // kind/name -> the MetalLB object it came from
	keep := func(obj runtime.Object, name string, src Object, fs []Finding) bool {
		key := obj.GetObjectKind().GroupVersionKind().Kind + "/" + name
		if first, dup := seen[key]; dup {
			r.Findings = append(r.Findings, Finding{Source: src.Ref(), Verdict: None,
				Reason: fmt.Sprintf("%s was already made from %s: Herald's objects are cluster-wide, one name each", key, first)})
			return false
		}
		seen[key] = src.Ref()
		r.Objects = append(r.Objects, obj)
		r.Findings = append(r.Findings, fs...)
		return true
	}
	for _, p := range sorted(in.Pools) {
		pool, fs := translatePool(p)
		keep(pool, pool.Name, p.Object, fs)
	}
	for _, a := range sorted(in.L2) {
		policy, fs := translateL2(a)
		keep(policy, policy.Name, a.Object, fs)
	}
	translateBGP(in, keep, &r)
	return r
}

// keeper adds a translated object and its findings to the result, unless
// an object of that kind and name is there already.
type keeper func(obj runtime.Object, name string, src Object, fs []Finding) bool

// translateBGP makes the advertisements, then the peer configs that select
// them, then the cluster configs that name the peer configs.
func translateBGP(in Input, keep keeper, r *Result) {
	aliases := map[string]string{}
	for _, c := range sorted(in.Communities) {
		for i, alias := range c.Spec.Communities {
			aliases[alias.Name] = alias.Value
			r.Findings = append(r.Findings, Finding{Source: c.Ref(), Field: fmt.Sprintf("spec.communities[%d] %q", i, alias.Name), Verdict: Exact,
				Reason: "no object of its own: the value is written into the advertisements that name the alias"})
		}
	}
	adverts := sorted(in.BGPAdverts)
	peers := sorted(in.Peers)
	for _, a := range adverts {
		obj, fs := translateBGPAdvert(a, aliases)
		keep(obj, obj.Name, a.Object, fs)
		for _, name := range a.Spec.Peers {
			if !slices.ContainsFunc(peers, func(p BGPPeer) bool { return p.Metadata.Name == name }) {
				r.Findings = append(r.Findings, Finding{Source: a.Ref(), Field: "spec.peers " + name, Verdict: None, Reason: "no BGPPeer of that name"})
			}
		}
	}
	profiles := map[string]*BFDProfile{}
	used := map[string]bool{}
	for _, b := range sorted(in.BFDProfiles) {
		profiles[b.Metadata.Name] = &b
	}
	var kept []BGPPeer // a peer whose name was taken stays out of the cluster configs too
	for _, p := range peers {
		used[p.Spec.BFDProfile] = true
		pc, fs := translatePeer(p, advertsFor(p.Metadata.Name, adverts), profiles[p.Spec.BFDProfile])
		if keep(pc, pc.Name, p.Object, fs) {
			kept = append(kept, p)
		}
	}
	for _, b := range sorted(in.BFDProfiles) {
		if !used[b.Metadata.Name] {
			r.Findings = append(r.Findings, Finding{Source: b.Ref(), Verdict: None,
				Reason: "no BGPPeer names it; Herald has no separate BFD profile object, only the bfd block of a peer config"})
		}
	}
	ccs, fs := clusterConfigs(kept)
	r.Findings = append(r.Findings, fs...)
	for _, cc := range ccs {
		r.Objects = append(r.Objects, cc)
	}
}

// advertsFor selects the advertisements MetalLB announces to a peer: those
// without a peers list, and those that name it. nil when there are none.
func advertsFor(peer string, adverts []BGPAdvertisement) *metav1.LabelSelector {
	var names []string
	for _, a := range adverts {
		if len(a.Spec.Peers) == 0 || slices.Contains(a.Spec.Peers, peer) {
			names = append(names, a.Metadata.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: LabelBGPAdvertisement, Operator: metav1.LabelSelectorOpIn, Values: names},
	}}
}

// sorted orders objects by namespace and name, so that the output does
// not depend on the order of the files or of the API server's list.
func sorted[T interface{ Ref() string }](objs []T) []T {
	out := slices.Clone(objs)
	slices.SortStableFunc(out, func(a, b T) int { return cmp.Compare(a.Ref(), b.Ref()) })
	return out
}
