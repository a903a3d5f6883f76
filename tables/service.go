package tables

import (
	"net/netip"
	"slices"
	"strings"
	"time"
	"unique"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// ServicesTableName is the table of Kubernetes Services, as seen by Herald.
const ServicesTableName = "services"

// PortProto is one (port, protocol) pair a Service listens on.
type PortProto struct {
	Port     int32  `json:"port"`
	Protocol string `json:"protocol"`
}

func (p PortProto) String() string { return itoa(int(p.Port)) + "/" + p.Protocol }

// Service is the part of a Kubernetes Service that LB IPAM and L2
// announcements act on, with the annotations already parsed.
type Service struct {
	Namespace         string    `json:"namespace"`
	Name              string    `json:"name"`
	UID               string    `json:"uid"`
	CreationTimestamp time.Time `json:"creationTimestamp"`
	Generation        int64     `json:"generation"`
	// ResourceVersion is the version of the object this row was made
	// from: status writes are conditional on it, and the leader's catch-up
	// compares it with a fresh list.
	ResourceVersion string `json:"resourceVersion"`

	Labels LabelSet `json:"labels,omitempty"`

	Type              corev1.ServiceType `json:"type"`
	LoadBalancerClass string             `json:"loadBalancerClass,omitempty"` // "" = unset
	IPFamilyPolicy    string             `json:"ipFamilyPolicy,omitempty"`    // "" = unset
	IPFamilies        []string           `json:"ipFamilies,omitempty"`
	Ports             []PortProto        `json:"ports,omitempty"`
	// ExternalTrafficPolicy is "Cluster" or "Local".
	ExternalTrafficPolicy string `json:"externalTrafficPolicy,omitempty"`
	// PodSelector is spec.selector as "key=value,..." in key order (label
	// keys and values hold neither "=" nor ","): only compared, by LB IPAM's
	// sharing rules, and a string is a tenth of a map's size.
	PodSelector string       `json:"podSelector,omitempty"`
	ExternalIPs []netip.Addr `json:"externalIPs,omitempty"`
	// ClusterIPs are spec.clusterIPs ("None" for a headless Service is
	// left out); InternalTrafficPolicy is "Cluster" or "Local". BGP
	// advertises ClusterIPs when asked.
	ClusterIPs            []netip.Addr `json:"clusterIPs,omitempty"`
	InternalTrafficPolicy string       `json:"internalTrafficPolicy,omitempty"`

	// Requests parsed from annotations and spec.loadBalancerIP.
	Annotations LBAnnotations `json:"annotations"`

	// Status as last seen in the API server.
	IngressIPs []netip.Addr       `json:"ingressIPs,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ManagedByHerald is true when Herald's field manager owns part of the
	// status: after a restart that is how Herald knows it has something to
	// clean up on a Service that is no longer its responsibility.
	ManagedByHerald bool `json:"managedByHerald,omitempty"`
}

// Key is "namespace/name".
func (s *Service) Key() string { return s.Namespace + "/" + s.Name }

// SelectorLabels are the labels pool and policy selectors match against:
// the Service's own labels plus the special keys for its namespace and name.
func (s *Service) SelectorLabels() map[string]string {
	l := s.Labels.Map(2)
	l[LabelServiceNamespace] = s.Namespace
	l[LabelServiceName] = s.Name
	return l
}

// Condition returns the condition of the given type, if present.
func (s *Service) Condition(typ string) (metav1.Condition, bool) {
	for _, c := range s.Conditions {
		if c.Type == typ {
			return c, true
		}
	}
	return metav1.Condition{}, false
}

func (s *Service) TableHeader() []string {
	return []string{"Name", "Type", "Class", "Families", "Requested", "SharingKey", "Ingress", "Error"}
}

func (s *Service) TableRow() []string {
	class := s.LoadBalancerClass
	if class == "" {
		class = "-"
	}
	policy := s.IPFamilyPolicy
	if policy == "" {
		policy = "SingleStack"
	}
	return []string{
		s.Key(), string(s.Type), class,
		policy + ":" + strings.Join(s.IPFamilies, ","),
		joinAddrs(s.Annotations.RequestedIPs), dash(s.Annotations.SharingKey),
		joinAddrs(s.IngressIPs), dash(s.Annotations.Error),
	}
}

var (
	// ServiceKeyIndex is the primary index: "namespace/name".
	ServiceKeyIndex = statedb.Index[*Service, string]{
		Name: "key",
		FromObject: func(s *Service) index.KeySet {
			return index.NewKeySet(index.String(s.Key()))
		},
		FromKey:    index.String,
		FromString: index.FromString,
		Unique:     true,
	}
	// ServiceSharingKeyIndex finds the Services that carry a sharing key.
	ServiceSharingKeyIndex = statedb.Index[*Service, string]{
		Name: "sharing-key",
		FromObject: func(s *Service) index.KeySet {
			if s.Annotations.SharingKey == "" {
				return index.NewKeySet()
			}
			return index.NewKeySet(index.String(s.Annotations.SharingKey))
		},
		FromKey:    index.String,
		FromString: index.FromString,
	}
)

// NewServicesTable creates the services table.
func NewServicesTable(db *statedb.DB) (statedb.RWTable[*Service], error) {
	return statedb.NewTable(db, ServicesTableName, ServiceKeyIndex, ServiceSharingKeyIndex)
}

// HeraldFieldManager is the server-side apply field manager Herald writes
// Service and pool status with.
const HeraldFieldManager = "herald"

// ServiceFromK8s converts a Kubernetes Service into a row. The agent
// holds a row of every Service for as long as it exists, so the row is
// small: the values every Service repeats (its namespace, type, policies,
// families, protocols, condition types and reasons) are interned, one copy
// each, instead of one string apiece from the decoder.
func ServiceFromK8s(svc *corev1.Service) *Service {
	s := &Service{
		Namespace:             intern(svc.Namespace),
		Name:                  svc.Name,
		UID:                   string(svc.UID),
		CreationTimestamp:     svc.CreationTimestamp.Time,
		Generation:            svc.Generation,
		ResourceVersion:       svc.ResourceVersion,
		Labels:                LabelSetOf(svc.Labels),
		Type:                  corev1.ServiceType(intern(string(svc.Spec.Type))),
		ExternalTrafficPolicy: intern(string(svc.Spec.ExternalTrafficPolicy)),
		PodSelector:           labels.Set(svc.Spec.Selector).String(),
		Annotations:           ParseLBAnnotations(svc.Annotations, svc.Spec.LoadBalancerIP),
		Conditions:            internConditions(svc.Status.Conditions),
	}
	if svc.Spec.LoadBalancerClass != nil {
		s.LoadBalancerClass = intern(*svc.Spec.LoadBalancerClass)
	}
	if svc.Spec.IPFamilyPolicy != nil {
		s.IPFamilyPolicy = intern(string(*svc.Spec.IPFamilyPolicy))
	}
	for _, f := range svc.Spec.IPFamilies {
		s.IPFamilies = append(s.IPFamilies, intern(string(f)))
	}
	for _, p := range svc.Spec.Ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = string(corev1.ProtocolTCP)
		}
		s.Ports = append(s.Ports, PortProto{Port: p.Port, Protocol: intern(proto)})
	}
	if svc.Spec.InternalTrafficPolicy != nil {
		s.InternalTrafficPolicy = intern(string(*svc.Spec.InternalTrafficPolicy))
	}
	for _, ip := range svc.Spec.ClusterIPs {
		if a, err := netip.ParseAddr(ip); err == nil {
			s.ClusterIPs = append(s.ClusterIPs, a.Unmap())
		}
	}
	for _, ip := range svc.Spec.ExternalIPs {
		if a, err := netip.ParseAddr(ip); err == nil {
			s.ExternalIPs = append(s.ExternalIPs, a.Unmap())
		}
	}
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(ing.IP); err == nil {
			s.IngressIPs = append(s.IngressIPs, a.Unmap())
		}
	}
	for _, mf := range svc.ManagedFields {
		if mf.Manager == HeraldFieldManager && mf.Subresource == "status" {
			s.ManagedByHerald = true
		}
	}
	return s
}

// intern returns the one copy of s shared by every row that holds it.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// internConditions copies conditions with their type, status and reason
// interned (the message and times are the Service's own).
func internConditions(cs []metav1.Condition) []metav1.Condition {
	out := slices.Clone(cs)
	for i := range out {
		out[i].Type = intern(out[i].Type)
		out[i].Status = metav1.ConditionStatus(intern(string(out[i].Status)))
		out[i].Reason = intern(out[i].Reason)
	}
	return out
}

func maps(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func joinAddrs(as []netip.Addr) string {
	if len(as) == 0 {
		return "-"
	}
	ss := make([]string, len(as))
	for i, a := range as {
		ss[i] = a.String()
	}
	return strings.Join(ss, ",")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
