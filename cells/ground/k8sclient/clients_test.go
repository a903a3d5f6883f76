package k8sclient

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// The built-in kinds go as protobuf; the rate-limited client has the
// configured limit, the unthrottled one none; custom resources stay JSON.
func TestClients(t *testing.T) {
	var (
		mu   sync.Mutex
		sent = map[string]string{} // path -> Content-Type
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent[r.URL.Path] = r.Header.Get("Content-Type")
		mu.Unlock()
		http.Error(w, "no", http.StatusTeapot)
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: %q}\n"+
		"users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n", srv.URL)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := newClients(Config{Kubeconfig: path, K8sClientQPS: 7, K8sClientBurst: 9})
	if err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	_, _ = out.Kube.CoreV1().Services("a").Create(ctx, svc, metav1.CreateOptions{})
	_, _ = out.Unthrottled.CoreV1().Services("b").Create(ctx, svc, metav1.CreateOptions{})
	_, _ = out.Herald.CiliumV2alpha1().CiliumLoadBalancerIPPools().Create(ctx,
		&v2alpha1.CiliumLoadBalancerIPPool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, metav1.CreateOptions{})
	mu.Lock()
	defer mu.Unlock()
	for path, want := range map[string]string{
		"/api/v1/namespaces/a/services":                      runtime.ContentTypeProtobuf,
		"/api/v1/namespaces/b/services":                      runtime.ContentTypeProtobuf,
		"/apis/cilium.io/v2alpha1/ciliumloadbalancerippools": runtime.ContentTypeJSON,
	} {
		if got, ok := sent[path]; !ok || got != want {
			t.Errorf("POST %s: Content-Type %q (sent: %v), want %q", path, got, ok, want)
		}
	}

	if l := out.Kube.CoreV1().RESTClient().(*rest.RESTClient).GetRateLimiter(); l == nil || l.QPS() != 7 {
		t.Errorf("kube client's rate limiter %v, want 7 QPS", l)
	}
	if l := out.Unthrottled.CoreV1().RESTClient().(*rest.RESTClient).GetRateLimiter(); l != nil {
		t.Errorf("unthrottled client has a rate limiter (%v QPS)", l.QPS())
	}
	if out.REST.QPS != 7 || out.REST.ContentType == runtime.ContentTypeProtobuf {
		t.Errorf("the shared REST config changed: QPS %v, content type %q", out.REST.QPS, out.REST.ContentType)
	}
}

// A rate limit client-go would turn off (negative QPS), replace with its
// default of 5 (QPS 0) or refuse without naming the option (burst 0) stops
// the agent with an error that names it.
func TestBadRateLimitNamesItsOption(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{K8sClientQPS: -5, K8sClientBurst: 200}, "k8s-client-qps -5: must be greater than 0"},
		{Config{K8sClientQPS: 0, K8sClientBurst: 200}, "k8s-client-qps 0: must be greater than 0"},
		{Config{K8sClientQPS: 100, K8sClientBurst: 0}, "k8s-client-burst 0: must be at least 1"},
	} {
		// Checked before the kubeconfig is read: none is needed.
		if _, err := newClients(tc.cfg); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
