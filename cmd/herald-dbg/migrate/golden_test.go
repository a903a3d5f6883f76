package migrate

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

var update = flag.Bool("update", false, "rewrite the .golden files from the translation")

// samples are MetalLB's own example configurations (test/migrate/metallb,
// see its README for their source).
func samples(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "test", "migrate", "metallb", "*", "*.yaml"))
	if err != nil || len(files) < 40 {
		t.Fatalf("MetalLB samples: %d files, %v", len(files), err)
	}
	return files
}

// TestGolden translates every MetalLB sample and compares the printed
// report and objects with the sample's .golden file.
func TestGolden(t *testing.T) {
	for _, file := range samples(t) {
		name := filepath.Base(filepath.Dir(file)) + "/" + filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var in Input
			if err := in.Decode(bytes.NewReader(data), filepath.Base(file)); err != nil {
				t.Fatal(err)
			}
			res := Translate(in)
			if len(res.Findings) == 0 {
				t.Fatal("no findings")
			}
			checkAgentAccepts(t, res)
			var out bytes.Buffer
			if err := res.Render(&out); err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(file, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update to write it)", err)
			}
			if out.String() != string(want) {
				t.Errorf("translation of %s differs from %s:\n%s", file, golden, out.String())
			}
		})
	}
}

// checkAgentAccepts runs every translated object through the agent's own
// parsers, which report what the agent would refuse.
func checkAgentAccepts(t *testing.T, res Result) {
	t.Helper()
	for _, obj := range res.Objects {
		var errs []string
		switch o := obj.(type) {
		case *v2alpha1.CiliumLoadBalancerIPPool:
			row := tables.LBPoolFromK8s(o)
			errs = append(row.BlockErrors, row.SelectorError)
		case *v2alpha1.CiliumL2AnnouncementPolicy:
			row := tables.L2PolicyFromK8s(o)
			errs = []string{row.ServiceSelectorError, row.NodeSelectorError, row.InterfaceError}
		case *v2alpha1.CiliumBGPAdvertisement:
			errs = tables.BGPAdvertisementFromK8s(o).Errors()
		case *v2alpha1.CiliumBGPPeerConfig:
			row := tables.BGPPeerConfigFromK8s(o)
			errs = append(row.Errors, row.SelectorErrors()...)
		case *v2alpha1.CiliumBGPClusterConfig:
			row := tables.BGPClusterConfigFromK8s(o)
			errs = []string{row.NodeSelectorError}
			for _, inst := range row.Instances {
				for _, p := range inst.Peers {
					errs = append(errs, p.AddressError)
				}
			}
		}
		if errs = slices.DeleteFunc(errs, func(e string) bool { return e == "" }); len(errs) > 0 {
			t.Errorf("the agent refuses %T %s: %v", obj, obj.(metav1.Object).GetName(), errs)
		}
	}
}
