package crdvalidation

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// kindClient is the part of a typed client of one kind the create tests
// use; untyped objects go through dynClient.
type kindClient[T any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// createRejected creates obj, which the API server must refuse, and
// returns its error. An object it accepts is deleted again, so that it
// cannot disturb the next cases, and fails the test.
func createRejected[T any](t *testing.T, c kindClient[T], name string, obj T, want []string) error {
	t.Helper()
	ctx := context.Background()
	_, err := c.Create(ctx, obj, metav1.CreateOptions{})
	if err == nil {
		_ = c.Delete(ctx, name, metav1.DeleteOptions{})
		t.Fatalf("accepted, want an error containing %q", want)
	}
	return err
}

// createAccepted creates obj, which the API server must take, deletes it
// again when the test ends, and returns what the API server stored.
func createAccepted[T any](t *testing.T, c kindClient[T], name string, obj T) T {
	t.Helper()
	ctx := context.Background()
	got, err := c.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("rejected: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, name, metav1.DeleteOptions{}) })
	return got
}

// createYAMLRejected is createRejected for an object written as YAML,
// created untyped as kubectl does: for mistakes the Go types cannot hold.
func createYAMLRejected(t *testing.T, gvr schema.GroupVersionResource, name, doc string, want []string) error {
	t.Helper()
	var obj unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatal(err)
	}
	return createRejected(t, dynClient{dyn.Resource(gvr)}, name, &obj, want)
}

// dynClient fits the dynamic client of one resource to kindClient.
type dynClient struct{ r dynamic.ResourceInterface }

func (d dynClient) Create(ctx context.Context, obj *unstructured.Unstructured, opts metav1.CreateOptions) (*unstructured.Unstructured, error) {
	return d.r.Create(ctx, obj, opts)
}

func (d dynClient) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return d.r.Delete(ctx, name, opts)
}
