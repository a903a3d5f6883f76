package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/test/realcluster/images"
)

// What the tests deploy: the backend image (httpecho) as Deployments and
// Pods, LoadBalancer Services in front of them.

const backendPort = 8080

// newNamespace creates a namespace for one test (with annotations, e.g. a
// pool) and deletes it when the test ends.
func newNamespace(t testing.TB, base string, ann map[string]string) string {
	t.Helper()
	ns, err := cl.Client.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: base + "-", Annotations: ann}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cl.Client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// backendPod is the pod template of the backend: httpecho answering with
// its Pod's name, ready once it listens.
func backendPod(labels, ann map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: ann},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "httpecho", Image: images.BackendRef, ImagePullPolicy: corev1.PullNever,
				Args:  []string{"-listen", fmt.Sprintf(":%d", backendPort), "-name", "$(POD_NAME)"},
				Env:   []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				Ports: []corev1.ContainerPort{{ContainerPort: backendPort}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(backendPort)}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
}

// deployBackend creates a Deployment of the backend with replicas spread
// over the nodes, and waits until all are ready.
func deployBackend(t testing.TB, ns, name string, replicas int32, ann map[string]string) []corev1.Pod {
	t.Helper()
	labels := map[string]string{"app": name}
	tmpl := backendPod(labels, ann)
	tmpl.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
	}}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl,
		},
	}
	if _, err := cl.Client.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return waitPodsReady(t, ns, "app="+name, int(replicas))
}

// waitPodsReady waits until exactly n pods match the selector, all Ready
// with their addresses, and returns them.
func waitPodsReady(t testing.TB, ns, selector string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	waitFor(t, timeout, func() (bool, string) {
		list, err := cl.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		pods = slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
		ready := 0
		var why []string
		for i := range pods {
			if podReady(&pods[i]) && len(pods[i].Status.PodIPs) > 0 {
				ready++
			} else {
				why = append(why, fmt.Sprintf("%s on %s: %s", pods[i].Name, pods[i].Spec.NodeName, pods[i].Status.Phase))
			}
		}
		return ready == n && len(pods) == n, fmt.Sprintf("%d of %d pods %s in %s ready: %s%s", ready, n, selector, ns, strings.Join(why, "; "), podEvents(ns))
	})
	return pods
}

// podEvents sums up the Warning Events of a namespace, for messages.
func podEvents(ns string) string {
	evs, err := cl.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "type=Warning"})
	if err != nil || len(evs.Items) == 0 {
		return ""
	}
	var out []string
	for _, e := range evs.Items {
		out = append(out, fmt.Sprintf("%s %s: %s", e.InvolvedObject.Name, e.Reason, e.Message))
	}
	if len(out) > 5 {
		out = out[len(out)-5:]
	}
	return "; warnings: " + strings.Join(out, " | ")
}

// podAddrs returns a pod's addresses.
func podAddrs(p corev1.Pod) []netip.Addr {
	var out []netip.Addr
	for _, ip := range p.Status.PodIPs {
		if a, err := netip.ParseAddr(ip.IP); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// loadBalancer creates a LoadBalancer Service for the pods labelled
// app=<name> and waits for its IP.
func loadBalancer(t testing.TB, ns, name string, mutate func(*corev1.Service)) (*corev1.Service, netip.Addr) {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(backendPort)}},
		},
	}
	if mutate != nil {
		mutate(svc)
	}
	if _, err := cl.Client.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ip netip.Addr
	waitFor(t, timeout, func() (bool, string) {
		s, err := cl.Client.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		svc = s
		if len(s.Status.LoadBalancer.Ingress) == 0 {
			return false, fmt.Sprintf("Service %s/%s has no IP: %+v", ns, name, s.Status.Conditions)
		}
		ip, err = netip.ParseAddr(s.Status.LoadBalancer.Ingress[0].IP)
		return err == nil, fmt.Sprintf("Service %s/%s: ingress %q", ns, name, s.Status.LoadBalancer.Ingress[0].IP)
	})
	return svc, ip
}

// applyYAML applies manifests with kubectl and deletes them when the test
// ends.
func applyYAML(t testing.TB, manifest string) {
	t.Helper()
	kubectlStdin(t, manifest, "apply", "-f", "-")
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = cl.RunKubectlStdin(ctx, manifest, "delete", "--ignore-not-found", "--wait=false", "-f", "-")
	})
}

func kubectlStdin(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := cl.RunKubectlStdin(context.Background(), stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func intstrPort() intstr.IntOrString { return intstr.FromInt32(backendPort) }
