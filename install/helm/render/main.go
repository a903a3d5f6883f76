// Command render renders the Herald Helm chart like `helm template`, with
// no helm binary: hack/manifests.sh writes install/kubernetes/herald.yaml
// with it.
//
//	go run ./install/helm/render                       # default values, to stdout
//	go run ./install/helm/render -o install/kubernetes/herald.yaml
//	go run ./install/helm/render --set l2announcements.enabled=true -f my-values.yaml
//
// With neither -f nor --set, the output starts with the header of
// install/kubernetes/herald.yaml. Output is deterministic.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/heraldlb/herald/install/helm/helmrender"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	var o helmrender.Options
	var out string
	var values, set list
	flag.StringVar(&o.ChartDir, "chart", "install/helm/herald", "chart directory")
	flag.StringVar(&o.ReleaseName, "name", helmrender.DefaultReleaseName, "release name")
	flag.StringVar(&o.Namespace, "namespace", helmrender.DefaultNamespace, "release namespace")
	flag.Var(&values, "f", "values file (repeatable)")
	flag.Var(&values, "values", "values file (repeatable)")
	flag.Var(&set, "set", "key=value, as helm --set (repeatable)")
	flag.StringVar(&out, "o", "-", "output file; - is stdout")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "render: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	o.ValueFiles, o.Set = values, set
	if err := run(o, out); err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
}

func run(o helmrender.Options, out string) error {
	r, err := helmrender.Render(o)
	if err != nil {
		return err
	}
	b := r.YAML()
	if len(o.ValueFiles) == 0 && len(o.Set) == 0 &&
		o.ReleaseName == helmrender.DefaultReleaseName && o.Namespace == helmrender.DefaultNamespace {
		b = append([]byte(helmrender.Header), b...)
	}
	if out == "-" {
		_, err := os.Stdout.Write(b)
		return err
	}
	// Write aside and rename: a failed run never leaves half a file.
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}
