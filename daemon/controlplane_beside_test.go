package daemon

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/heraldlb/herald/cells/cpvip"
	"github.com/heraldlb/herald/cells/l2/responder"
)

// The control-plane VIP runs beside the Herald DaemonSet on the same
// nodes: every port and path it uses, as its manifests run it, differs
// from the DaemonSet's as the chart's values run it, and
// control-plane-vip.md's "Ports and paths" table says both in one row.
func TestControlPlaneBesideDaemonSet(t *testing.T) {
	b, err := os.ReadFile("../install/helm/herald/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		L2         struct{ PeerPort int }  `json:"l2announcements"`
		HealthPort int                     `json:"healthPort"`
		Prometheus struct{ Port int }      `json:"prometheus"`
		Pprof      struct{ Port int }      `json:"pprof"`
		Dbg        struct{ Socket string } `json:"dbg"`
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	rows := portRows(t)
	for _, flags := range controlPlaneManifestFlags(t) {
		get := func(name string) string { return flags.Lookup(name).Value.String() }
		_, health, _ := net.SplitHostPort(get("health-serve-addr"))
		_, metrics, _ := net.SplitHostPort(get("prometheus-serve-addr"))
		for _, p := range []struct{ what, cp, ds string }{
			{"election port", get("peer-port"), strconv.Itoa(v.L2.PeerPort)},
			{"/healthz port", health, strconv.Itoa(v.HealthPort)},
			{"/metrics port", metrics, strconv.Itoa(v.Prometheus.Port)},
			{"pprof port", get("pprof-port"), strconv.Itoa(v.Pprof.Port)},
			{"herald-dbg socket", get("dbg-socket"), v.Dbg.Socket},
			{"BPF pins", "<bpf-root>/" + cpvip.ResponderPinDir, "<bpf-root>/" + responder.AgentPinDir},
		} {
			if p.cp == p.ds || p.cp == "" {
				t.Errorf("%s: the control-plane VIP's %q collides with the DaemonSet's %q", p.what, p.cp, p.ds)
			}
			if !rowWith(rows, p.cp, p.ds) {
				t.Errorf("%s: no row of control-plane-vip.md's \"Ports and paths\" says %s (control-plane VIP) and %s (DaemonSet)", p.what, p.cp, p.ds)
			}
		}
	}
}

// controlPlaneManifestFlags: the mode's flags as the static Pod and the
// systemd unit set them.
func controlPlaneManifestFlags(t *testing.T) []*pflag.FlagSet {
	b, err := os.ReadFile(filepath.Join(controlPlaneInstall, "herald-control-plane-vip.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.Unmarshal(b, &pod); err != nil {
		t.Fatal(err)
	}
	unit, err := os.ReadFile(filepath.Join(controlPlaneInstall, "herald-control-plane-vip.service"))
	if err != nil {
		t.Fatal(err)
	}
	_, exec, _ := strings.Cut(strings.ReplaceAll(string(unit), "\\\n", " "), "\nExecStart=")
	exec, _, _ = strings.Cut(exec, "\n")
	var out []*pflag.FlagSet
	for _, args := range [][]string{pod.Spec.Containers[0].Args[1:], strings.Fields(exec)[2:]} {
		cmd := newControlPlaneCommand()
		if err := cmd.Flags().Parse(args); err != nil {
			t.Fatal(err)
		}
		out = append(out, cmd.Flags())
	}
	return out
}

// portRows are the rows of the "Ports and paths" table.
func portRows(t *testing.T) []string {
	f, err := os.Open("../Documentation/control-plane-vip.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []string
	in := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			in = strings.TrimLeft(line, "# ") == "Ports and paths"
		}
		if in && strings.HasPrefix(line, "|") {
			rows = append(rows, line)
		}
	}
	if len(rows) == 0 {
		t.Fatal(`control-plane-vip.md has no "Ports and paths" table`)
	}
	return rows
}

// rowWith: a row names cp in its second column and ds in its third.
func rowWith(rows []string, cp, ds string) bool {
	for _, r := range rows {
		cols := strings.Split(r, "|")
		if len(cols) > 3 && mentions(cols[2], cp) && mentions(cols[3], ds) {
			return true
		}
	}
	return false
}

// mentions: col names v as a whole (9967 is not in 19967).
func mentions(col, v string) bool {
	for i := strings.Index(col, v); i >= 0; {
		before, after := i == 0 || !isDigit(col[i-1]), i+len(v) == len(col) || !isDigit(col[i+len(v)])
		if before && after {
			return true
		}
		j := strings.Index(col[i+1:], v)
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
