package install

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/heraldlb/herald/daemon"
	"github.com/heraldlb/herald/install/helm/helmrender"
)

// rendered is one rendering of the chart, decoded.
type rendered struct {
	res     *helmrender.Result
	objects []*unstructured.Unstructured
}

func render(t *testing.T, o helmrender.Options) *rendered {
	t.Helper()
	o.ChartDir = chartDir
	res, err := helmrender.Render(o)
	if err != nil {
		t.Fatalf("rendering the chart (%+v): %v", o, err)
	}
	r := &rendered{res: res}
	for _, m := range res.Manifests {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(m.Content), &obj); err != nil {
			t.Fatalf("%s: %v\n%s", m.Name, err, m.Content)
		}
		if obj == nil {
			continue
		}
		r.objects = append(r.objects, &unstructured.Unstructured{Object: obj})
	}
	return r
}

// typed decodes the only object of the kind into out, rejecting unknown
// fields.
func (r *rendered) typed(t *testing.T, kind string, out any) {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range r.objects {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("rendered %d objects of kind %s, want 1", len(found), kind)
	}
	b, err := yaml.Marshal(found[0].Object)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, out); err != nil {
		t.Fatalf("%s: %v", kind, err)
	}
}

func (r *rendered) configMap(t *testing.T) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	r.typed(t, "ConfigMap", &cm)
	return &cm
}

func (r *rendered) daemonSet(t *testing.T) *appsv1.DaemonSet {
	t.Helper()
	var ds appsv1.DaemonSet
	r.typed(t, "DaemonSet", &ds)
	return &ds
}

// TestLint is `helm lint --strict`: no errors and no warnings, with the
// default values and with overrides.
func TestLint(t *testing.T) {
	for name, vals := range map[string]map[string]any{
		"defaults": nil,
		"overrides": {
			"l2announcements": map[string]any{"enabled": true, "leaseDuration": "3s"},
			"devices":         []any{"eth0"},
			"prometheus":      map[string]any{"enabled": false},
		},
		"cni":               {"cni": map[string]any{"install": true, "binDir": "/usr/libexec/cni"}},
		"pod announcements": {"l2podAnnouncements": map[string]any{"enabled": true, "interface": "eth0"}},
		// The --set options of the spec's L2 announcements page, as written
		// for Cilium's chart; Cilium's datapath options change nothing.
		"spec's L2 options": {
			"l2announcements": map[string]any{"enabled": true, "leaseDuration": "3s",
				"leaseRenewDeadline": "1s", "leaseRetryPeriod": "200ms"},
			"k8sClientRateLimit":   map[string]any{"qps": 50, "burst": 100},
			"kubeProxyReplacement": true,
			"k8sServiceHost":       "198.18.0.1",
			"k8sServicePort":       "6443",
			"externalIPs":          map[string]any{"enabled": true},
		},
	} {
		t.Run(name, func(t *testing.T) {
			for _, m := range helmrender.Lint(chartDir, "", vals) {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", m.Error())
				} else {
					t.Logf("helm lint: %s", m.Error())
				}
			}
		})
	}
}

// TestLintRejects: values the schema refuses fail the lint, as they fail
// `helm install`.
func TestLintRejects(t *testing.T) {
	for name, vals := range map[string]map[string]any{
		"typo in a key":         {"l2Announcements": map[string]any{"enabled": true}},
		"duration without unit": {"l2announcements": map[string]any{"leaseDuration": 15}},
		"unknown IPAM":          {"defaultLBServiceIPAM": "metallb"},
		"unknown responder":     {"l2announcements": map[string]any{"responderMode": "tc"}},
		"relative CNI bin dir":  {"cni": map[string]any{"binDir": "opt/cni/bin"}},
		"typo in cni":           {"cni": map[string]any{"instal": true}},
		// No value of Cilium's: the agent would refuse it.
		"kube-proxy-replacement typo": {"kubeProxyReplacement": "ture"},
		// The agent would refuse to start: the chart refuses first.
		"pod announcements without an interface":  {"l2podAnnouncements": map[string]any{"enabled": true}},
		"pod announcement interface as a pattern": {"l2podAnnouncements": map[string]any{"enabled": true, "interface": "eth[0-9]+ "}},
	} {
		t.Run(name, func(t *testing.T) {
			failed := false
			for _, m := range helmrender.Lint(chartDir, "", vals) {
				failed = failed || m.Severity >= support.ErrorSev
			}
			if !failed {
				t.Errorf("helm lint accepted %v", vals)
			}
		})
	}
}

// TestEveryFlagIsAKey: the ConfigMap has a key for every flag of
// `herald-agent --help` but config-dir (the ConfigMap's own mount point),
// and no key that is not a flag (the agent refuses to start on one).
func TestEveryFlagIsAKey(t *testing.T) {
	for name, o := range map[string]helmrender.Options{
		"defaults":  {},
		"overrides": overrides,
	} {
		t.Run(name, func(t *testing.T) {
			cm := render(t, o).configMap(t)
			want := slices.DeleteFunc(slices.Clone(agentFlags), func(f string) bool { return f == "config-dir" })
			got := slices.Sorted(maps.Keys(cm.Data))
			for _, f := range want {
				if _, ok := cm.Data[f]; !ok {
					t.Errorf("herald-agent flag --%s has no key in ConfigMap %s", f, cm.Name)
				}
			}
			for _, k := range got {
				if !slices.Contains(want, k) {
					t.Errorf("ConfigMap %s key %q is not a herald-agent flag (the agent refuses to start on it)", cm.Name, k)
				}
			}
		})
	}
}

// overrides set every option to something else than its default.
var overrides = helmrender.Options{
	Namespace: "herald",
	Set: []string{
		"l2announcements.enabled=true",
		"l2announcements.leaseDuration=3s",
		"l2announcements.leaseRenewDeadline=1s",
		"l2announcements.leaseRetryPeriod=200ms",
		"l2announcements.responderMode=xdp",
		"l2announcements.election=lease",
		"l2announcements.peerPort=7950",
		"l2announcements.peerSecret=peers",
		"k8sClientRateLimit.qps=32.5",
		"k8sClientRateLimit.burst=50",
		"defaultLBServiceIPAM=none",
		"ipv4.enabled=false",
		"ipv6.enabled=true",
		"bgpControlPlane.enabled=true",
		"bgpControlPlane.secretsNamespace.name=bgp-secrets",
		"bgpControlPlane.statusReport.enabled=false",
		"devices={eth0,eno[0-9]+}",
		"bpf.root=/run/herald/bpf",
		"dbg.socket=/run/herald-dbg/agent.sock",
		"dbg.hostPath=true",
		"healthPort=19965",
		"prometheus.enabled=false",
		"logLevel=debug",
		"kubeconfig=/etc/herald/kubeconfig/config",
		"lbIPAMLease.duration=3s",
		"lbIPAMLease.renewDeadline=2s",
		"lbIPAMLease.retryPeriod=500ms",
		"ipam.mode=multi-pool",
		"ipam.multiPoolPreAllocation=default=16\\,green=4",
		"ipam.operator.autoCreateCiliumPodIPPools.default.ipv4.cidrs={10.10.0.0/16,10.11.0.0/16}",
		"ipam.operator.autoCreateCiliumPodIPPools.default.ipv4.maskSize=24",
		"ipam.operator.autoCreateCiliumPodIPPools.v6.ipv6.cidrs={fd00:10::/104}",
		"ipam.operator.autoCreateCiliumPodIPPools.v6.ipv6.maskSize=120",
		"ipam.lease.duration=3s",
		"ipam.lease.renewDeadline=2s",
		"ipam.lease.retryPeriod=500ms",
		"autoDirectNodeRoutes=true",
		"l2podAnnouncements.enabled=true",
		"l2podAnnouncements.interface=eth1",
		"enableNoServiceEndpointsRoutable=true",
	},
}

// wantOverridden is the ConfigMap of overrides.
var wantOverridden = map[string]string{
	"bpf-root":                               "/run/herald/bpf",
	"dbg-socket":                             "/run/herald-dbg/agent.sock",
	"default-lb-service-ipam":                "none",
	"devices":                                "eth0,eno[0-9]+",
	"enable-bgp-control-plane":               "true",
	"bgp-secrets-namespace":                  "bgp-secrets",
	"enable-bgp-control-plane-status-report": "false",
	"enable-ipv4":                            "false",
	"enable-ipv6":                            "true",
	"enable-l2-announcements":                "true",
	"health-serve-addr":                      "127.0.0.1:19965",
	"k8s-client-burst":                       "50",
	"k8s-client-qps":                         "32.5",
	"k8s-namespace":                          "herald",
	"kubeconfig":                             "/etc/herald/kubeconfig/config",
	"l2-announcements-lease-duration":        "3s",
	"l2-announcements-renew-deadline":        "1s",
	"l2-announcements-retry-period":          "200ms",
	"l2-responder-mode":                      "xdp",
	"l2-announcements-election":              "lease",
	"l2-announcements-peer-port":             "7950",
	"l2-announcements-peer-secret":           "peers",
	"log-level":                              "debug",
	"node-name":                              "",
	"prometheus-serve-addr":                  "",
	"lb-ipam-lease-duration":                 "3s",
	"lb-ipam-lease-renew-deadline":           "2s",
	"lb-ipam-lease-retry-period":             "500ms",
	"ipam":                                   "multi-pool",
	"ipam-multi-pool-pre-allocation":         "default=16,green=4",
	"auto-create-cilium-pod-ip-pools":        "default=ipv4-cidrs:10.10.0.0/16,10.11.0.0/16;ipv4-mask-size:24 v6=ipv6-cidrs:fd00:10::/104;ipv6-mask-size:120",
	"pod-ipam-lease-duration":                "3s",
	"pod-ipam-lease-renew-deadline":          "2s",
	"pod-ipam-lease-retry-period":            "500ms",
	"auto-direct-node-routes":                "true",
	"ipam-socket":                            "/var/run/herald/ipam.sock",
	"ipam-state-dir":                         "/var/lib/herald/ipam",
	"enable-l2-pod-announcements":            "true",
	"l2-pod-announcements-interface":         "eth1",
	"enable-no-service-endpoints-routable":   "true",
}

// wantDefault is the ConfigMap of the default values: the agent's own
// defaults, but health on the loopback only.
var wantDefault = map[string]string{
	"bpf-root":                               "/sys/fs/bpf",
	"dbg-socket":                             "/var/run/herald/herald.sock",
	"default-lb-service-ipam":                "lbipam",
	"devices":                                "",
	"enable-bgp-control-plane":               "false",
	"bgp-secrets-namespace":                  "kube-system",
	"enable-bgp-control-plane-status-report": "true",
	"enable-ipv4":                            "true",
	"enable-ipv6":                            "false",
	"enable-l2-announcements":                "false",
	"health-serve-addr":                      "127.0.0.1:9965",
	"k8s-client-burst":                       "200",
	"k8s-client-qps":                         "100",
	"k8s-namespace":                          "kube-system",
	"kubeconfig":                             "",
	"l2-announcements-lease-duration":        "15s",
	"l2-announcements-renew-deadline":        "5s",
	"l2-announcements-retry-period":          "2s",
	"l2-responder-mode":                      "tcx",
	"l2-announcements-election":              "members",
	"l2-announcements-peer-port":             "7947",
	"l2-announcements-peer-secret":           "herald-l2-peers",
	"log-level":                              "info",
	"node-name":                              "",
	"prometheus-serve-addr":                  ":9966",
	"lb-ipam-lease-duration":                 "2s",
	"lb-ipam-lease-renew-deadline":           "1s",
	"lb-ipam-lease-retry-period":             "250ms",
	"ipam":                                   "none",
	"ipam-multi-pool-pre-allocation":         "default=8",
	"auto-create-cilium-pod-ip-pools":        "",
	"pod-ipam-lease-duration":                "2s",
	"pod-ipam-lease-renew-deadline":          "1s",
	"pod-ipam-lease-retry-period":            "250ms",
	"auto-direct-node-routes":                "false",
	"ipam-socket":                            "/var/run/herald/ipam.sock",
	"ipam-state-dir":                         "/var/lib/herald/ipam",
	"enable-l2-pod-announcements":            "false",
	"l2-pod-announcements-interface":         "",
	"enable-no-service-endpoints-routable":   "false",
}

// TestConfigMap checks the ConfigMap's keys and values, and that the agent
// accepts every value: the keys are written to a directory and applied to
// herald-agent's flags exactly as --config-dir does at start-up.
func TestConfigMap(t *testing.T) {
	valuesFile := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(valuesFile, []byte("l2announcements:\n  enabled: true\n  leaseDuration: 3s\n  leaseRenewDeadline: 1s\n  leaseRetryPeriod: 200ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	withL2 := maps.Clone(wantDefault)
	withL2["enable-l2-announcements"] = "true"
	withL2["l2-announcements-lease-duration"] = "3s"
	withL2["l2-announcements-renew-deadline"] = "1s"
	withL2["l2-announcements-retry-period"] = "200ms"

	for _, tt := range []struct {
		name string
		o    helmrender.Options
		want map[string]string
	}{
		{"defaults", helmrender.Options{}, wantDefault},
		{"overrides", overrides, wantOverridden},
		{"values file", helmrender.Options{ValueFiles: []string{valuesFile}}, withL2},
		{"devices as a string", helmrender.Options{Set: []string{"devices=eth+"}}, with(wantDefault, "devices", "eth+")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cm := render(t, tt.o).configMap(t)
			for k, v := range tt.want {
				if got, ok := cm.Data[k]; !ok {
					t.Errorf("key %s missing, want %q", k, v)
				} else if got != v {
					t.Errorf("key %s = %q, want %q", k, got, v)
				}
			}

			// What the agent makes of it.
			dir := t.TempDir()
			for k, v := range cm.Data {
				if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			flags := daemon.NewAgentCommand().Flags()
			if err := daemon.ApplyConfigDir(flags, dir); err != nil {
				t.Fatalf("herald-agent --config-dir refuses the ConfigMap: %v", err)
			}
			for k, v := range cm.Data {
				f := flags.Lookup(k)
				if f == nil {
					continue // reported by TestEveryFlagIsAKey
				}
				got := f.Value.String()
				if f.Value.Type() == "stringSlice" {
					got = strings.TrimSuffix(strings.TrimPrefix(got, "["), "]")
				}
				if got != v {
					t.Errorf("agent flag --%s = %q after --config-dir, want %q", k, got, v)
				}
			}
		})
	}
}

func with(m map[string]string, k, v string) map[string]string {
	m = maps.Clone(m)
	m[k] = v
	return m
}

// TestDaemonSet checks what the agent needs on the node.
func TestDaemonSet(t *testing.T) {
	r := render(t, helmrender.Options{})
	ds := r.daemonSet(t)
	cm := r.configMap(t)
	pod := ds.Spec.Template.Spec

	if ds.Namespace != "kube-system" || ds.Name != "herald" {
		t.Errorf("DaemonSet %s/%s, want kube-system/herald", ds.Namespace, ds.Name)
	}
	if !pod.HostNetwork {
		t.Error("hostNetwork is off")
	}
	if pod.PriorityClassName != "system-node-critical" {
		t.Errorf("priorityClassName %q", pod.PriorityClassName)
	}
	if pod.ServiceAccountName != "herald" {
		t.Errorf("serviceAccountName %q", pod.ServiceAccountName)
	}
	if !slices.ContainsFunc(pod.Tolerations, func(tol corev1.Toleration) bool {
		return tol.Operator == corev1.TolerationOpExists && tol.Key == "" && tol.Effect == ""
	}) {
		t.Errorf("tolerations %+v do not tolerate every taint", pod.Tolerations)
	}
	u := ds.Spec.UpdateStrategy
	if u.Type != appsv1.RollingUpdateDaemonSetStrategyType || u.RollingUpdate == nil ||
		!reflect.DeepEqual(u.RollingUpdate.MaxUnavailable, ptr(intstr.FromInt32(1))) ||
		!reflect.DeepEqual(u.RollingUpdate.MaxSurge, ptr(intstr.FromInt32(0))) {
		t.Errorf("updateStrategy %+v, want RollingUpdate maxUnavailable 1 maxSurge 0", u)
	}

	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	if !slices.Contains(c.Args, "--config-dir=/etc/herald/config") || !slices.Contains(c.Args, "--k8s-namespace=$(POD_NAMESPACE)") {
		t.Errorf("args %q", c.Args)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if env["NODE_NAME"] != "spec.nodeName" || env["POD_NAMESPACE"] != "metadata.namespace" {
		t.Errorf("env %+v: want NODE_NAME from spec.nodeName and POD_NAMESPACE from metadata.namespace", c.Env)
	}
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil {
		t.Fatal("no capabilities")
	}
	wantCaps := []corev1.Capability{"NET_ADMIN", "NET_RAW", "BPF", "PERFMON", "SYS_ADMIN"}
	if !reflect.DeepEqual(sc.Capabilities.Add, wantCaps) || !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("capabilities %+v, want add %v drop ALL", sc.Capabilities, wantCaps)
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Error("privileged")
	}

	// Probes on the port of health-serve-addr, on the loopback.
	healthAddr := cm.Data["health-serve-addr"]
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s probe missing", name)
			continue
		}
		if got := p.HTTPGet.Host + ":" + p.HTTPGet.Port.String(); got != healthAddr {
			t.Errorf("%s probe on %s, health-serve-addr is %s", name, got, healthAddr)
		}
	}
	if c.ReadinessProbe.HTTPGet.Path != "/healthz" || c.LivenessProbe.HTTPGet.Path != "/livez" {
		t.Errorf("readiness on %s, liveness on %s", c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path)
	}

	// Volumes: the ConfigMap at --config-dir, the host's bpffs at bpf-root,
	// a directory for the dbg socket.
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	if m, ok := mounts["/etc/herald/config"]; !ok || vols[m.Name].ConfigMap == nil || vols[m.Name].ConfigMap.Name != cm.Name {
		t.Errorf("ConfigMap %s is not mounted at /etc/herald/config", cm.Name)
	}
	if m, ok := mounts[cm.Data["bpf-root"]]; !ok || vols[m.Name].HostPath == nil || vols[m.Name].HostPath.Path != cm.Data["bpf-root"] {
		t.Errorf("bpf-root %s is not the host's", cm.Data["bpf-root"])
	}
	if m, ok := mounts[filepath.Dir(cm.Data["dbg-socket"])]; !ok || vols[m.Name].EmptyDir == nil {
		t.Errorf("no emptyDir at the directory of dbg-socket %s", cm.Data["dbg-socket"])
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["health"] != 9965 || ports["metrics"] != 9966 {
		t.Errorf("ports %+v", c.Ports)
	}
	if ds.Spec.Template.Annotations["checksum/config"] == "" {
		t.Error("no checksum/config annotation")
	}
	// kubectl exec ds/herald -- herald-dbg ... (every document's command) reaches the agent
	// without "Defaulted container" on stderr, also beside the install-cni init container.
	if got := ds.Spec.Template.Annotations["kubectl.kubernetes.io/default-container"]; got != c.Name {
		t.Errorf("kubectl.kubernetes.io/default-container %q, want the agent's container %q", got, c.Name)
	}

	// With the overrides.
	ro := render(t, overrides)
	ds2 := ro.daemonSet(t)
	c2 := ds2.Spec.Template.Spec.Containers[0]
	if c2.ReadinessProbe.HTTPGet.Port.IntValue() != 19965 {
		t.Errorf("readiness probe on port %s, want 19965", c2.ReadinessProbe.HTTPGet.Port.String())
	}
	for _, p := range c2.Ports {
		if p.Name == "metrics" {
			t.Error("metrics port with prometheus.enabled=false")
		}
	}
	if ds2.Spec.Template.Annotations["checksum/config"] == ds.Spec.Template.Annotations["checksum/config"] {
		t.Error("checksum/config does not change with the ConfigMap")
	}
	found := false
	for _, v := range ds2.Spec.Template.Spec.Volumes {
		if v.HostPath != nil && v.HostPath.Path == "/run/herald-dbg" {
			found = true
		}
		if v.HostPath != nil && v.HostPath.Path == "/sys/fs/bpf" {
			t.Error("bpf.root override still mounts /sys/fs/bpf")
		}
	}
	if !found {
		t.Error("dbg.hostPath=true: no hostPath /run/herald-dbg")
	}
	for _, o := range ro.objects {
		if o.GetName() == "herald-bgp-secrets" && o.GetNamespace() == "bgp-secrets" {
			continue // the Secrets of BGP peers have a namespace of their own
		}
		if ns := o.GetNamespace(); ns != "" && ns != "herald" {
			t.Errorf("%s %s in namespace %s, release namespace is herald", o.GetKind(), o.GetName(), ns)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestRBAC: the roles grant what the agent does and nothing else.
func TestRBAC(t *testing.T) {
	r := render(t, helmrender.Options{})
	var cr rbacv1.ClusterRole
	r.typed(t, "ClusterRole", &cr)
	var role rbacv1.Role
	r.typed(t, "Role", &role)

	// A grant narrowed to named objects names them after the resource:
	// "secrets/herald-l2-peers".
	type grant struct{ group, resource, verb string }
	flatten := func(rules []rbacv1.PolicyRule) []grant {
		var out []grant
		for _, rule := range rules {
			if len(rule.NonResourceURLs) > 0 {
				t.Errorf("unexpected rule %+v", rule)
			}
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, v := range rule.Verbs {
						if len(rule.ResourceNames) == 0 {
							out = append(out, grant{g, res, v})
						}
						for _, name := range rule.ResourceNames {
							out = append(out, grant{g, res + "/" + name, v})
						}
					}
				}
			}
		}
		slices.SortFunc(out, func(a, b grant) int {
			return strings.Compare(a.group+"/"+a.resource+"/"+a.verb, b.group+"/"+b.resource+"/"+b.verb)
		})
		return out
	}
	gvs := func(group, resource string, verbs ...string) []grant {
		var out []grant
		for _, v := range verbs {
			out = append(out, grant{group, resource, v})
		}
		return out
	}
	wantCluster := slices.Concat(
		gvs("", "events", "create", "patch", "update"),
		gvs("", "nodes", "get", "list", "watch"),
		gvs("", "services", "get", "list", "watch"),

		gvs("", "services/status", "patch"),
		gvs("cilium.io", "ciliuml2announcementpolicies", "get", "list", "watch"),
		gvs("cilium.io", "ciliuml2announcementpolicies/status", "patch"),
		gvs("cilium.io", "ciliumloadbalancerippools", "get", "list", "watch"),
		gvs("cilium.io", "ciliumloadbalancerippools/status", "patch"),
	)
	slices.SortFunc(wantCluster, func(a, b grant) int {
		return strings.Compare(a.group+"/"+a.resource+"/"+a.verb, b.group+"/"+b.resource+"/"+b.verb)
	})
	if got := flatten(cr.Rules); !reflect.DeepEqual(got, wantCluster) {
		t.Errorf("ClusterRole grants\n%v\nwant\n%v", got, wantCluster)
	}
	// With L2 announcements on: EndpointSlices (with BGP too, below; not
	// otherwise).
	var crL2 rbacv1.ClusterRole
	render(t, helmrender.Options{Set: []string{"l2announcements.enabled=true"}}).typed(t, "ClusterRole", &crL2)
	wantL2 := slices.Concat(wantCluster, gvs("discovery.k8s.io", "endpointslices", "get", "list", "watch"))
	slices.SortFunc(wantL2, func(a, b grant) int {
		return strings.Compare(a.group+"/"+a.resource+"/"+a.verb, b.group+"/"+b.resource+"/"+b.verb)
	})
	if got := flatten(crL2.Rules); !reflect.DeepEqual(got, wantL2) {
		t.Errorf("ClusterRole grants with L2 announcements\n%v\nwant\n%v", got, wantL2)
	}
	wantRole := gvs("coordination.k8s.io", "leases", "create", "delete", "get", "list", "update", "watch")
	if got := flatten(role.Rules); !reflect.DeepEqual(got, wantRole) {
		t.Errorf("Role grants\n%v\nwant\n%v", got, wantRole)
	}
	// With the members election, and only then: its peer Secret.
	var roleMembers rbacv1.Role
	render(t, helmrender.Options{Set: []string{"l2announcements.enabled=true", "l2announcements.election=members"}}).typed(t, "Role", &roleMembers)
	wantMembers := slices.Concat(gvs("", "secrets", "create"), gvs("", "secrets/herald-l2-peers", "get"), wantRole)
	if got := flatten(roleMembers.Rules); !reflect.DeepEqual(got, wantMembers) {
		t.Errorf("Role grants with the members election\n%v\nwant\n%v", got, wantMembers)
	}
	if role.Namespace != "kube-system" {
		t.Errorf("Role in %s", role.Namespace)
	}

	// With the BGP control plane, and only then: its resources, and the
	// Secrets of its secrets namespace through a Role of its own there.
	rb := render(t, helmrender.Options{Set: []string{"bgpControlPlane.enabled=true", "bgpControlPlane.secretsNamespace.name=bgp-secrets"}})
	var crBGP rbacv1.ClusterRole
	rb.typed(t, "ClusterRole", &crBGP)
	bgpRead := []string{"ciliumbgpadvertisements", "ciliumbgpclusterconfigs", "ciliumbgpnodeconfigoverrides", "ciliumbgpnodeconfigs", "ciliumbgppeerconfigs"}
	var wantBGP []grant
	for _, res := range bgpRead {
		wantBGP = append(wantBGP, gvs("cilium.io", res, "get", "list", "watch")...)
	}
	for _, res := range []string{"ciliumbgpadvertisements/status", "ciliumbgpclusterconfigs/status", "ciliumbgppeerconfigs/status"} {
		wantBGP = append(wantBGP, gvs("cilium.io", res, "update", "patch")...)
	}
	for _, res := range []string{"ciliumbgpnodeconfigs", "ciliumbgpnodeconfigs/status"} {
		wantBGP = append(wantBGP, gvs("cilium.io", res, "create", "update", "patch", "delete")...)
	}
	// BGP reads EndpointSlices too: whether a Service is served at all,
	// and (externalTrafficPolicy Local) whether it is served here.
	wantBGP = slices.Concat(wantCluster, wantBGP, gvs("discovery.k8s.io", "endpointslices", "get", "list", "watch"))
	slices.SortFunc(wantBGP, func(a, b grant) int {
		return strings.Compare(a.group+"/"+a.resource+"/"+a.verb, b.group+"/"+b.resource+"/"+b.verb)
	})
	if got := flatten(crBGP.Rules); !reflect.DeepEqual(got, wantBGP) {
		t.Errorf("ClusterRole grants with BGP\n%v\nwant\n%v", got, wantBGP)
	}
	var secretsRole *rbacv1.Role
	var secretsBinding *rbacv1.RoleBinding
	for _, o := range rb.objects {
		if o.GetName() != "herald-bgp-secrets" {
			continue
		}
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		switch o.GetKind() {
		case "Role":
			secretsRole = &rbacv1.Role{}
			err = yaml.UnmarshalStrict(b, secretsRole)
		case "RoleBinding":
			secretsBinding = &rbacv1.RoleBinding{}
			err = yaml.UnmarshalStrict(b, secretsBinding)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if secretsRole == nil || secretsBinding == nil {
		t.Fatalf("BGP: no Role and RoleBinding herald-bgp-secrets")
	}
	if got, want := flatten(secretsRole.Rules), gvs("", "secrets", "get", "list", "watch"); secretsRole.Namespace != "bgp-secrets" || !reflect.DeepEqual(got, want) {
		t.Errorf("BGP secrets Role in %s grants %v, want bgp-secrets and %v", secretsRole.Namespace, got, want)
	}
	if b := secretsBinding; b.Namespace != "bgp-secrets" || b.RoleRef.Name != secretsRole.Name ||
		len(b.Subjects) != 1 || b.Subjects[0].Name != "herald" || b.Subjects[0].Namespace != "kube-system" {
		t.Errorf("BGP secrets RoleBinding %+v", b)
	}
	for _, o := range r.objects {
		if strings.Contains(o.GetName(), "bgp") {
			t.Errorf("BGP disabled, yet %s %s", o.GetKind(), o.GetName())
		}
	}
}

// TestRenderIsDeterministic renders twice and compares.
func TestRenderIsDeterministic(t *testing.T) {
	a := render(t, overrides).res.YAML()
	b := render(t, overrides).res.YAML()
	if !bytes.Equal(a, b) {
		t.Error("two renderings differ")
	}
}

// TestGeneratedFilesUpToDate: install/kubernetes/herald.yaml and the CRD
// copies are what hack/manifests.sh writes now.
func TestGeneratedFilesUpToDate(t *testing.T) {
	const fix = "; run hack/manifests.sh (make manifests)"
	want, err := helmrender.PlainManifests(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(root, "install", "kubernetes", "herald.yaml")
	got, err := os.ReadFile(plain)
	if err != nil {
		t.Fatalf("%v%s", err, fix)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale%s\n%s", plain, fix, firstDiff(got, want))
	}

	src := crdFiles(t, filepath.Join(root, "install", "crds"))
	if len(src) == 0 {
		t.Fatal("no CRDs in install/crds")
	}
	for _, dir := range []string{filepath.Join(chartDir, "crds"), filepath.Join(root, "install", "kubernetes", "crds")} {
		dst := crdFiles(t, dir)
		if !slices.Equal(slices.Sorted(maps.Keys(src)), slices.Sorted(maps.Keys(dst))) {
			t.Errorf("%s holds %v, install/crds %v%s", dir, slices.Sorted(maps.Keys(dst)), slices.Sorted(maps.Keys(src)), fix)
			continue
		}
		for name, b := range src {
			if !bytes.Equal(b, dst[name]) {
				t.Errorf("%s differs from install/crds/%s%s", filepath.Join(dir, name), name, fix)
			}
		}
	}
}

func crdFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	return out
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n  file:     %s\n  rendered: %s", i+1, gl, wl)
		}
	}
	return ""
}
