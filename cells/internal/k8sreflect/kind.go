// Package k8sreflect mirrors Kubernetes objects into statedb tables: the
// reflector (client-go's reflector, whose events land in a table in
// batches), its
// catch-up with the API server (tables.Freshness), and Kind, the
// definition of one kind of object and its table.
//
// A feature defines the kinds only it reads, next to their tables, and
// provides them in the value group "k8s-kinds" (Define); the ground
// floor's k8swatch defines the kinds several features share, and runs the
// reflector of every kind some cell asks for (tables.Reflection). So a new
// kind edits nothing outside its feature's folder.
package k8sreflect

import (
	"context"
	"log/slog"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/cells/internal/reconnect"
)

// Clients are what a kind lists and watches with.
type Clients struct {
	Kube   kubernetes.Interface
	Herald versioned.Interface
	// Node is this agent's node, for kinds narrowed to it.
	Node string
}

// Env is what running a reflector takes; k8swatch fills it in.
type Env struct {
	Clients
	DB   *statedb.DB
	Jobs job.Group
	Log  *slog.Logger
	// Gate holds the calls that did not reach the API server until it is
	// ready again (shared by every reflector of the agent).
	Gate *reconnect.Gate
}

// Kind is one kind of Kubernetes object, mirrored into one table.
type Kind struct {
	// Table is the table's name: what cells ask for (tables.Reflection).
	Table string
	// Namespaced: a request may narrow the watch to one namespace.
	Namespaced bool

	start func(env Env, namespace string) (catchUp func(context.Context) error)
}

// Start registers the kind's reflector in env.Jobs, watching namespace (""
// for every namespace). It returns the reflector's catch-up
// (tables.Freshness) if the kind's rows carry resourceVersions, else nil.
func (k Kind) Start(env Env, namespace string) (catchUp func(context.Context) error) {
	return k.start(env, namespace)
}

// KindOut provides a kind to the ground floor.
type KindOut struct {
	cell.Out

	Kind Kind `group:"k8s-kinds"`
}

// Def defines a kind: how to list and watch it, and how its objects become
// rows.
type Def[K runtime.Object, Obj any] struct {
	// Name names the reflector in logs, health and job names ("lb-pools").
	Name string
	// Example is an empty object of the kind, for client-go's reflector.
	Example K
	// Namespaced: see Kind.
	Namespaced bool
	// ListWatch lists and watches the kind in namespace ("" for all).
	ListWatch func(c Clients, namespace string) cache.ListerWatcher
	// Transform turns an object into its row.
	Transform func(K) Obj
	// Equal, for rows that keep little of their object (no
	// resourceVersion), tells an update that changes nothing in the row:
	// it is not written, so the table's readers are not woken for it.
	Equal func(a, b Obj) bool
	// VersionOf returns a row's object key ("namespace/name" or "name") and
	// resourceVersion. Kinds that have it can catch up (tables.Freshness).
	VersionOf func(Obj) (key, resourceVersion string)
}

// Define makes the kind of def, mirrored into table.
func Define[K runtime.Object, Obj any](table statedb.RWTable[Obj], def Def[K, Obj]) KindOut {
	return KindOut{Kind: Kind{
		Table:      table.Name(),
		Namespaced: def.Namespaced,
		start: func(env Env, namespace string) func(context.Context) error {
			r := &reflector[K, Obj]{
				name: def.Name, db: env.DB, log: env.Log, table: table,
				lw: def.ListWatch(env.Clients, namespace), example: def.Example,
				transform: def.Transform, equal: def.Equal, versionOf: def.VersionOf, gate: env.Gate,
			}
			r.register(env.Jobs)
			if def.VersionOf == nil {
				return nil
			}
			return r.catchUp
		},
	}}
}

// listWatcher is the List and Watch of one typed client.
type listWatcher[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// ListWatch adapts a typed client for a reflector; fieldSelector, when
// set, narrows both calls.
func ListWatch[L runtime.Object](c listWatcher[L], fieldSelector string) cache.ListerWatcher {
	return ListWatchSelected(c, fieldSelector, "")
}

// ListWatchSelected is ListWatch narrowed by a label selector as well
// ("" for none).
func ListWatchSelected[L runtime.Object](c listWatcher[L], fieldSelector, labelSelector string) cache.ListerWatcher {
	narrow := func(o metav1.ListOptions) metav1.ListOptions {
		if fieldSelector != "" {
			o.FieldSelector = fieldSelector
		}
		if labelSelector != "" {
			o.LabelSelector = labelSelector
		}
		return o
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.List(ctx, narrow(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, narrow(o))
		},
	}
}
