package tables

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// L2PoliciesTableName is the table of CiliumL2AnnouncementPolicies.
const L2PoliciesTableName = "l2-policies"

// Policy condition types; each is True (reason "error", message = the parse
// error) while the field is broken and False once it is fixed.
const (
	ConditionBadServiceSelector = "io.cilium/bad-service-selector"
	ConditionBadNodeSelector    = "io.cilium/bad-node-selector"
	ConditionBadInterfaceRegex  = "io.cilium/bad-interface-regex"
	ReasonError                 = "error"
)

// L2Policy is a CiliumL2AnnouncementPolicy with selectors and interface
// patterns parsed. A policy with a broken field selects nothing.
type L2Policy struct {
	Name       string `json:"name"`
	UID        string `json:"uid"`
	Generation int64  `json:"generation"`

	ServiceSelector      *metav1.LabelSelector `json:"serviceSelector,omitempty"`
	ServiceSelectorError string                `json:"serviceSelectorError,omitempty"`
	NodeSelector         *metav1.LabelSelector `json:"nodeSelector,omitempty"`
	NodeSelectorError    string                `json:"nodeSelectorError,omitempty"`
	Interfaces           []string              `json:"interfaces,omitempty"`
	InterfaceError       string                `json:"interfaceError,omitempty"`

	ExternalIPs     bool `json:"externalIPs"`
	LoadBalancerIPs bool `json:"loadBalancerIPs"`

	Conditions []metav1.Condition `json:"conditions,omitempty"`

	serviceSel, nodeSel labels.Selector
	interfaceRes        []*regexp.Regexp
}

// Broken reports whether any field failed to parse.
func (p *L2Policy) Broken() bool {
	return p.ServiceSelectorError != "" || p.NodeSelectorError != "" || p.InterfaceError != ""
}

// SelectsService matches the service selector, special keys included.
func (p *L2Policy) SelectsService(svc *Service) bool {
	if p.Broken() {
		return false
	}
	sel := p.serviceSel
	if sel == nil {
		var err error
		if sel, err = selectorFrom(p.ServiceSelector); err != nil {
			return false
		}
	}
	return sel.Matches(labels.Set(svc.SelectorLabels()))
}

// SelectsNode matches the node selector against a node's labels.
func (p *L2Policy) SelectsNode(nodeLabels map[string]string) bool {
	if p.Broken() {
		return false
	}
	sel := p.nodeSel
	if sel == nil {
		var err error
		if sel, err = selectorFrom(p.NodeSelector); err != nil {
			return false
		}
	}
	return sel.Matches(labels.Set(nodeLabels))
}

// MatchesInterface reports whether the device name matches one of the
// interface patterns; no pattern matches every device.
func (p *L2Policy) MatchesInterface(name string) bool {
	if p.Broken() {
		return false
	}
	if len(p.Interfaces) == 0 {
		return true
	}
	res := p.interfaceRes
	if res == nil {
		res, _ = compileInterfaces(p.Interfaces)
	}
	for _, re := range res {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

func (p *L2Policy) TableHeader() []string {
	return []string{"Name", "ServiceSelector", "NodeSelector", "Interfaces", "LoadBalancerIPs", "ExternalIPs", "Error"}
}

func (p *L2Policy) TableRow() []string {
	sel := func(s *metav1.LabelSelector) string {
		if s == nil {
			return "<all>"
		}
		return metav1.FormatLabelSelector(s)
	}
	ifs := "<all>"
	if len(p.Interfaces) > 0 {
		ifs = strings.Join(p.Interfaces, ",")
	}
	errs := slices.DeleteFunc([]string{p.ServiceSelectorError, p.NodeSelectorError, p.InterfaceError}, func(s string) bool { return s == "" })
	return []string{p.Name, sel(p.ServiceSelector), sel(p.NodeSelector), ifs,
		fmt.Sprint(p.LoadBalancerIPs), fmt.Sprint(p.ExternalIPs), dash(strings.Join(errs, "; "))}
}

// L2PolicyNameIndex is the primary index of l2-policies.
var L2PolicyNameIndex = statedb.Index[*L2Policy, string]{
	Name: "name",
	FromObject: func(p *L2Policy) index.KeySet {
		return index.NewKeySet(index.String(p.Name))
	},
	FromKey:    index.String,
	FromString: index.FromString,
	Unique:     true,
}

// NewL2PoliciesTable creates the l2-policies table.
func NewL2PoliciesTable(db *statedb.DB) (statedb.RWTable[*L2Policy], error) {
	return statedb.NewTable(db, L2PoliciesTableName, L2PolicyNameIndex)
}

// L2PolicyFromK8s converts a policy into a row, parsing what can be broken.
func L2PolicyFromK8s(p *v2alpha1.CiliumL2AnnouncementPolicy) *L2Policy {
	out := &L2Policy{
		Name:            p.Name,
		UID:             string(p.UID),
		Generation:      p.Generation,
		Interfaces:      slices.Clone(p.Spec.Interfaces),
		ExternalIPs:     p.Spec.ExternalIPs,
		LoadBalancerIPs: p.Spec.LoadBalancerIPs,
		Conditions:      slices.Clone(p.Status.Conditions),
	}
	if p.Spec.ServiceSelector != nil {
		out.ServiceSelector = p.Spec.ServiceSelector.DeepCopy()
	}
	if p.Spec.NodeSelector != nil {
		out.NodeSelector = p.Spec.NodeSelector.DeepCopy()
	}
	var err error
	if out.serviceSel, err = selectorFrom(out.ServiceSelector); err != nil {
		out.ServiceSelectorError = err.Error()
	}
	if out.nodeSel, err = selectorFrom(out.NodeSelector); err != nil {
		out.NodeSelectorError = err.Error()
	}
	if out.interfaceRes, err = compileInterfaces(out.Interfaces); err != nil {
		out.InterfaceError = err.Error()
	}
	return out
}

func compileInterfaces(patterns []string) ([]*regexp.Regexp, error) {
	res := make([]*regexp.Regexp, 0, len(patterns))
	for _, pat := range patterns {
		re, err := regexp.Compile(pat)
		if err != nil {
			return nil, err
		}
		res = append(res, re)
	}
	return res, nil
}
