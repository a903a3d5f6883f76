package lbipam

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/tables"
)

// Where the spec is silent Herald does what Cilium's LB IPAM does; these
// replay Cilium's own unit-test scenarios through the API server.

// TestSharingJoinsOldestAddress: a Service that may join several addresses
// of its sharing key joins the one handed out first (Cilium), not the
// numerically lowest.
func TestSharingJoinsOldestAddress(t *testing.T) {
	startAgent(t, "node-a")
	s := newScenario(t)
	s.apply(`
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "sharing-pool"
spec:
  blocks:
  - cidr: "10.0.10.0/24"
`)
	key := func(k string) map[string]string { return map[string]string{"lbipam.cilium.io/sharing-key": k} }
	s.apply(serviceYAML("service-a", nil, key("key-a"), "ports:\n- port: 80"))
	s.waitSatisfied("service-a", "10.0.10.0")
	s.apply(serviceYAML("service-b", nil, key("key-a"), "ports:\n- port: 81"))
	s.waitSatisfied("service-b", "10.0.10.0")
	s.apply(serviceYAML("service-c", nil, key("key-b"), "ports:\n- port: 80"))
	s.waitSatisfied("service-c", "10.0.10.1")
	s.deleteService("service-a")
	s.deleteService("service-b")
	waitGone(t, s.ns, "service-a", "service-b")

	// service-a again, now under key-b: port 80 collides with service-c's,
	// so it gets the lowest free address, .0.
	s.apply(serviceYAML("service-a", nil, key("key-b"), "ports:\n- port: 80"))
	s.waitSatisfied("service-a", "10.0.10.0")
	// service-b (port 81) may join .0 (service-a's) or .1 (service-c's):
	// .1 was handed out first.
	s.apply(serviceYAML("service-b", nil, key("key-b"), "ports:\n- port: 81"))
	s.waitSatisfied("service-b", "10.0.10.1")
}

// TestSingleStackFamilyOfAnyFlag: the family flags decide what a Service
// gets when it does not say, not what it may ask for (Cilium). A Service
// asking for one family gets it from an agent that does not hand out that
// family by default; RequireDualStack still needs both (the spec).
func TestSingleStackFamilyOfAnyFlag(t *testing.T) {
	t.Run("IPv6 asked, --enable-ipv6=false", func(t *testing.T) {
		startAgent(t, "node-a", "--enable-ipv6=false")
		s := newScenario(t)
		s.apply(dualPool)
		s.apply(serviceYAML("v6", nil, nil, "ipFamilyPolicy: SingleStack", "ipFamilies: [IPv6]"))
		s.waitSatisfied("v6", "2004::")
		s.apply(serviceYAML("plain", nil, nil))
		s.waitSatisfied("plain", "20.0.10.0")
		s.apply(serviceYAML("require", nil, nil, "ipFamilyPolicy: RequireDualStack"))
		s.waitPending("require", tables.ReasonFamilyDisabled,
			"ipFamilyPolicy RequireDualStack needs IPv4 and IPv6, but IPv6 is not enabled in the agent (--enable-ipv6)")
	})
	t.Run("IPv4 asked, --enable-ipv4=false", func(t *testing.T) {
		startAgent(t, "node-a", "--enable-ipv4=false", "--enable-ipv6")
		s := newScenario(t)
		s.apply(dualPool)
		s.apply(serviceYAML("v4", nil, nil, "ipFamilyPolicy: SingleStack", "ipFamilies: [IPv4]"))
		s.waitSatisfied("v4", "20.0.10.0")
	})
}

// TestPoolMistakesAreConditions: what the API server cannot reject is
// reported on the pool, naming the field and the rule, with an Event; the
// rest of the pool keeps working.
func TestPoolMistakesAreConditions(t *testing.T) {
	startAgent(t, "node-a")

	t.Run("start after stop", func(t *testing.T) {
		s := newScenario(t)
		s.apply(`
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "reversed-pool"
spec:
  blocks:
  - start: "20.0.20.9"
    stop: "20.0.20.1"
  - cidr: "20.0.10.0/30"
`)
		want := `spec.blocks[0]: start "20.0.20.9" is after stop "20.0.20.1"`
		s.waitPoolCondition("reversed-pool", tables.ConditionPoolBadBlocks, metav1.ConditionTrue, tables.ReasonError, want+"; these blocks are ignored")
		waitPoolEvent(t, "reversed-pool", "InvalidBlocks", want)
		// The valid block serves.
		s.apply(serviceYAML("service-blue", nil, nil))
		s.waitSatisfied("service-blue", "20.0.10.0")
		s.waitPoolCounts("reversed-pool", "4", "3", "1")

		// Fixed: the condition resolves and the block serves too.
		s.apply(`
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "reversed-pool"
spec:
  blocks:
  - start: "20.0.20.1"
    stop: "20.0.20.9"
  - cidr: "20.0.10.0/30"
`)
		s.waitPoolCondition("reversed-pool", tables.ConditionPoolBadBlocks, metav1.ConditionFalse, tables.ReasonResolved, "")
		s.waitPoolCounts("reversed-pool", "13", "12", "1")
	})

	t.Run("selector the schema did not check", func(t *testing.T) {
		// A pool stored under a CRD that does not check selector labels
		// (Cilium's own, or an older one): Herald still says what is wrong.
		restore := loosenSelectorSchema(t)
		defer restore()
		s := newScenario(t)
		s.apply(`
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "badkey-pool"
spec:
  blocks:
  - cidr: "20.0.10.0/24"
  serviceSelector:
    matchLabels:
      "bad key!": "x"
`)
		want := `spec.serviceSelector.matchLabels: Invalid value: "bad key!": name part must consist of alphanumeric characters`
		waitFor(t, timeout, func() (bool, string) {
			p, err := getPool("badkey-pool")
			if err != nil {
				return false, err.Error()
			}
			c, ok := poolCondition(p, tables.ConditionPoolBadServiceSelector)
			return ok && c.Status == metav1.ConditionTrue && c.Reason == tables.ReasonError && strings.HasPrefix(c.Message, want) &&
					strings.HasSuffix(c.Message, "; the pool selects no Service until this is fixed"),
				fmt.Sprintf("condition %s: %+v (present %v), want True/error starting with %q", tables.ConditionPoolBadServiceSelector, c, ok, want)
		})
		waitPoolEvent(t, "badkey-pool", "InvalidServiceSelector", want)
		s.apply(serviceYAML("service-blue", map[string]string{"app": "x"}, nil))
		s.waitPending("service-blue", tables.ReasonNoPool, tables.MessageNoPool)
	})
}

func waitPoolEvent(t testing.TB, pool, reason, prefix string) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		list, err := kube.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + pool + ",reason=" + reason,
		})
		if err != nil {
			return false, err.Error()
		}
		var msgs []string
		for _, e := range list.Items {
			if strings.HasPrefix(e.Message, prefix) && e.Type == "Warning" {
				return true, ""
			}
			msgs = append(msgs, e.Message)
		}
		return false, fmt.Sprintf("pool %s: want a Warning Event %s starting with %q, have %q", pool, reason, prefix, msgs)
	})
}

// loosenSelectorSchema removes the label key and value checks from the
// pool CRD's serviceSelector (as in Cilium's CRD) and returns how to put
// them back.
func loosenSelectorSchema(t *testing.T) (restore func()) {
	t.Helper()
	ctx := context.Background()
	c, err := apiextensionsclient.NewForConfig(testCluster.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	crds := c.ApiextensionsV1().CustomResourceDefinitions()
	orig, err := crds.Get(ctx, "ciliumloadbalancerippools.cilium.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	loose := orig.DeepCopy()
	for i := range loose.Spec.Versions {
		spec := loose.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"]
		sel := spec.Properties["serviceSelector"]
		sel.Properties["matchLabels"] = apiextensionsv1.JSONSchemaProps{
			Type:                 "object",
			AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}},
		}
		spec.Properties["serviceSelector"] = sel
		loose.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	}
	if _, err := crds.Update(ctx, loose, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("loosening the pool CRD: %v", err)
	}
	waitForCRDSchema(t, `"bad key!"`, true)
	return func() {
		cur, err := crds.Get(ctx, orig.Name, metav1.GetOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		orig.ResourceVersion = cur.ResourceVersion
		if _, err := crds.Update(ctx, orig, metav1.UpdateOptions{}); err != nil {
			t.Errorf("restoring the pool CRD: %v", err)
		}
		waitForCRDSchema(t, `"bad key!"`, false)
	}
}

// waitForCRDSchema waits until the API server accepts (or rejects) a pool
// whose matchLabels has the given key, by server-side dry runs.
func waitForCRDSchema(t testing.TB, key string, accepted bool) {
	t.Helper()
	body := json.RawMessage(fmt.Sprintf(`{"apiVersion":"cilium.io/v2alpha1","kind":"CiliumLoadBalancerIPPool","metadata":{"name":"schema-probe"},"spec":{"blocks":[{"cidr":"20.0.30.0/24"}],"serviceSelector":{"matchLabels":{%s:"x"}}}}`, key))
	waitFor(t, timeout, func() (bool, string) {
		err := herald.CiliumV2alpha1().RESTClient().Post().Resource("ciliumloadbalancerippools").
			Param("dryRun", "All").Body([]byte(body)).Do(context.Background()).Error()
		return (err == nil) == accepted, fmt.Sprintf("dry-run create with matchLabels key %s: %v, want accepted=%v", key, err, accepted)
	})
}

// waitGone waits until the named Services no longer exist.
func waitGone(t testing.TB, ns string, names ...string) {
	t.Helper()
	for _, name := range names {
		waitFor(t, timeout, func() (bool, string) {
			_, err := kube.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprintf("service %s/%s still exists (%v)", ns, name, err)
		})
	}
}
