package k8sclient

import (
	"fmt"
	"github.com/cilium/hive/cell"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
)

type clientsOut struct {
	cell.Out
	Kube   kubernetes.Interface
	Herald versioned.Interface
	REST   *rest.Config
}

func newClients(cfg Config) (clientsOut, error) {
	restCfg, err := restConfig(cfg.Kubeconfig)
	if err != nil {
		return clientsOut{}, err
	}
	restCfg.QPS = cfg.K8sClientQPS
	restCfg.Burst = cfg.K8sClientBurst
	restCfg.UserAgent = "herald-agent"
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return clientsOut{}, fmt.Errorf("kubernetes client: %w", err)
	}
	herald, err := versioned.NewForConfig(restCfg)
	if err != nil {
		return clientsOut{}, fmt.Errorf("cilium.io client: %w", err)
	}
	return clientsOut{Kube: kube, Herald: herald, REST: restCfg}, nil
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
