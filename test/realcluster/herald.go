package realcluster

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HeraldNamespace and HeraldRelease are where the tests install Herald, as
// the documentation does.
const (
	HeraldNamespace = "kube-system"
	HeraldRelease   = "herald"
)

// ChartDir is Herald's chart; ValuesFile the values the tests install it
// with.
func ChartDir() string { return filepath.Join(RepoRoot(), "install", "helm", "herald") }
func ValuesFile() string {
	return filepath.Join(RepoRoot(), "test", "realcluster", "herald-values.yaml")
}

// RunKubectl runs kubectl as the administrator and returns its output
// (stdout and stderr).
func (c *Cluster) RunKubectl(ctx context.Context, args ...string) ([]byte, error) {
	return run(ctx, c.Kubectl, append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
}

// RunHelm runs the Helm CLI against the cluster.
func (c *Cluster) RunHelm(ctx context.Context, args ...string) ([]byte, error) {
	return run(ctx, c.Helm, append(args, "--kubeconfig", c.Kubeconfig)...)
}

// RunKubectlStdin is RunKubectl with stdin (kubectl apply -f -).
func (c *Cluster) RunKubectlStdin(ctx context.Context, stdin string, args ...string) ([]byte, error) {
	return runStdin(ctx, stdin, c.Kubectl, append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
}

func run(ctx context.Context, bin string, args ...string) ([]byte, error) {
	return runStdin(ctx, "", bin, args...)
}

func runStdin(ctx context.Context, stdin, bin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("%s %v: %w\n%s", filepath.Base(bin), args, err, bytes.TrimSpace(out.Bytes()))
	}
	return out.Bytes(), nil
}

// WaitDaemonSet waits until a DaemonSet runs its current template on every
// node it should, all Ready.
func (c *Cluster) WaitDaemonSet(ctx context.Context, ns, name string) error {
	var last string
	for {
		ds, err := c.Client.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			if daemonSetRolledOut(ds) {
				return nil
			}
			s := ds.Status
			last = fmt.Sprintf("generation %d observed %d, desired %d, updated %d, ready %d, available %d",
				ds.Generation, s.ObservedGeneration, s.DesiredNumberScheduled, s.UpdatedNumberScheduled, s.NumberReady, s.NumberAvailable)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("DaemonSet %s/%s not rolled out: %s", ns, name, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func daemonSetRolledOut(ds *appsv1.DaemonSet) bool {
	s := ds.Status
	return s.ObservedGeneration >= ds.Generation && s.DesiredNumberScheduled > 0 &&
		s.UpdatedNumberScheduled == s.DesiredNumberScheduled && s.NumberReady == s.DesiredNumberScheduled &&
		s.NumberAvailable == s.DesiredNumberScheduled && s.NumberUnavailable == 0
}
