package agentconfig

import "testing"

func TestCiliumDatapathValidate(t *testing.T) {
	for _, tt := range []struct {
		kpr     string
		wantErr bool
	}{
		{kpr: ""},
		{kpr: "true"},
		{kpr: "false"},
		// Removed from Cilium in v1.15; Cilium's agent refuses them.
		{kpr: "strict", wantErr: true},
		{kpr: "yes", wantErr: true},
	} {
		err := CiliumDatapath{KubeProxyReplacement: tt.kpr}.Validate()
		if (err != nil) != tt.wantErr {
			t.Errorf("kube-proxy-replacement %q: err %v, want error %v", tt.kpr, err, tt.wantErr)
		}
	}
}
