package tables

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// BGPAdvertisement is a CiliumBGPAdvertisement: what to advertise, with
// which attributes. Its labels are what peer families select.
type BGPAdvertisement struct {
	Name       string            `json:"name"`
	UID        string            `json:"uid"`
	Generation int64             `json:"generation"`
	Labels     map[string]string `json:"labels,omitempty"`

	Advertisements []BGPAdvert `json:"advertisements"`

	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// BGPAdvert is one entry of a CiliumBGPAdvertisement.
type BGPAdvert struct {
	Type      v2alpha1.BGPAdvertisementType    `json:"type"`
	Addresses []v2alpha1.BGPServiceAddressType `json:"addresses,omitempty"` // Service: LoadBalancerIP, ClusterIP, ExternalIP
	// AggregationLengthIPv4 and AggregationLengthIPv6 (Service) announce
	// the addresses as the prefix of that length holding them; nil: each
	// address alone.
	AggregationLengthIPv4 *int16 `json:"aggregationLengthIPv4,omitempty"`
	AggregationLengthIPv6 *int16 `json:"aggregationLengthIPv6,omitempty"`
	// Interface is the local interface whose addresses an Interface
	// entry announces.
	Interface     string                `json:"interface,omitempty"`
	Selector      *metav1.LabelSelector `json:"selector,omitempty"`
	SelectorError string                `json:"selectorError,omitempty"`
	Attributes    BGPAttributes         `json:"attributes"`

	sel labels.Selector // Selector parsed once (nil: parse on use)
}

// aggregation says how the entry aggregates ("IPv4 /24 IPv6 /120"), ""
// when it does not.
func (a BGPAdvert) aggregation() string {
	var out []string
	if l := a.AggregationLengthIPv4; l != nil {
		out = append(out, fmt.Sprintf("IPv4 /%d", *l))
	}
	if l := a.AggregationLengthIPv6; l != nil {
		out = append(out, fmt.Sprintf("IPv6 /%d", *l))
	}
	return strings.Join(out, " ")
}

// Selects matches the entry's selector against a Service's or a pool's
// labels; nil selects nothing (Cilium's rule).
func (a BGPAdvert) Selects(objLabels map[string]string) bool {
	return matches(a.sel, a.Selector, a.SelectorError, false, objLabels)
}

// Errors are the entry's selector and attribute problems.
func (a *BGPAdvertisement) Errors() []string {
	var errs []string
	for i, adv := range a.Advertisements {
		if adv.SelectorError != "" {
			errs = append(errs, fmt.Sprintf("advertisements[%d].selector: %s", i, adv.SelectorError))
		}
		if adv.Attributes.Error != "" {
			errs = append(errs, fmt.Sprintf("advertisements[%d].attributes: %s", i, adv.Attributes.Error))
		}
	}
	return errs
}

func (a *BGPAdvertisement) TableHeader() []string {
	return []string{"Name", "Labels", "Advertisements", "Error"}
}

func (a *BGPAdvertisement) TableRow() []string {
	var advs []string
	for _, adv := range a.Advertisements {
		s := string(adv.Type)
		if len(adv.Addresses) > 0 {
			var addrs []string
			for _, a := range adv.Addresses {
				addrs = append(addrs, string(a))
			}
			if agg := adv.aggregation(); agg != "" {
				addrs = append(addrs, "aggregated "+agg)
			}
			s += "(" + strings.Join(addrs, ",") + ")"
		}
		switch adv.Type {
		case v2alpha1.BGPPodCIDRAdvert:
		case v2alpha1.BGPInterfaceAdvert:
			s += "(" + adv.Interface + ")"
		default:
			s += "[" + selectorString(adv.Selector, "<none>") + "]"
		}
		if attrs := adv.Attributes.String(); attrs != "" {
			s += "{" + attrs + "}"
		}
		advs = append(advs, s)
	}
	return []string{a.Name, dash(labels.Set(a.Labels).String()), strings.Join(advs, " "), dash(strings.Join(a.Errors(), "; "))}
}
