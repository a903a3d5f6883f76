package realcluster

import (
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes a kubeconfig for one client certificate of the
// PKI, pointing at server.
func writeKubeconfig(path, server string, p pki, cert string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["herald"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: p.CA()}
	cfg.AuthInfos[cert] = &clientcmdapi.AuthInfo{ClientCertificate: p.Cert(cert), ClientKey: p.Key(cert)}
	cfg.Contexts["herald"] = &clientcmdapi.Context{Cluster: "herald", AuthInfo: cert}
	cfg.CurrentContext = "herald"
	return clientcmd.WriteToFile(*cfg, path)
}
