package crdvalidation

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// The manifests below are the examples of Cilium's BGP control plane (v2)
// documentation, applied unchanged: Herald's CRDs must take them as
// Cilium's do.

const bgpClusterConfig = `
apiVersion: cilium.io/v2alpha1
kind: CiliumBGPClusterConfig
metadata:
  name: cilium-bgp
spec:
  nodeSelector:
    matchLabels:
      rack: rack0
  bgpInstances:
  - name: "instance-65000"
    localASN: 65000
    peers:
    - name: "peer-65000-tor1"
      peerASN: 65000
      peerAddress: fd00:10:0:0::1
      peerConfigRef:
        name: "cilium-peer"
    - name: "peer-65000-tor2"
      peerASN: 65000
      peerAddress: 10.0.0.1
      peerConfigRef:
        name: "cilium-peer"
`

const bgpPeerConfig = `
apiVersion: cilium.io/v2alpha1
kind: CiliumBGPPeerConfig
metadata:
  name: cilium-peer
spec:
  timers:
    holdTimeSeconds: 9
    keepAliveTimeSeconds: 3
  authSecretRef: bgp-auth-secret
  ebgpMultihop: 4
  gracefulRestart:
    enabled: true
    restartTimeSeconds: 15
  transport:
    sourceInterface: lo-bgp
  families:
    - afi: ipv4
      safi: unicast
      advertisements:
        matchLabels:
          advertise: "bgp"
    - afi: ipv6
      safi: unicast
      advertisements:
        matchLabels:
          advertise: "bgp"
`

const bgpAdvertisements = `
apiVersion: cilium.io/v2alpha1
kind: CiliumBGPAdvertisement
metadata:
  name: bgp-advertisements
  labels:
    advertise: bgp
spec:
  advertisements:
    - advertisementType: "PodCIDR"
      attributes:
        communities:
          wellKnown: [ "no-export" ]
          large: [ "64512:1:1" ]
          standard: [ "64512:1", "4294967295" ]
        localPreference: 99
    - advertisementType: "CiliumPodIPPool"
      selector:
        matchLabels:
          cluster: "blue"
    - advertisementType: "Interface"
      interface:
        name: "lo"
    - advertisementType: "Service"
      service:
        addresses:
          - ClusterIP
          - ExternalIP
          - LoadBalancerIP
        aggregationLengthIPv4: 24
        aggregationLengthIPv6: 120
      selector:
        matchExpressions:
          - {key: somekey, operator: NotIn, values: ['never-used-value']}
      attributes:
        communities:
          standard: [ "65000:100" ]
`

const bgpNodeConfigOverride = `
apiVersion: cilium.io/v2alpha1
kind: CiliumBGPNodeConfigOverride
metadata:
  name: bgpv2-cplane-dev-multi-homing-worker
spec:
  bgpInstances:
    - name: "instance-65000"
      routerID: "192.168.10.1"
      localPort: 1790
      peers:
        - name: "peer-65000-tor1"
          localAddress: fd00:10:0:2::2
        - name: "peer-65000-tor2"
          localAddress: 10.0.2.2
`

// bgpNodeConfig is what Cilium's documentation shows of
// `kubectl get ciliumbgpnodeconfigs -o yaml`, spec and status.
const bgpNodeConfig = `
apiVersion: cilium.io/v2alpha1
kind: CiliumBGPNodeConfig
metadata:
  name: bgpv2-cplane-dev-multi-homing-worker
spec:
  bgpInstances:
  - localASN: 65001
    name: instance-65001
    peers:
    - name: peer-65000-tor1
      peerASN: 65000
      peerAddress: fd00:10:0:1::1
      peerConfigRef:
        group: cilium.io
        kind: CiliumBGPPeerConfig
        name: cilium-peer
    - name: peer-65000-tor2
      peerASN: 65000
      peerAddress: fd00:11:0:1::1
      peerConfigRef:
        group: cilium.io
        kind: CiliumBGPPeerConfig
        name: cilium-peer
status:
  bgpInstances:
  - localASN: 65001
    name: instance-65001
    peers:
    - establishedTime: "2024-05-15T12:18:22Z"
      name: peer-65000-tor1
      peerASN: 65000
      peerAddress: fd00:10:0:1::1
      peeringState: established
      routeCount:
      - advertised: 2
        afi: ipv6
        received: 1
        safi: unicast
      timers:
        appliedHoldTimeSeconds: 9
        appliedKeepaliveSeconds: 3
    - name: peer-65000-tor2
      peerASN: 65000
      peerAddress: fd00:11:0:1::1
      peeringState: active
`

// bgpNow is a condition time as it reads back from the API server: whole
// seconds, local time.
func bgpNow() metav1.Time { return metav1.NewTime(time.Now().Truncate(time.Second)) }

func bgpGVR(plural string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: v2alpha1.GroupName, Version: v2alpha1.Version, Resource: plural}
}

// applyBGP creates doc untyped, as kubectl does (unknown fields are errors),
// and deletes it when the test ends. Status in doc is dropped by the API
// server (status subresource) or kept (none): tests write it separately.
func applyBGP(t *testing.T, plural, doc string) {
	t.Helper()
	ctx := context.Background()
	var obj unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatal(err)
	}
	r := dyn.Resource(bgpGVR(plural))
	if _, err := r.Create(ctx, &obj, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
		t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
	t.Cleanup(func() { _ = r.Delete(ctx, obj.GetName(), metav1.DeleteOptions{}) })
}

// decodeStrict decodes doc into out, failing on fields the Go types lack.
func decodeStrict(t *testing.T, doc string, out any) {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(doc), out); err != nil {
		t.Fatalf("decoding into %T: %v", out, err)
	}
}

func TestBGPClusterConfig(t *testing.T) {
	ctx := context.Background()
	applyBGP(t, v2alpha1.BGPClusterConfigPlural, bgpClusterConfig)
	var want v2alpha1.CiliumBGPClusterConfig
	decodeStrict(t, bgpClusterConfig, &want)
	// The API server fills in the reference's group and kind.
	for i := range want.Spec.BGPInstances[0].Peers {
		ref := want.Spec.BGPInstances[0].Peers[i].PeerConfigRef
		ref.Group, ref.Kind = v2alpha1.GroupName, v2alpha1.BGPPeerConfigKind
	}
	ccs := clientset.CiliumV2alpha1().CiliumBGPClusterConfigs()
	got, err := ccs.Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Spec, want.Spec) {
		t.Errorf("spec = %+v, want %+v", got.Spec, want.Spec)
	}

	// The status subresource takes the conditions.
	got.Status.Conditions = []metav1.Condition{{
		Type: v2alpha1.BGPClusterConfigConditionMissingPeerConfigs, Status: metav1.ConditionTrue,
		Reason: "MissingPeerConfigs", Message: "Referenced CiliumBGPPeerConfig(s) are missing: [cilium-peer]",
		LastTransitionTime: bgpNow(),
	}}
	updated, err := ccs.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("UpdateStatus: %v", err)
	}
	if !reflect.DeepEqual(updated.Status, got.Status) {
		t.Errorf("status = %+v, want %+v", updated.Status, got.Status)
	}
}

func TestBGPPeerConfig(t *testing.T) {
	ctx := context.Background()
	applyBGP(t, v2alpha1.BGPPeerConfigPlural, bgpPeerConfig)
	var want v2alpha1.CiliumBGPPeerConfig
	decodeStrict(t, bgpPeerConfig, &want)
	want.Spec.Timers.ConnectRetryTimeSeconds = ptr.To[int32](v2alpha1.DefaultBGPConnectRetryTimeSeconds)
	want.Spec.Transport.PeerPort = ptr.To[int32](v2alpha1.DefaultBGPPeerPort)
	pcs := clientset.CiliumV2alpha1().CiliumBGPPeerConfigs()
	got, err := pcs.Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Spec, want.Spec) {
		t.Errorf("spec = %+v, want %+v", got.Spec, want.Spec)
	}
	got.Status.Conditions = []metav1.Condition{{
		Type: v2alpha1.BGPPeerConfigConditionMissingAuthSecret, Status: metav1.ConditionTrue,
		Reason: "MissingAuthSecret", Message: "Referenced Auth Secret kube-system/bgp-auth-secret is missing",
		LastTransitionTime: bgpNow(),
	}}
	updated, err := pcs.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("UpdateStatus: %v", err)
	}
	if !reflect.DeepEqual(updated.Status, got.Status) {
		t.Errorf("status = %+v, want %+v", updated.Status, got.Status)
	}
}

// TestBGPPeerConfigDefaults: a peer config with empty transport, timers and
// graceful restart gets Cilium's defaults, except localPort (none).
func TestBGPPeerConfigDefaults(t *testing.T) {
	ctx := context.Background()
	applyBGP(t, v2alpha1.BGPPeerConfigPlural, `
apiVersion: cilium.io/v2alpha1
kind: CiliumBGPPeerConfig
metadata: {name: defaults}
spec: {transport: {}, timers: {}, gracefulRestart: {enabled: true}}
`)
	got, err := clientset.CiliumV2alpha1().CiliumBGPPeerConfigs().Get(ctx, "defaults", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := v2alpha1.CiliumBGPPeerConfigSpec{
		Transport: &v2alpha1.CiliumBGPTransport{PeerPort: ptr.To[int32](v2alpha1.DefaultBGPPeerPort)},
		Timers: &v2alpha1.CiliumBGPTimers{
			ConnectRetryTimeSeconds: ptr.To[int32](v2alpha1.DefaultBGPConnectRetryTimeSeconds),
			HoldTimeSeconds:         ptr.To[int32](v2alpha1.DefaultBGPHoldTimeSeconds),
			KeepAliveTimeSeconds:    ptr.To[int32](v2alpha1.DefaultBGPKeepAliveTimeSeconds),
		},
		GracefulRestart: &v2alpha1.CiliumBGPNeighborGracefulRestart{
			Enabled: true, RestartTimeSeconds: ptr.To[int32](v2alpha1.DefaultBGPGRRestartTimeSeconds),
		},
		EBGPMultihop: ptr.To[int32](v2alpha1.DefaultBGPEBGPMultihopTTL),
	}
	if !reflect.DeepEqual(got.Spec, want) {
		t.Errorf("spec = %+v, want %+v", got.Spec, want)
	}
}

func TestBGPAdvertisement(t *testing.T) {
	ctx := context.Background()
	applyBGP(t, v2alpha1.BGPAdvertisementPlural, bgpAdvertisements)
	var want v2alpha1.CiliumBGPAdvertisement
	decodeStrict(t, bgpAdvertisements, &want)
	got, err := clientset.CiliumV2alpha1().CiliumBGPAdvertisements().Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Spec, want.Spec) {
		t.Errorf("spec = %+v, want %+v", got.Spec, want.Spec)
	}
	var types []v2alpha1.BGPAdvertisementType
	for _, a := range got.Spec.Advertisements {
		types = append(types, a.AdvertisementType)
	}
	if !reflect.DeepEqual(types, []v2alpha1.BGPAdvertisementType{v2alpha1.BGPPodCIDRAdvert, v2alpha1.BGPCiliumPodIPPoolAdvert, v2alpha1.BGPInterfaceAdvert, v2alpha1.BGPServiceAdvert}) {
		t.Errorf("advertisement types = %q", types)
	}
	got.Status.Conditions = []metav1.Condition{{
		Type: "cilium.io/Example", Status: metav1.ConditionFalse, Reason: "Example", Message: "status is writable",
		LastTransitionTime: bgpNow(),
	}}
	if _, err := clientset.CiliumV2alpha1().CiliumBGPAdvertisements().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Errorf("UpdateStatus: %v", err)
	}
}

func TestBGPNodeConfigOverride(t *testing.T) {
	ctx := context.Background()
	applyBGP(t, v2alpha1.BGPNodeConfigOverridePlural, bgpNodeConfigOverride)
	var want v2alpha1.CiliumBGPNodeConfigOverride
	decodeStrict(t, bgpNodeConfigOverride, &want)
	got, err := clientset.CiliumV2alpha1().CiliumBGPNodeConfigOverrides().Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Spec, want.Spec) {
		t.Errorf("spec = %+v, want %+v", got.Spec, want.Spec)
	}
}

// TestBGPNodeConfig writes the documented node config through the typed
// client, spec then status, reads both back and checks what
// `kubectl get ciliumbgpnodeconfigs` prints.
func TestBGPNodeConfig(t *testing.T) {
	ctx := context.Background()
	var want v2alpha1.CiliumBGPNodeConfig
	decodeStrict(t, bgpNodeConfig, &want)
	ncs := clientset.CiliumV2alpha1().CiliumBGPNodeConfigs()
	created, err := ncs.Create(ctx, want.DeepCopy(), metav1.CreateOptions{FieldValidation: "Strict"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ncs.Delete(ctx, want.Name, metav1.DeleteOptions{}) })
	if len(created.Status.BGPInstances) != 0 {
		t.Errorf("create kept the status: %+v", created.Status)
	}
	created.Status = want.Status
	created.Status.Conditions = []metav1.Condition{{
		Type: "cilium.io/Example", Status: metav1.ConditionFalse, Reason: "Example", Message: "conditions are writable",
		LastTransitionTime: bgpNow(),
	}}
	if _, err := ncs.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("UpdateStatus: %v", err)
	}
	got, err := ncs.Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Spec, want.Spec) {
		t.Errorf("spec = %+v, want %+v", got.Spec, want.Spec)
	}
	if !reflect.DeepEqual(got.Status, created.Status) {
		t.Errorf("status = %+v, want %+v", got.Status, created.Status)
	}
	peer := got.Status.BGPInstances[0].PeerStatuses[0]
	if ptr.Deref(peer.PeeringState, "") != "established" || ptr.Deref(peer.RouteCount[0].Advertised, 0) != 2 ||
		ptr.Deref(peer.Timers.AppliedKeepaliveSeconds, 0) != 3 || ptr.Deref(peer.EstablishedTime, "") != "2024-05-15T12:18:22Z" {
		t.Errorf("first peer's status = %+v", peer)
	}

	// The API server's table shows the first value each column finds: the
	// first peer of the first instance.
	table := getTable(t, v2alpha1.GroupName, v2alpha1.Version, v2alpha1.BGPNodeConfigPlural, want.Name)
	if cols, wantCols := columnNames(table), []string{"Name", "Peer", "State", "Age"}; !reflect.DeepEqual(cols, wantCols) {
		t.Errorf("columns = %q, want %q", cols, wantCols)
	}
	if len(table.Rows) != 1 || len(table.Rows[0].Cells) != 4 {
		t.Fatalf("rows = %+v", table.Rows)
	}
	if cells, wantCells := table.Rows[0].Cells[:3], []any{want.Name, "fd00:10:0:1::1", "established"}; !reflect.DeepEqual(cells, wantCells) {
		t.Errorf("cells = %#v, want %#v", cells, wantCells)
	}
}

// TestBGPDiscovery checks the names kubectl resolves: Cilium's short names,
// the categories cilium and ciliumbgp, cluster scope, and which resources
// have a status subresource.
func TestBGPDiscovery(t *testing.T) {
	list, err := testCluster.Client.Discovery().ServerResourcesForGroupVersion(v2alpha1.SchemeGroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		resource, kind, shortName string
		status                    bool
	}{
		{v2alpha1.BGPClusterConfigPlural, v2alpha1.BGPClusterConfigKind, "cbgpcluster", true},
		{v2alpha1.BGPPeerConfigPlural, v2alpha1.BGPPeerConfigKind, "cbgppeer", true},
		{v2alpha1.BGPAdvertisementPlural, v2alpha1.BGPAdvertisementKind, "cbgpadvert", true},
		{v2alpha1.BGPNodeConfigOverridePlural, v2alpha1.BGPNodeConfigOverrideKind, "cbgpnodeoverride", false},
		{v2alpha1.BGPNodeConfigPlural, v2alpha1.BGPNodeConfigKind, "cbgpnode", true},
	} {
		var found, status bool
		for _, r := range list.APIResources {
			switch r.Name {
			case tc.resource:
				found = true
				if r.Kind != tc.kind || r.Namespaced || !reflect.DeepEqual(r.ShortNames, []string{tc.shortName}) ||
					!slices.Contains(r.Categories, "cilium") || !slices.Contains(r.Categories, "ciliumbgp") {
					t.Errorf("%s: kind %s, namespaced %v, short names %q, categories %q", r.Name, r.Kind, r.Namespaced, r.ShortNames, r.Categories)
				}
			case tc.resource + "/status":
				status = true
			}
		}
		if !found || status != tc.status {
			t.Errorf("%s: served %v, status subresource %v (want %v)", tc.resource, found, status, tc.status)
		}
	}
}

// rejectedBGP are objects with one mistake each; want are substrings of the
// API server's error (field path and message) on every supported version.
var rejectedBGP = []struct {
	name, kind, plural, spec string
	want                     []string
}{
	{"cluster-local-asn-0", "CiliumBGPClusterConfig", v2alpha1.BGPClusterConfigPlural,
		`{bgpInstances: [{name: a, localASN: 0}]}`,
		[]string{"spec.bgpInstances[0].localASN", "greater than or equal to 1"}},
	{"cluster-peer-asn-too-big", "CiliumBGPClusterConfig", v2alpha1.BGPClusterConfigPlural,
		`{bgpInstances: [{name: a, localASN: 65000, peers: [{name: p, peerASN: 4294967296}]}]}`,
		[]string{"spec.bgpInstances[0].peers[0].peerASN", "less than or equal to 4294967295"}},
	{"cluster-peer-address", "CiliumBGPClusterConfig", v2alpha1.BGPClusterConfigPlural,
		`{bgpInstances: [{name: a, peers: [{name: p, peerAddress: tor1.example}]}]}`,
		[]string{"spec.bgpInstances[0].peers[0].peerAddress", "should match"}},
	{"cluster-duplicate-peer", "CiliumBGPClusterConfig", v2alpha1.BGPClusterConfigPlural,
		`{bgpInstances: [{name: a, peers: [{name: p}, {name: p}]}]}`,
		[]string{"spec.bgpInstances[0].peers[1]", "Duplicate value"}},
	{"cluster-no-instances", "CiliumBGPClusterConfig", v2alpha1.BGPClusterConfigPlural,
		`{bgpInstances: []}`,
		[]string{"spec.bgpInstances", "should have at least 1 items"}},
	{"cluster-bad-operator", "CiliumBGPClusterConfig", v2alpha1.BGPClusterConfigPlural,
		`{nodeSelector: {matchExpressions: [{key: rack, operator: Equals, values: [rack0]}]}, bgpInstances: [{name: a}]}`,
		[]string{"spec.nodeSelector.matchExpressions[0].operator", `Unsupported value: "Equals"`}},
	{"cluster-discovery-without-gateway", "CiliumBGPClusterConfig", v2alpha1.BGPClusterConfigPlural,
		`{bgpInstances: [{name: a, peers: [{name: p, autoDiscovery: {mode: DefaultGateway}}]}]}`,
		[]string{"spec.bgpInstances[0].peers[0].autoDiscovery", "defaultGateway must be set when mode is DefaultGateway"}},
	{"cluster-discovery-mode", "CiliumBGPClusterConfig", v2alpha1.BGPClusterConfigPlural,
		`{bgpInstances: [{name: a, peers: [{name: p, autoDiscovery: {mode: Neighbors, defaultGateway: {addressFamily: ipv4}}}]}]}`,
		[]string{"spec.bgpInstances[0].peers[0].autoDiscovery.mode", `Unsupported value: "Neighbors"`}},
	{"cluster-discovery-family", "CiliumBGPClusterConfig", v2alpha1.BGPClusterConfigPlural,
		`{bgpInstances: [{name: a, peers: [{name: p, autoDiscovery: {mode: DefaultGateway, defaultGateway: {addressFamily: inet}}}]}]}`,
		[]string{"spec.bgpInstances[0].peers[0].autoDiscovery.defaultGateway.addressFamily", `Unsupported value: "inet"`}},
	{"cluster-unnumbered-without-interface", "CiliumBGPClusterConfig", v2alpha1.BGPClusterConfigPlural,
		`{bgpInstances: [{name: a, peers: [{name: p, autoDiscovery: {mode: Unnumbered}}]}]}`,
		[]string{"spec.bgpInstances[0].peers[0].autoDiscovery", "exactly one of unnumbered or defaultGateway must be set when mode is Unnumbered"}},
	{"cluster-unnumbered-two-ways", "CiliumBGPClusterConfig", v2alpha1.BGPClusterConfigPlural,
		`{bgpInstances: [{name: a, peers: [{name: p, autoDiscovery: {mode: Unnumbered, unnumbered: {interface: eth1}, defaultGateway: {addressFamily: ipv4}}}]}]}`,
		[]string{"spec.bgpInstances[0].peers[0].autoDiscovery", "exactly one of unnumbered or defaultGateway must be set when mode is Unnumbered"}},
	{"cluster-unnumbered-empty-interface", "CiliumBGPClusterConfig", v2alpha1.BGPClusterConfigPlural,
		`{bgpInstances: [{name: a, peers: [{name: p, autoDiscovery: {mode: Unnumbered, unnumbered: {interface: ""}}}]}]}`,
		[]string{"spec.bgpInstances[0].peers[0].autoDiscovery.unnumbered.interface", "should be at least 1 chars long"}},
	{"cluster-peer-interface-global-address", "CiliumBGPClusterConfig", v2alpha1.BGPClusterConfigPlural,
		`{bgpInstances: [{name: a, peers: [{name: p, peerAddress: "fd00::1", peerInterface: eth1}]}]}`,
		[]string{"spec.bgpInstances[0].peers[0]", "peerAddress must be an IPv6 link-local address (fe80::/64) when peerInterface is set"}},
	{"cluster-peer-interface-site-local", "CiliumBGPClusterConfig", v2alpha1.BGPClusterConfigPlural,
		`{bgpInstances: [{name: a, peers: [{name: p, peerAddress: "fec0::1", peerInterface: eth1}]}]}`,
		[]string{"spec.bgpInstances[0].peers[0]", "peerAddress must be an IPv6 link-local address (fe80::/64) when peerInterface is set"}},
	{"cluster-local-port-0", "CiliumBGPClusterConfig", v2alpha1.BGPClusterConfigPlural,
		`{bgpInstances: [{name: a, localPort: 0}]}`,
		[]string{"spec.bgpInstances[0].localPort", "greater than or equal to 1"}},
	{"peer-port-70000", "CiliumBGPPeerConfig", v2alpha1.BGPPeerConfigPlural,
		`{transport: {peerPort: 70000}}`,
		[]string{"spec.transport.peerPort", "less than or equal to 65535"}},
	{"peer-bad-afi", "CiliumBGPPeerConfig", v2alpha1.BGPPeerConfigPlural,
		`{families: [{afi: ipv5, safi: unicast}]}`,
		[]string{"spec.families[0].afi", `Unsupported value: "ipv5"`}},
	{"peer-bad-safi", "CiliumBGPPeerConfig", v2alpha1.BGPPeerConfigPlural,
		`{families: [{afi: ipv4, safi: anycast}]}`,
		[]string{"spec.families[0].safi", `Unsupported value: "anycast"`}},
	{"peer-hold-time-2", "CiliumBGPPeerConfig", v2alpha1.BGPPeerConfigPlural,
		`{timers: {holdTimeSeconds: 2, keepAliveTimeSeconds: 1}}`,
		[]string{"spec.timers.holdTimeSeconds", "greater than or equal to 3"}},
	{"peer-keepalive-above-hold", "CiliumBGPPeerConfig", v2alpha1.BGPPeerConfigPlural,
		`{timers: {holdTimeSeconds: 9, keepAliveTimeSeconds: 10}}`,
		[]string{"spec.timers", "keepAliveTimeSeconds must not be larger than holdTimeSeconds"}},
	{"peer-multihop-0", "CiliumBGPPeerConfig", v2alpha1.BGPPeerConfigPlural,
		`{ebgpMultihop: 0}`,
		[]string{"spec.ebgpMultihop", "greater than or equal to 1"}},
	{"peer-restart-time", "CiliumBGPPeerConfig", v2alpha1.BGPPeerConfigPlural,
		`{gracefulRestart: {enabled: true, restartTimeSeconds: 4096}}`,
		[]string{"spec.gracefulRestart.restartTimeSeconds", "less than or equal to 4095"}},
	{"advert-bad-type", "CiliumBGPAdvertisement", v2alpha1.BGPAdvertisementPlural,
		`{advertisements: [{advertisementType: PodCIDRs}]}`,
		[]string{"spec.advertisements[0].advertisementType", `Unsupported value: "PodCIDRs"`}},
	{"advert-service-without-addresses", "CiliumBGPAdvertisement", v2alpha1.BGPAdvertisementPlural,
		`{advertisements: [{advertisementType: Service}]}`,
		[]string{"spec.advertisements[0]", "advertisementType Service needs service.addresses"}},
	{"advert-empty-addresses", "CiliumBGPAdvertisement", v2alpha1.BGPAdvertisementPlural,
		`{advertisements: [{advertisementType: Service, service: {addresses: []}}]}`,
		[]string{"spec.advertisements[0].service.addresses", "should have at least 1 items"}},
	{"advert-bad-address", "CiliumBGPAdvertisement", v2alpha1.BGPAdvertisementPlural,
		`{advertisements: [{advertisementType: Service, service: {addresses: [NodeIP]}}]}`,
		[]string{"spec.advertisements[0].service.addresses[0]", `Unsupported value: "NodeIP"`}},
	{"advert-interface-without-name", "CiliumBGPAdvertisement", v2alpha1.BGPAdvertisementPlural,
		`{advertisements: [{advertisementType: Interface}]}`,
		[]string{"spec.advertisements[0]", "advertisementType Interface needs interface.name"}},
	{"advert-interface-empty-name", "CiliumBGPAdvertisement", v2alpha1.BGPAdvertisementPlural,
		`{advertisements: [{advertisementType: Interface, interface: {name: ""}}]}`,
		[]string{"spec.advertisements[0].interface.name", "at least 1 chars long"}},
	{"advert-aggregation-ipv4-32", "CiliumBGPAdvertisement", v2alpha1.BGPAdvertisementPlural,
		`{advertisements: [{advertisementType: Service, service: {addresses: [LoadBalancerIP], aggregationLengthIPv4: 32}}]}`,
		[]string{"spec.advertisements[0].service.aggregationLengthIPv4", "less than or equal to 31"}},
	{"advert-aggregation-ipv6-128", "CiliumBGPAdvertisement", v2alpha1.BGPAdvertisementPlural,
		`{advertisements: [{advertisementType: Service, service: {addresses: [LoadBalancerIP], aggregationLengthIPv6: 128}}]}`,
		[]string{"spec.advertisements[0].service.aggregationLengthIPv6", "less than or equal to 127"}},
	{"advert-bad-standard-community", "CiliumBGPAdvertisement", v2alpha1.BGPAdvertisementPlural,
		`{advertisements: [{advertisementType: PodCIDR, attributes: {communities: {standard: ["65536:1"]}}}]}`,
		[]string{"spec.advertisements[0].attributes.communities.standard[0]", "should match"}},
	{"advert-bad-well-known-community", "CiliumBGPAdvertisement", v2alpha1.BGPAdvertisementPlural,
		`{advertisements: [{advertisementType: PodCIDR, attributes: {communities: {wellKnown: [no-exports]}}}]}`,
		[]string{"spec.advertisements[0].attributes.communities.wellKnown[0]", `Unsupported value: "no-exports"`}},
	{"advert-bad-large-community", "CiliumBGPAdvertisement", v2alpha1.BGPAdvertisementPlural,
		`{advertisements: [{advertisementType: PodCIDR, attributes: {communities: {large: ["1:2"]}}}]}`,
		[]string{"spec.advertisements[0].attributes.communities.large[0]", "should match"}},
	{"override-router-id-ipv6", "CiliumBGPNodeConfigOverride", v2alpha1.BGPNodeConfigOverridePlural,
		`{bgpInstances: [{name: a, routerID: "fd00::1"}]}`,
		[]string{"spec.bgpInstances[0].routerID", "must be of type ipv4"}},
	{"override-local-address", "CiliumBGPNodeConfigOverride", v2alpha1.BGPNodeConfigOverridePlural,
		`{bgpInstances: [{name: a, peers: [{name: p, localAddress: 10.0.0.256}]}]}`,
		[]string{"spec.bgpInstances[0].peers[0].localAddress", "should match"}},
	{"node-local-port-70000", "CiliumBGPNodeConfig", v2alpha1.BGPNodeConfigPlural,
		`{bgpInstances: [{name: a, localPort: 70000}]}`,
		[]string{"spec.bgpInstances[0].localPort", "less than or equal to 65535"}},
	{"node-peer-asn-0", "CiliumBGPNodeConfig", v2alpha1.BGPNodeConfigPlural,
		`{bgpInstances: [{name: a, peers: [{name: p, peerASN: 0}]}]}`,
		[]string{"spec.bgpInstances[0].peers[0].peerASN", "greater than or equal to 1"}},
}

func TestInvalidBGPObjectsAreRejected(t *testing.T) {
	for _, tc := range rejectedBGP {
		t.Run(tc.name, func(t *testing.T) {
			doc := "apiVersion: cilium.io/v2alpha1\nkind: " + tc.kind + "\nmetadata: {name: " + tc.name + "}\nspec: " + tc.spec + "\n"
			err := createYAMLRejected(t, bgpGVR(tc.plural), tc.name, doc, tc.want)
			checkOneInvalid(t, err, tc.want)
		})
	}
}

// TestLinkLocalPeersAccepted: the addresses of fe80::/64, in either case,
// are link-local peers the schema takes with peerInterface.
func TestLinkLocalPeersAccepted(t *testing.T) {
	for i, addr := range []string{"fe80::1", "FE80::1", "fe80::aaaa:bbbb:cccc:dddd"} {
		createAt(t, "v2alpha1", v2alpha1.BGPClusterConfigPlural, fmt.Sprintf("link-local-%d", i), fmt.Sprintf(
			"kind: CiliumBGPClusterConfig\nspec: {bgpInstances: [{name: a, peers: [{name: p, peerAddress: %q, peerInterface: eth1}]}]}", addr))
	}
}
