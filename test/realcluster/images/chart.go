package images

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// chartDir is Herald's Helm chart, relative to the repository root.
const chartDir = "install/helm/herald"

// AppVersion returns the appVersion of Herald's chart in the repository at
// repoRoot: the image tag the chart deploys when its values set none.
func AppVersion(repoRoot string) (string, error) {
	p := filepath.Join(repoRoot, chartDir, "Chart.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &chart); err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	if chart.AppVersion == "" {
		return "", fmt.Errorf("%s: no appVersion", p)
	}
	return chart.AppVersion, nil
}
