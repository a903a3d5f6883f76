package plugin

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/pkg/types"
)

// FuzzParseConfig: whatever the runtime sends, the plugin answers with a
// configuration it can use or a CNI error with a code, never a panic.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`{"cniVersion": "1.1.0", "name": "n", "ipam": {"type": "herald-ipam"}}`,
		`{"name": "n", "ipam": {"socket": "/s", "stateDir": "/d", "routes": [{"dst": "0.0.0.0/0", "gw": "10.0.0.1"}]}}`,
		`{"name": "n", "ipam": {"routes": []}, "cni.dev/valid-attachments": [{"containerID": "a", "ifname": "eth0"}]}`,
		`{"cniVersion": "0.4.0", "name": "n", "ipam": {}, "prevResult": {"ips": [{"version": "4", "address": "10.1.0.5/24"}]}}`,
		`{"name": "n", "ipam": {"sockett": 1}}`,
		`{"ipam": null}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(b)
		if err != nil {
			var e *types.Error
			if !errors.As(err, &e) || e.Code == 0 || e.Msg == "" {
				t.Fatalf("error %v (%T) is not a CNI error with a code and a message", err, err)
			}
			return
		}
		if !filepath.IsAbs(c.IPAM.Socket) || !filepath.IsAbs(c.IPAM.StateDir) {
			t.Fatalf("accepted relative paths: %+v", c.IPAM)
		}
		if (c.IPAM.Routes == nil) != (c.Routes == nil) || len(c.Routes) != len(c.IPAM.Routes) {
			t.Fatalf("routes %v parsed into %v", c.IPAM.Routes, c.Routes)
		}
	})
}

// FuzzParsePod: CNI_ARGS either give a Pod or CNI error 4.
func FuzzParsePod(f *testing.F) {
	for _, s := range []string{k8sArgs1, "", "K8S_POD_NAMESPACE", "IgnoreUnknown=maybe", "CommonArgs=x", "a=b=c;;", "K8S_POD_NAME=a;K8S_POD_NAME=b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pod, err := requirePod(s)
		if err != nil {
			var e *types.Error
			if !errors.As(err, &e) || e.Code != types.ErrInvalidEnvironmentVariables {
				t.Fatalf("CNI_ARGS %q: error %v, want CNI error 4", s, err)
			}
			return
		}
		if pod.Namespace == "" || pod.Name == "" {
			t.Fatalf("CNI_ARGS %q: accepted %+v", s, pod)
		}
	})
}
