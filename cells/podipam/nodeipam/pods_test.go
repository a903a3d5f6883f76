package nodeipam

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/cilium/statedb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/tables"
)

// TestChoosePoolsNamespace: the pool a namespace's annotation names
// applies even when the namespace is not in the agent's table yet (read
// from the API server); when it cannot be read at all (the API server
// fails, or says it does not exist), the ADD fails with a retryable error
// naming the pod and the namespace instead of taking the default pool for
// good; a pod whose own annotations choose every family never needs its
// namespace.
func TestChoosePoolsNamespace(t *testing.T) {
	annotated := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Annotations: map[string]string{tables.AnnotationIPPool: "green"}}}
	for _, tt := range []struct {
		name    string
		inTable bool              // the namespace is in the agent's table
		api     *corev1.Namespace // what the API server has (nil: NotFound)
		apiErr  error             // the API server fails
		podAnn  map[string]string
		want    string // the IPv4 pool, or the error's start
		wantGet bool   // the API server is asked for the namespace
	}{
		{name: "in the table", inTable: true, want: "green"},
		{name: "not in the table yet: asked", api: annotated, want: "green", wantGet: true},
		{name: "API server fails", apiErr: errors.New("connection refused"), wantGet: true,
			want: `error 11: pod ns/p: its Namespace "ns" is not known to the agent yet and the API server cannot be asked: connection refused`},
		{name: "API server says it does not exist", wantGet: true,
			want: `error 11: pod ns/p: its Namespace "ns" is not known to the agent yet and the API server says it does not exist`},
		{name: "the pod chooses: the namespace is not needed", apiErr: errors.New("connection refused"),
			podAnn: map[string]string{tables.AnnotationIPPool: "default"}, want: "default"},
		{name: "the pod chooses another family only: the namespace is needed", apiErr: errors.New("connection refused"), wantGet: true,
			podAnn: map[string]string{tables.AnnotationIPv6Pool: "default"}, want: `error 11: pod ns/p: its Namespace "ns"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			if tt.api != nil {
				objs = append(objs, tt.api)
			}
			kube := fake.NewClientset(objs...)
			asked := false
			kube.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
				asked = true
				return tt.apiErr != nil, nil, tt.apiErr
			})
			a := choiceAgent(t, kube, tt.inTable, &tables.Pod{Namespace: "ns", Name: "p", UID: "u", PoolAnnotations: tt.podAnn})
			got, err := a.choosePools(context.Background(), ipamv1.PodRef{Namespace: "ns", Name: "p", UID: "u"})
			var res string
			if err != nil {
				var ae *apiError
				if !errors.As(err, &ae) {
					t.Fatalf("error %v is not a CNI error", err)
				}
				res = fmt.Sprintf("error %d: %s", ae.body.Code, ae.body.Msg)
			} else {
				res = got[tables.IPv4]
			}
			if !strings.HasPrefix(res, tt.want) || (err == nil) != !strings.HasPrefix(tt.want, "error") {
				t.Fatalf("choosePools = %q, want %q", res, tt.want)
			}
			if asked != tt.wantGet {
				t.Fatalf("API server asked for the namespace: %v, want %v", asked, tt.wantGet)
			}
		})
	}
}

// choiceAgent is an IPv4 agent whose tables hold the pod, the pools
// default and green, and (inTable) the namespace "ns" annotated with
// green.
func choiceAgent(t *testing.T, kube *fake.Clientset, inTable bool, pod *tables.Pod) *agent {
	t.Helper()
	db := statedb.New()
	pods, err1 := tables.NewPodsTable(db)
	nss, err2 := tables.NewNamespacesTable(db)
	pools, err3 := tables.NewPodIPPoolsTable(db)
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	wtxn := db.WriteTxn(pods, nss, pools)
	_, _, _ = pods.Insert(wtxn, pod)
	if inTable {
		_, _, _ = nss.Insert(wtxn, &tables.Namespace{Name: "ns", PoolAnnotations: map[string]string{tables.AnnotationIPPool: "green"}})
	}
	_, _, _ = pools.Insert(wtxn, testPool("default", "198.18.0.0/16", ""))
	_, _, _ = pools.Insert(wtxn, testPool("green", "198.19.0.0/16", ""))
	wtxn.Commit()
	return &agent{
		params: params{DB: db, Pods: pods, Namespaces: nss, Pools: pools, Kube: kube,
			Events: record.NewFakeRecorder(10), Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
		families:    []tables.Family{tables.IPv4},
		defaultPool: "default",
	}
}
