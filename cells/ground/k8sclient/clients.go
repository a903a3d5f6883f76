package k8sclient

import (
	"fmt"
	"github.com/cilium/hive/cell"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/cells/internal/kubeclient"
)

type clientsOut struct {
	cell.Out
	Kube        kubernetes.Interface
	Unthrottled kubeclient.Unthrottled
	Herald      versioned.Interface
	REST        *rest.Config
}

func newClients(cfg Config) (clientsOut, error) {
	if err := cfg.validateRate(); err != nil {
		return clientsOut{}, err
	}
	restCfg, err := restConfig(cfg.Kubeconfig)
	if err != nil {
		return clientsOut{}, err
	}
	restCfg.QPS = cfg.K8sClientQPS
	restCfg.Burst = cfg.K8sClientBurst
	restCfg.UserAgent = "herald-agent"
	kube, err := kubernetes.NewForConfig(protobuf(restCfg))
	if err != nil {
		return clientsOut{}, fmt.Errorf("kubernetes client: %w", err)
	}
	unlimited := protobuf(restCfg)
	unlimited.QPS = -1 // no rate limiter at all (0 would mean the default 5)
	unthrottled, err := kubernetes.NewForConfig(unlimited)
	if err != nil {
		return clientsOut{}, fmt.Errorf("kubernetes client: %w", err)
	}
	herald, err := versioned.NewForConfig(restCfg)
	if err != nil {
		return clientsOut{}, fmt.Errorf("cilium.io client: %w", err)
	}
	return clientsOut{Kube: kube, Unthrottled: kubeclient.Unthrottled{Interface: unthrottled}, Herald: herald, REST: restCfg}, nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		c, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig given and not running in a cluster: %w", err)
		}
		return c, nil
	}
	c, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return c, nil
}

// protobuf returns a copy of cfg that talks protobuf, for the built-in
// types: the API server encodes and decodes it for a fraction of the CPU
// JSON costs it, on every watch event and write. Custom resources have no
// protobuf encoding, so the cilium.io client and REST keep JSON. Server-side
// apply sends its patch as YAML/JSON whatever the content type.
func protobuf(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return c
}

// validateRate refuses limits client-go would take silently in its own way
// (a QPS of 0 is its default of 5, a negative one turns the limit off) or
// refuse without naming the option (a burst below 1), as the chart's schema
// does.
func (cfg Config) validateRate() error {
	if cfg.K8sClientQPS <= 0 {
		return fmt.Errorf("k8s-client-qps %v: must be greater than 0", cfg.K8sClientQPS)
	}
	if cfg.K8sClientBurst < 1 {
		return fmt.Errorf("k8s-client-burst %d: must be at least 1", cfg.K8sClientBurst)
	}
	return nil
}
