// Package install checks what users install Herald with: the Helm chart
// install/helm/herald, the plain manifests install/kubernetes/ rendered from
// it by hack/manifests.sh, and the CRD copies they ship.
//
//   - chart_test.go: `helm lint`, `helm template` with default and overridden
//     values (ConfigMap keys and values, DaemonSet, RBAC), every herald-agent
//     flag being a ConfigMap key and every key a flag the agent accepts, and
//     the checked-in files being what hack/manifests.sh writes.
//   - cni_test.go: cni.install: the init container that installs herald-ipam
//     and the host directories the plugin and the agent share.
//   - apiserver_test.go: against a real kube-apiserver, every rendered object
//     passes a server-side dry-run create, the chart's RBAC grants exactly
//     what the agent needs, and the agent, running under the chart's
//     ServiceAccount with the chart's ConfigMap, hands out an address.
//
// The control plane is started only by the tests that need it.
package install

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"testing"

	"github.com/heraldlb/herald/test/cluster"
)

var (
	// root is the repository root; chartDir the chart in it.
	root, chartDir string
	// agentBin is herald-agent built from ./cmd/herald-agent.
	agentBin string
	// agentFlags are the flag names `herald-agent --help` lists, sorted,
	// without help.
	agentFlags []string
	// tmpDir is removed after the tests.
	tmpDir string

	clusterOnce sync.Once
	testCluster *cluster.Cluster
	clusterErr  error
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root = cluster.RepoRoot()
	if root == "" {
		fmt.Fprintln(os.Stderr, "install: cannot find the repository root")
		return 1
	}
	chartDir = filepath.Join(root, "install", "helm", "herald")
	var err error
	if tmpDir, err = os.MkdirTemp("", "herald-install-"); err != nil {
		fmt.Fprintln(os.Stderr, "install:", err)
		return 1
	}
	defer os.RemoveAll(tmpDir)

	agentBin = filepath.Join(tmpDir, "herald-agent")
	cmd := exec.Command("go", "build", "-o", agentBin, "./cmd/herald-agent")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "install: go build ./cmd/herald-agent: %v\n%s\n", err, out)
		return 1
	}
	if agentFlags, err = helpFlags(agentBin); err != nil {
		fmt.Fprintln(os.Stderr, "install:", err)
		return 1
	}

	code := m.Run()
	if testCluster != nil {
		testCluster.Stop()
	}
	return code
}

// flagLine matches a flag in cobra's usage: "  -h, --help   help ..." or
// "      --bpf-root string   ...".
var flagLine = regexp.MustCompile(`^\s+(?:-[A-Za-z], )?--([a-z0-9][a-z0-9-]*)\b`)

// helpFlags runs `bin --help` and returns the flag names it lists.
func helpFlags(bin string) ([]string, error) {
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s --help: %v\n%s", bin, err, out)
	}
	var flags []string
	s := bufio.NewScanner(bytes.NewReader(out))
	inFlags := false
	for s.Scan() {
		line := s.Text()
		switch {
		case line == "Flags:":
			inFlags = true
			continue
		case line == "" || (len(line) > 0 && line[0] != ' '):
			inFlags = false
		}
		if !inFlags {
			continue
		}
		if m := flagLine.FindStringSubmatch(line); m != nil && m[1] != "help" {
			flags = append(flags, m[1])
		}
	}
	if len(flags) == 0 {
		return nil, fmt.Errorf("%s --help lists no flags:\n%s", bin, out)
	}
	sort.Strings(flags)
	return flags, nil
}

// startCluster starts the control plane once, for the tests that need it.
func startCluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	clusterOnce.Do(func() {
		testCluster, clusterErr = cluster.Start(cluster.Options{})
	})
	if clusterErr != nil {
		t.Fatal(clusterErr)
	}
	return testCluster
}
