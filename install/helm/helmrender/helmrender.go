// Package helmrender renders and lints the Herald Helm chart without a helm
// binary: the same libraries `helm template` and `helm lint` use
// (helm.sh/helm/v3), driven the same way. hack/manifests.sh renders
// install/kubernetes/herald.yaml with it (through install/helm/render), and
// test/install checks the chart with it.
//
// Rendering is deterministic: templates are sorted by file name and objects
// by kind in helm's install order, and the Kubernetes version the templates
// see is fixed (KubeVersion), not taken from a cluster.
package helmrender

import (
	"bytes"
	"fmt"
	"maps"
	"path"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/strvals"
)

// KubeVersion is the Kubernetes version templates see as
// .Capabilities.KubeVersion: the version the test control plane runs.
const KubeVersion = "v1.34.0"

// Defaults of Options.
const (
	DefaultReleaseName = "herald"
	DefaultNamespace   = "kube-system"
)

// Options of a rendering, as the flags of `helm template` give them.
type Options struct {
	// ChartDir is the chart's directory, e.g. install/helm/herald.
	ChartDir string
	// ReleaseName is .Release.Name (DefaultReleaseName when empty).
	ReleaseName string
	// Namespace is .Release.Namespace (DefaultNamespace when empty).
	Namespace string
	// ValueFiles are YAML files of values (helm -f), later ones winning.
	ValueFiles []string
	// Set are key=value overrides (helm --set), applied after ValueFiles.
	Set []string
}

func (o Options) releaseName() string {
	if o.ReleaseName == "" {
		return DefaultReleaseName
	}
	return o.ReleaseName
}

func (o Options) namespace() string {
	if o.Namespace == "" {
		return DefaultNamespace
	}
	return o.Namespace
}

// UserValues returns the values given by ValueFiles and Set, merged as helm
// merges them; the chart's values.yaml is not included.
func (o Options) UserValues() (map[string]any, error) {
	base := map[string]any{}
	for _, f := range o.ValueFiles {
		v, err := chartutil.ReadValuesFile(f)
		if err != nil {
			return nil, fmt.Errorf("values file %s: %w", f, err)
		}
		base = mergeMaps(base, v.AsMap())
	}
	for _, s := range o.Set {
		if err := strvals.ParseInto(s, base); err != nil {
			return nil, fmt.Errorf("--set %s: %w", s, err)
		}
	}
	return base, nil
}

// mergeMaps merges b into a, b winning, recursing into maps (as helm's
// --values does).
func mergeMaps(a, b map[string]any) map[string]any {
	out := maps.Clone(a)
	for k, v := range b {
		if vm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(am, vm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// Capabilities are what templates see as .Capabilities: helm's defaults with
// Kubernetes at KubeVersion.
func Capabilities() *chartutil.Capabilities {
	caps := chartutil.DefaultCapabilities.Copy()
	kv, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		panic(err) // a constant
	}
	caps.KubeVersion = *kv
	return caps
}

// Result of a rendering.
type Result struct {
	// Chart is the loaded chart.
	Chart *chart.Chart
	// Values are the values the templates saw (.Values).
	Values chartutil.Values
	// Manifests are the rendered objects in install order, one per YAML
	// document, each with the template it came from.
	Manifests []releaseutil.Manifest
	// Notes is the rendered NOTES.txt.
	Notes string
}

// Render renders the chart's templates like `helm template` (without
// --include-crds: the chart's crds/ directory is not part of the result).
func Render(o Options) (*Result, error) {
	ch, err := loader.Load(o.ChartDir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", o.ChartDir, err)
	}
	user, err := o.UserValues()
	if err != nil {
		return nil, err
	}
	caps := Capabilities()
	if ch.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart requires kubeVersion %s, which is incompatible with Kubernetes %s", ch.Metadata.KubeVersion, caps.KubeVersion.String())
	}
	vals, err := chartutil.ToRenderValues(ch, user, chartutil.ReleaseOptions{
		Name:      o.releaseName(),
		Namespace: o.namespace(),
		Revision:  1,
		IsInstall: true,
	}, caps)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		return nil, err
	}
	r := &Result{Chart: ch, Values: vals}
	if v, ok := vals["Values"].(chartutil.Values); ok {
		r.Values = v
	}
	for name, content := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			if name == path.Join(ch.Name(), "templates", "NOTES.txt") {
				r.Notes = content
			}
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	if len(hooks) > 0 {
		return nil, fmt.Errorf("the chart has hooks (%s), which plain manifests cannot express", hooks[0].Path)
	}
	r.Manifests = manifests
	return r, nil
}

// YAML returns the rendered objects as one YAML stream, exactly as
// `helm template` prints them.
func (r *Result) YAML() []byte {
	var b bytes.Buffer
	for _, m := range r.Manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	return b.Bytes()
}

// Header starts install/kubernetes/herald.yaml.
const Header = `# Herald: the Helm chart install/helm/herald rendered with its default values
# (release "herald", namespace kube-system) as plain manifests.
#
# Generated by hack/manifests.sh: do not edit. Change the chart and run hack/manifests.sh.
#
# Install (CRDs first):
#   kubectl apply -f install/kubernetes/crds/ -f install/kubernetes/herald.yaml
# Options: the ConfigMap herald-config below; see Documentation/install.md.
`

// PlainManifests renders the chart with its default values (release
// DefaultReleaseName in DefaultNamespace): the content of
// install/kubernetes/herald.yaml.
func PlainManifests(chartDir string) ([]byte, error) {
	r, err := Render(Options{ChartDir: chartDir})
	if err != nil {
		return nil, err
	}
	return append([]byte(Header), r.YAML()...), nil
}

// Lint runs helm's linters (`helm lint`) on the chart with the given user
// values, templates seeing Kubernetes at KubeVersion. It returns every
// message; those of severity support.ErrorSev fail `helm lint`.
func Lint(chartDir, namespace string, values map[string]any) []support.Message {
	kv, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		panic(err)
	}
	if namespace == "" {
		namespace = DefaultNamespace
	}
	return lint.AllWithKubeVersion(chartDir, values, namespace, kv).Messages
}
