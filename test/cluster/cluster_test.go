package cluster

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var testCluster *Cluster

func TestMain(m *testing.M) {
	// HERALD_TEST_APISERVER_ADDR binds the test apiserver to another local
	// address (e.g. one on a bridge in 198.18.0.0/15); default 127.0.0.1.
	c, err := Start(Options{Addr: os.Getenv("HERALD_TEST_APISERVER_ADDR")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testCluster = c
	code := m.Run()
	c.Stop()
	if _, err := os.Stat(c.Dir); err == nil {
		fmt.Fprintf(os.Stderr, "Stop left %s behind\n", c.Dir)
		code = 1
	}
	os.Exit(code)
}

func TestLoadBalancerService(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := testCluster.Client

	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "herald-cluster-test-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}

	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "lb", Namespace: ns.Name},
		Spec: corev1.ServiceSpec{
			Type:                          corev1.ServiceTypeLoadBalancer,
			AllocateLoadBalancerNodePorts: ptr.To(false),
			IPFamilyPolicy:                ptr.To(corev1.IPFamilyPolicyRequireDualStack),
			Ports: []corev1.ServicePort{{
				Name:     "http",
				Protocol: corev1.ProtocolTCP,
				Port:     80,
			}},
		},
	}
	if _, err := client.CoreV1().Services(ns.Name).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create service: %v", err)
	}

	got, err := client.CoreV1().Services(ns.Name).Get(ctx, "lb", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get service: %v", err)
	}
	if got.Spec.Type != corev1.ServiceTypeLoadBalancer {
		t.Errorf("type = %q, want LoadBalancer", got.Spec.Type)
	}
	if len(got.Spec.ClusterIPs) != 2 {
		t.Errorf("clusterIPs = %v, want one IPv4 and one IPv6 (dual-stack service range)", got.Spec.ClusterIPs)
	}
	if np := got.Spec.Ports[0].NodePort; np != 0 {
		t.Errorf("nodePort = %d, want none (allocateLoadBalancerNodePorts=false)", np)
	}

	// Status writes work (what a LoadBalancer-IP agent does).
	got.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{
		IP:     "198.18.0.10",
		IPMode: ptr.To(corev1.LoadBalancerIPModeVIP),
	}}
	upd, err := client.CoreV1().Services(ns.Name).UpdateStatus(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if ing := upd.Status.LoadBalancer.Ingress; len(ing) != 1 || ing[0].IP != "198.18.0.10" {
		t.Errorf("status ingress = %+v", ing)
	}

	if want := os.Getenv("HERALD_TEST_APISERVER_ADDR"); want != "" && !strings.Contains(testCluster.RESTConfig.Host, want) {
		t.Errorf("RESTConfig.Host = %q, want address %s", testCluster.RESTConfig.Host, want)
	}
	if v, err := client.Discovery().ServerVersion(); err != nil {
		t.Errorf("server version: %v", err)
	} else if v.GitVersion != testCluster.KubeVersion {
		t.Errorf("server version = %q, want %q", v.GitVersion, testCluster.KubeVersion)
	}
}

func TestRepoRoot(t *testing.T) {
	root := RepoRoot()
	if root == "" {
		t.Fatal("RepoRoot() = \"\"")
	}
	if got := moduleOf(root + "/go.mod"); got != modulePath {
		t.Errorf("module of %s/go.mod = %q", root, got)
	}
}
