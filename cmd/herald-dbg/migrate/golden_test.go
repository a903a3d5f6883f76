package migrate

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
			checkPools(t, res)
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

// checkPools runs every translated pool through the agent's own parser,
// which reports blocks and selectors it would refuse.
func checkPools(t *testing.T, res Result) {
	t.Helper()
	for _, obj := range res.Objects {
		if p, ok := obj.(*v2alpha1.CiliumLoadBalancerIPPool); ok {
			row := tables.LBPoolFromK8s(p)
			if len(row.BlockErrors) > 0 || row.SelectorError != "" {
				t.Errorf("pool %s: %v %s", p.Name, row.BlockErrors, row.SelectorError)
			}
		}
	}
}
