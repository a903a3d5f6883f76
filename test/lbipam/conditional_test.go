package lbipam

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/heraldlb/herald/tables"
)

// TestStatusApplyIsConditional checks what Herald's fencing relies on: a
// server-side apply of Service status that names a resourceVersion fails
// with a conflict when the Service changed since, even with force (which
// only settles field-manager conflicts). A stale LB IPAM leader's write
// therefore cannot overwrite a newer leader's.
func TestStatusApplyIsConditional(t *testing.T) {
	s := newScenario(t)
	ctx := context.Background()
	svcs := kube.CoreV1().Services(s.ns)
	svc, err := svcs.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "conditional"},
		Spec: corev1.ServiceSpec{
			Type:              corev1.ServiceTypeLoadBalancer,
			LoadBalancerClass: ptrTo("example.com/not-herald"), // nobody else writes it
			Ports:             []corev1.ServicePort{{Port: 80}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	apply := func(rv, ip string) error {
		cfg := corev1ac.Service(svc.Name, s.ns).WithResourceVersion(rv).WithStatus(corev1ac.ServiceStatus().
			WithLoadBalancer(corev1ac.LoadBalancerStatus().WithIngress(corev1ac.LoadBalancerIngress().WithIP(ip).WithIPMode(corev1.LoadBalancerIPModeVIP))))
		_, err := svcs.ApplyStatus(ctx, cfg, metav1.ApplyOptions{FieldManager: tables.HeraldFieldManager, Force: true})
		return err
	}
	stale := svc.ResourceVersion
	if err := apply(stale, "198.18.7.1"); err != nil {
		t.Fatalf("apply at the current resourceVersion: %v", err)
	}
	err = apply(stale, "198.18.7.2")
	if !apierrors.IsConflict(err) {
		t.Fatalf("apply at a stale resourceVersion: err = %v, want a conflict", err)
	}
	got, err := svcs.Get(ctx, svc.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ips := ingressIPs(got); len(ips) != 1 || ips[0] != "198.18.7.1" {
		t.Fatalf("ingress after the stale apply = %v, want [198.18.7.1]", ips)
	}
}

func ptrTo[T any](v T) *T { return &v }
