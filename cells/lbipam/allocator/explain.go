package allocator

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/tables"
)

// Simulate replays LB IPAM over a snapshot: the pools, then every Service
// restored from its status (oldest first), as a new leader would. What it
// returns is what LB IPAM decides for that snapshot; herald-dbg uses it to
// explain a Service and to preview a pool edit. Nothing is written.
func Simulate(fams Families, resp Responsibility, pools []*tables.LBPool, services []*tables.Service) *Engine {
	e := NewEngine(fams, resp)
	for _, p := range pools {
		e.UpsertPool(p)
	}
	svcs := slices.Clone(services)
	slices.SortFunc(svcs, func(a, b *tables.Service) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp); c != 0 {
			return c
		}
		return strings.Compare(a.Key(), b.Key())
	})
	for _, s := range svcs {
		e.Restore(s)
	}
	e.Evaluate()
	return e
}

// Decision returns the engine's current decision for a Service, if any.
func (e *Engine) Decision(key string) (*tables.LBAllocation, bool) {
	s := e.svcs[key]
	if s == nil || s.decision == nil {
		return nil, false
	}
	return s.decision, true
}

// Explain says, in sentences, why a Service has (or lacks) each IP: whether
// LB IPAM handles it, what it asks for, what every pool did with it, and
// with whom it shares.
func (e *Engine) Explain(key string) []string {
	s := e.svcs[key]
	if s == nil || s.row == nil {
		return []string{fmt.Sprintf("Service %s is not known to the agent.", key)}
	}
	svc := s.row
	if !e.resp.Handles(svc) {
		return []string{notHandled(svc)}
	}
	out := []string{fmt.Sprintf("Handled by LB IPAM (type LoadBalancer, loadBalancerClass %s).", orDash(svc.LoadBalancerClass))}
	want, request := e.explainRequest(svc)
	out = append(out, request...)
	out = append(out, e.explainDecision(s)...)
	out = append(out, e.explainRequested(s)...)
	for _, p := range e.choiceOrder {
		out = append(out, fmt.Sprintf("Pool %s%s: %s", p.row.Name, priorityNote(p), e.poolVerdict(p, svc, want)))
	}
	return append(out, e.explainSharing(s)...)
}

// notHandled says why LB IPAM leaves the Service alone.
func notHandled(svc *tables.Service) string {
	switch {
	case svc.Type != corev1.ServiceTypeLoadBalancer:
		return fmt.Sprintf("Not handled: type is %s, LB IPAM only serves type LoadBalancer.", svc.Type)
	case svc.LoadBalancerClass == "":
		return fmt.Sprintf("Not handled: no loadBalancerClass and default-lb-service-ipam is none; annotate %s: \"true\" to opt in.", tables.AnnotationExternalIPsOptIn)
	default:
		return fmt.Sprintf("Not handled: loadBalancerClass %q is not one LB IPAM serves with the agent's features (unset, %s with L2 announcements, %s with BGP).", svc.LoadBalancerClass, ClassL2Announcer, ClassBGP)
	}
}

// explainRequest: the families the Service wants and what its annotations
// ask for.
func (e *Engine) explainRequest(svc *tables.Service) ([]family, []string) {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	want, reason, message := e.families.wantedFamilies(svc)
	policy := svc.IPFamilyPolicy
	if policy == "" {
		policy = string(corev1.IPFamilyPolicySingleStack) + " (unset)"
	}
	if reason != "" {
		add("Families: ipFamilyPolicy %s cannot be met: %s.", policy, message)
	} else {
		add("Families: ipFamilyPolicy %s asks for %s.", policy, familyList(want))
	}
	a := svc.Annotations
	if a.Error != "" {
		add("Request: unparsable, %s; the Service keeps what it has until this is fixed.", a.Error)
	} else if len(a.RequestedIPs) > 0 {
		add("Request: the IPs %s (annotation %s, %s or spec.loadBalancerIP).", addrList(a.RequestedIPs), tables.AnnotationIPs, tables.AnnotationMetalLBIPs)
	}
	if a.Pool != "" {
		add("Pool: only IP Pool '%s' may give it addresses (annotation %s).", a.Pool, a.PoolAnnotation)
	}
	if a.Disagreement != "" {
		add("Annotations disagree: %s.", a.Disagreement)
	}
	return want, out
}

// explainDecision: the allocator's last decision on the Service.
func (e *Engine) explainDecision(s *svcState) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	d := s.decision
	switch {
	case d == nil && len(e.pools) == 0:
		add("Decision: none yet; LB IPAM sleeps until the first CiliumLoadBalancerIPPool exists.")
	case d == nil:
	case d.Satisfied:
		add("Decision: satisfied with %s.", heldList(d.IPs))
	default:
		add("Decision: pending, reason %s: %s", d.Reason, d.Message)
		if len(d.IPs) > 0 {
			add("It keeps %s meanwhile.", heldList(d.IPs))
		}
	}
	if d != nil {
		for _, r := range d.Released {
			add("Released %s: %s.", r.Addr, r.Reason)
		}
	}
	return out
}

// explainSharing: with whom the Service shares its addresses, and with
// whom of its sharing key it cannot.
func (e *Engine) explainSharing(s *svcState) []string {
	k := s.row.Annotations.SharingKey
	if k == "" {
		return nil
	}
	var out []string
	for _, h := range s.held {
		var partners []string
		for _, u := range sortedUsers(e.ips[h.Addr]) {
			if u != s && u.row != nil {
				partners = append(partners, u.row.Key())
			}
		}
		if len(partners) > 0 {
			out = append(out, fmt.Sprintf("Sharing: %s is shared under sharing key %q with %s.", h.Addr, k, strings.Join(partners, ", ")))
		}
	}
	for _, o := range sortedMembers(e.byKey[k]) {
		if o == s || o.row == nil {
			continue
		}
		if ok, why := canShare(s.row, o.row); !ok {
			out = append(out, fmt.Sprintf("Sharing: cannot share with %s: %s.", o.row.Key(), why.detail))
		}
	}
	return out
}

// poolVerdict explains what one pool means for the Service.
func (e *Engine) poolVerdict(p *poolState, svc *tables.Service, want []family) string {
	if !named(p, svc) {
		return fmt.Sprintf("skipped, the Service asks for IP Pool '%s' (annotation %s).", svc.Annotations.Pool, svc.Annotations.PoolAnnotation)
	}
	if !p.row.Selects(svc) {
		if p.row.SelectorError != "" {
			return "skipped, its serviceSelector is invalid: " + p.row.SelectorError
		}
		return fmt.Sprintf("skipped, its serviceSelector %s does not match the Service (labels %s).",
			metav1.FormatLabelSelector(p.row.ServiceSelector), labelList(svc.SelectorLabels()))
	}
	switch {
	case !autoAssigns(p, svc):
		return fmt.Sprintf("selects the Service but is reserved (annotation %s: \"false\"): it gives only addresses the Service requests, or names it for.", tables.AnnotationPoolAutoAssign)
	case p.row.Disabled:
		return "selects the Service but is disabled: it keeps what it gave, and gives nothing new."
	case p.conflict != "":
		return "selects the Service but is conflicting (" + p.conflict + "): it gives nothing new."
	}
	var parts []string
	for _, f := range want {
		has, free := false, false
		for i, r := range p.ranges {
			if familyOf(p.row.Blocks[i].From) != f {
				continue
			}
			has = true
			if _, ok := r.Next(); ok {
				free = true
			}
		}
		switch {
		case !has:
			parts = append(parts, fmt.Sprintf("has no %s block", f))
		case !free:
			parts = append(parts, fmt.Sprintf("is out of %s addresses", f))
		default:
			parts = append(parts, fmt.Sprintf("has free %s addresses", f))
		}
	}
	return "selects the Service and " + strings.Join(parts, ", ") + "."
}

func sortedMembers(m map[string]*svcState) []*svcState {
	out := make([]*svcState, 0, len(m))
	for _, s := range m {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *svcState) int { return strings.Compare(a.key, b.key) })
	return out
}

func familyList(fs []family) string {
	ss := make([]string, len(fs))
	for i, f := range fs {
		ss[i] = "one " + f.String() + " address"
	}
	return strings.Join(ss, " and ")
}

func addrList(as []netip.Addr) string {
	ss := make([]string, len(as))
	for i, a := range as {
		ss[i] = a.String()
	}
	return strings.Join(ss, ", ")
}

func heldList(ips []tables.AllocatedIP) string {
	ss := make([]string, len(ips))
	for i, ip := range ips {
		ss[i] = fmt.Sprintf("%s from pool %s", ip.Addr, ip.Pool)
	}
	return strings.Join(ss, ", ")
}

func labelList(l map[string]string) string {
	ss := make([]string, 0, len(l))
	for k, v := range l {
		ss = append(ss, k+"="+v)
	}
	slices.Sort(ss)
	return strings.Join(ss, ",")
}

func orDash(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}

// priorityNote shows a pool's priority where it has one: the pools are
// listed in the order new addresses are looked for.
func priorityNote(p *poolState) string {
	if p.row.Choice.Priority == 0 {
		return ""
	}
	return fmt.Sprintf(" (priority %d)", p.row.Choice.Priority)
}
