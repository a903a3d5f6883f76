package agentconfig

import (
	"strings"
	"testing"

	"github.com/cilium/hive"
	"github.com/cilium/hive/hivetest"
	"github.com/spf13/pflag"
)

func TestCiliumDatapathValidate(t *testing.T) {
	for _, tt := range []struct {
		kpr     string
		wantErr bool
	}{
		{kpr: ""},
		{kpr: "true"},
		{kpr: "false"},
		// Cilium's older values, as an older ConfigMap has them.
		{kpr: "strict"},
		{kpr: "disabled"},
		{kpr: "yes", wantErr: true},
		{kpr: "ture", wantErr: true},
	} {
		err := CiliumDatapath{KubeProxyReplacement: tt.kpr}.Validate()
		if (err != nil) != tt.wantErr {
			t.Errorf("kube-proxy-replacement %q: err %v, want error %v", tt.kpr, err, tt.wantErr)
		}
	}
}

// The cell checks the options when the agent starts: a value that is no
// value of Cilium's stops the agent, naming the key; "true" starts it.
func TestCiliumDatapathCell(t *testing.T) {
	for value, wantErr := range map[string]bool{"true": false, "ture": true} {
		h := hive.New(Cell)
		flags := pflag.NewFlagSet("", pflag.ContinueOnError)
		h.RegisterFlags(flags)
		if err := flags.Parse([]string{"--kube-proxy-replacement=" + value, "--enable-external-ips"}); err != nil {
			t.Fatal(err)
		}
		err := h.Populate(hivetest.Logger(t))
		if (err != nil) != wantErr || (err != nil && !strings.Contains(err.Error(), "kube-proxy-replacement")) {
			t.Errorf("kube-proxy-replacement=%s: %v, want error %v", value, err, wantErr)
		}
	}
}
