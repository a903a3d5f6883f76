package tables

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// The tables of the BGP control plane's resources, reflected as they are:
// the bgp-desired cell joins them.
const (
	BGPClusterConfigsTableName = "bgp-cluster-configs"
	BGPPeerConfigsTableName    = "bgp-peer-configs"
	BGPAdvertisementsTableName = "bgp-advertisements"
	BGPNodeOverridesTableName  = "bgp-node-overrides"
)

// BGPClusterConfig is a CiliumBGPClusterConfig: which nodes run which BGP
// instances, and their peers.
type BGPClusterConfig struct {
	Name       string `json:"name"`
	UID        string `json:"uid"`
	Generation int64  `json:"generation"`
	// CreationTimestamp decides which of several cluster configs gets a
	// node none of them holds yet (BGPOwnerOf).
	CreationTimestamp time.Time `json:"creationTimestamp"`

	NodeSelector      *metav1.LabelSelector `json:"nodeSelector,omitempty"`
	NodeSelectorError string                `json:"nodeSelectorError,omitempty"`
	Instances         []BGPInstanceSpec     `json:"instances"`

	Conditions []metav1.Condition `json:"conditions,omitempty"`

	nodeSel labels.Selector // NodeSelector parsed once (nil: parse on use)
}

// BGPInstanceSpec is one bgpInstances entry of a cluster config.
type BGPInstanceSpec struct {
	Name      string        `json:"name"`
	LocalASN  int64         `json:"localASN"`            // 0: not set
	LocalPort int32         `json:"localPort,omitempty"` // 0: not set
	Peers     []BGPPeerSpec `json:"peers,omitempty"`
}

// BGPPeerSpec is one peer of an instance. Address is invalid when the
// peer names none (or one that does not parse: AddressError).
type BGPPeerSpec struct {
	Name         string     `json:"name"`
	Address      netip.Addr `json:"address"`
	AddressError string     `json:"addressError,omitempty"`
	ASN          int64      `json:"asn"`
	// DiscoverFamily is "ipv4" or "ipv6" when the address is the gateway
	// of the node's default route of that family (autoDiscovery mode
	// DefaultGateway); Address is then invalid.
	DiscoverFamily string `json:"discoverFamily,omitempty"`
	// Interface is the node's interface toward the peer: peerInterface
	// (Address is then IPv6 link-local) or, with Unnumbered, the
	// interface autoDiscovery names.
	Interface string `json:"interface,omitempty"`
	// Unnumbered: BGP unnumbered (autoDiscovery mode Unnumbered). The
	// address is the interface's one IPv6 link-local neighbour; the
	// interface is Interface or, when that is "", the one the default
	// route of UnnumberedFamily leaves by.
	Unnumbered       bool   `json:"unnumbered,omitempty"`
	UnnumberedFamily string `json:"unnumberedFamily,omitempty"`
	// PeerConfig is the CiliumBGPPeerConfig it refers to, "" for the
	// defaults.
	PeerConfig string `json:"peerConfig,omitempty"`
}

// SelectsNode matches the node selector; nil selects every node, a
// selector that does not parse none.
func (c *BGPClusterConfig) SelectsNode(nodeLabels map[string]string) bool {
	return matches(c.nodeSel, c.NodeSelector, c.NodeSelectorError, true, nodeLabels)
}

func (c *BGPClusterConfig) TableHeader() []string {
	return []string{"Name", "NodeSelector", "Instances", "Error"}
}

func (c *BGPClusterConfig) TableRow() []string {
	var insts []string
	for _, i := range c.Instances {
		var peers []string
		for _, p := range i.Peers {
			addr := addrOrDash(p.Address)
			switch {
			case p.DiscoverFamily != "":
				addr = "<" + p.DiscoverFamily + " default gateway>"
			case p.Unnumbered && p.Interface != "":
				addr = "<unnumbered " + p.Interface + ">"
			case p.Unnumbered:
				addr = "<unnumbered, " + p.UnnumberedFamily + " default route's interface>"
			case p.Interface != "":
				addr += "%" + p.Interface
			}
			peers = append(peers, fmt.Sprintf("%s=%s/AS%d", p.Name, addr, p.ASN))
		}
		insts = append(insts, fmt.Sprintf("%s(AS%d: %s)", i.Name, i.LocalASN, strings.Join(peers, ",")))
	}
	return []string{c.Name, selectorString(c.NodeSelector, "<all>"), dash(strings.Join(insts, " ")), dash(c.NodeSelectorError)}
}

// BGPPeerConfig is a CiliumBGPPeerConfig with Cilium's defaults filled in.
type BGPPeerConfig struct {
	Name       string `json:"name"`
	UID        string `json:"uid"`
	Generation int64  `json:"generation"`

	PeerPort int32 `json:"peerPort"`
	// SourceInterface names the device whose address is the sessions'
	// source ("": the kernel picks).
	SourceInterface     string      `json:"sourceInterface,omitempty"`
	ConnectRetrySeconds int32       `json:"connectRetrySeconds"`
	HoldTimeSeconds     int32       `json:"holdTimeSeconds"`
	KeepAliveSeconds    int32       `json:"keepAliveSeconds"`
	AuthSecret          string      `json:"authSecret,omitempty"`
	GracefulRestart     bool        `json:"gracefulRestart"`
	RestartTimeSeconds  int32       `json:"restartTimeSeconds"`
	EBGPMultihop        int32       `json:"ebgpMultihop"`
	Families            []BGPFamily `json:"families"`
	// BFD is the peer's BFD session; nil: none.
	BFD *BGPBFD `json:"bfd,omitempty"`
	// Errors are fields that do not make sense together (a keepalive not
	// shorter than the hold time) or selectors that do not parse.
	Errors []string `json:"errors,omitempty"`

	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// BGPFamily is an address family of a peer and the advertisements
// (CiliumBGPAdvertisement objects, by label) sent in it.
type BGPFamily struct {
	AFI                 string                `json:"afi"`
	SAFI                string                `json:"safi"`
	Advertisements      *metav1.LabelSelector `json:"advertisements,omitempty"`
	AdvertisementsError string                `json:"advertisementsError,omitempty"`

	advSel labels.Selector // Advertisements parsed once (nil: parse on use)
}

// SelectsAdvertisement matches the family's advertisement selector; nil
// selects no advertisement (Cilium's rule: nothing is sent unless asked).
func (f BGPFamily) SelectsAdvertisement(advLabels map[string]string) bool {
	return matches(f.advSel, f.Advertisements, f.AdvertisementsError, false, advLabels)
}

// IPv6 reports whether the family carries IPv6 prefixes.
func (f BGPFamily) IPv6() bool { return f.AFI == v2alpha1.BGPAfiIPv6 }

// DefaultBGPPeerConfig is what a peer without a peerConfigRef gets: both
// unicast families, nothing advertised.
func DefaultBGPPeerConfig() *BGPPeerConfig {
	return &BGPPeerConfig{
		PeerPort: v2alpha1.DefaultBGPPeerPort, ConnectRetrySeconds: v2alpha1.DefaultBGPConnectRetryTimeSeconds,
		HoldTimeSeconds: v2alpha1.DefaultBGPHoldTimeSeconds, KeepAliveSeconds: v2alpha1.DefaultBGPKeepAliveTimeSeconds,
		RestartTimeSeconds: v2alpha1.DefaultBGPGRRestartTimeSeconds, EBGPMultihop: v2alpha1.DefaultBGPEBGPMultihopTTL,
		Families: defaultBGPFamilies(),
	}
}

func defaultBGPFamilies() []BGPFamily {
	return []BGPFamily{
		{AFI: v2alpha1.BGPAfiIPv4, SAFI: v2alpha1.BGPSafiUnicast},
		{AFI: v2alpha1.BGPAfiIPv6, SAFI: v2alpha1.BGPSafiUnicast},
	}
}

func (c *BGPPeerConfig) TableHeader() []string {
	return []string{"Name", "Port", "Timers", "GracefulRestart", "Multihop", "Auth", "Families", "Error"}
}

func (c *BGPPeerConfig) TableRow() []string {
	gr := "off"
	if c.GracefulRestart {
		gr = fmt.Sprintf("%ds", c.RestartTimeSeconds)
	}
	var fams []string
	for _, f := range c.Families {
		fams = append(fams, f.AFI+"/"+f.SAFI+"["+selectorString(f.Advertisements, "<none>")+"]")
	}
	port := itoa(int(c.PeerPort))
	if c.SourceInterface != "" {
		port += " from " + c.SourceInterface
	}
	return []string{c.Name, port,
		fmt.Sprintf("%d/%d/%d", c.ConnectRetrySeconds, c.HoldTimeSeconds, c.KeepAliveSeconds),
		gr, itoa(int(c.EBGPMultihop)), dash(c.AuthSecret), strings.Join(fams, " "), dash(strings.Join(c.Errors, "; "))}
}

// BGPNodeOverride is a CiliumBGPNodeConfigOverride: per node (it is named
// after the node), the router ID, listen port and peers' local addresses of
// its instances.
type BGPNodeOverride struct {
	Name      string                `json:"name"`
	Instances []BGPInstanceOverride `json:"instances"`
}

// BGPInstanceOverride overrides one instance on one node.
type BGPInstanceOverride struct {
	Name     string     `json:"name"`
	RouterID netip.Addr `json:"routerID"` // invalid: not overridden
	// LocalPort is the port the instance listens on; 0: not overridden.
	LocalPort int32 `json:"localPort,omitempty"`
	// LocalASN is the instance's AS number on this node; 0: the cluster
	// config's.
	LocalASN     int64                 `json:"localASN,omitempty"`
	LocalAddress map[string]netip.Addr `json:"localAddress,omitempty"` // by peer name
	// IgnoredPeerLocalPorts names the peers whose override sets
	// localPort, which Cilium deprecated and ignores (the kernel picks
	// the source port): ignored here too, and logged.
	IgnoredPeerLocalPorts []string `json:"ignoredPeerLocalPorts,omitempty"`
	Errors                []string `json:"errors,omitempty"`
}

func (o *BGPNodeOverride) TableHeader() []string { return []string{"Node", "Instances"} }

func (o *BGPNodeOverride) TableRow() []string {
	var insts []string
	for _, i := range o.Instances {
		s := fmt.Sprintf("%s(routerID=%s port=%d", i.Name, addrOrDash(i.RouterID), i.LocalPort)
		for _, p := range slices.Sorted(mapsKeys(i.LocalAddress)) {
			s += " " + p + "@" + i.LocalAddress[p].String()
		}
		insts = append(insts, s+")")
	}
	return []string{o.Name, dash(strings.Join(insts, " "))}
}

// Instance returns the override of one instance, if any.
func (o *BGPNodeOverride) Instance(name string) (BGPInstanceOverride, bool) {
	if o == nil {
		return BGPInstanceOverride{}, false
	}
	for _, i := range o.Instances {
		if i.Name == name {
			return i, true
		}
	}
	return BGPInstanceOverride{}, false
}

func nameIndex[T any](name func(T) string) statedb.Index[T, string] {
	return statedb.Index[T, string]{
		Name:       "name",
		FromObject: func(o T) index.KeySet { return index.NewKeySet(index.String(name(o))) },
		FromKey:    index.String,
		FromString: index.FromString,
		Unique:     true,
	}
}

// The primary indexes of the BGP resource tables: by name.
var (
	BGPClusterConfigNameIndex = nameIndex(func(c *BGPClusterConfig) string { return c.Name })
	BGPPeerConfigNameIndex    = nameIndex(func(c *BGPPeerConfig) string { return c.Name })
	BGPAdvertisementNameIndex = nameIndex(func(a *BGPAdvertisement) string { return a.Name })
	BGPNodeOverrideNameIndex  = nameIndex(func(o *BGPNodeOverride) string { return o.Name })
)

func NewBGPClusterConfigsTable(db *statedb.DB) (statedb.RWTable[*BGPClusterConfig], error) {
	return statedb.NewTable(db, BGPClusterConfigsTableName, BGPClusterConfigNameIndex)
}

func NewBGPPeerConfigsTable(db *statedb.DB) (statedb.RWTable[*BGPPeerConfig], error) {
	return statedb.NewTable(db, BGPPeerConfigsTableName, BGPPeerConfigNameIndex)
}

func NewBGPAdvertisementsTable(db *statedb.DB) (statedb.RWTable[*BGPAdvertisement], error) {
	return statedb.NewTable(db, BGPAdvertisementsTableName, BGPAdvertisementNameIndex)
}

func NewBGPNodeOverridesTable(db *statedb.DB) (statedb.RWTable[*BGPNodeOverride], error) {
	return statedb.NewTable(db, BGPNodeOverridesTableName, BGPNodeOverrideNameIndex)
}

// matches applies a label selector that may be nil (nilMatches says what
// nil means) or broken (parseErr set: matches nothing). parsed is the
// selector as the conversion parsed it; rows made otherwise (tests) parse
// on use. The derivation matches every Service against every
// advertisement on each change: parsing once keeps that cheap.
func matches(parsed labels.Selector, sel *metav1.LabelSelector, parseErr string, nilMatches bool, objLabels map[string]string) bool {
	if parseErr != "" {
		return false
	}
	if sel == nil {
		return nilMatches
	}
	if parsed == nil {
		var err error
		if parsed, err = selectorFrom(sel); err != nil {
			return false
		}
	}
	return parsed.Matches(labels.Set(objLabels))
}

// parseSelector parses a selector for matches; nil for none or a broken one.
func parseSelector(sel *metav1.LabelSelector) labels.Selector {
	if sel == nil {
		return nil
	}
	s, err := selectorFrom(sel)
	if err != nil {
		return nil
	}
	return s
}

// checkSelector returns the problem of a selector, "" when it is fine.
func checkSelector(sel *metav1.LabelSelector, path string) string {
	if err := validateSelector(sel, field.NewPath(path)); err != nil {
		return err.Error()
	}
	if _, err := selectorFrom(sel); err != nil {
		return err.Error()
	}
	return ""
}

func selectorString(s *metav1.LabelSelector, ifNil string) string {
	if s == nil {
		return ifNil
	}
	if f := metav1.FormatLabelSelector(s); f != "" {
		return f
	}
	return "<all>"
}

func addrOrDash(a netip.Addr) string {
	if !a.IsValid() {
		return "-"
	}
	return a.String()
}
