package cluster

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Proxy is a reverse proxy between one client (an agent) and the API
// server. It hands every answer to a hook before the client gets it, so a
// test can act between the moment the API server applied a request and
// the moment the client reads the answer: freeze the client there, or drop
// the answer.
type Proxy struct {
	// Kubeconfig is the path of a kubeconfig for the client: the proxy's
	// address, no credentials of its own (the proxy adds the admin's).
	Kubeconfig string
	srv        *httptest.Server
}

// ProxyHook sees each answer before the client does; an error drops the
// answer (the client gets a 502).
type ProxyHook func(*http.Response) error

// StartProxy starts a proxy listening on addr (port chosen at random) and
// writes its kubeconfig into dir. Watches pass through unbuffered. Close
// it when done.
func (c *Cluster) StartProxy(addr, dir string, hook ProxyHook) (*Proxy, error) {
	target, err := url.Parse(c.RESTConfig.Host)
	if err != nil {
		return nil, fmt.Errorf("cluster: proxy: %w", err)
	}
	transport, err := rest.TransportFor(c.RESTConfig)
	if err != nil {
		return nil, fmt.Errorf("cluster: proxy: %w", err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = transport
	rp.FlushInterval = -1 // watch events as they come
	rp.ModifyResponse = hook
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return nil, fmt.Errorf("cluster: proxy: %w", err)
	}
	srv := httptest.NewUnstartedServer(rp)
	srv.Listener = l
	srv.StartTLS()

	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: srv.URL, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	cfg.CurrentContext = "proxy"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		srv.Close()
		return nil, fmt.Errorf("cluster: proxy: %w", err)
	}
	p := &Proxy{Kubeconfig: filepath.Join(dir, "proxy.kubeconfig"), srv: srv}
	if err := clientcmd.WriteToFile(*cfg, p.Kubeconfig); err != nil {
		srv.Close()
		return nil, fmt.Errorf("cluster: proxy: %w", err)
	}
	return p, nil
}

// Close stops the proxy and cuts its connections.
func (p *Proxy) Close() {
	p.srv.CloseClientConnections()
	p.srv.Close()
}
