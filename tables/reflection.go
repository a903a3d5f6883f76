package tables

import "github.com/cilium/hive/cell"

// Reflection asks the ground floor (cells/ground/k8swatch) to mirror one
// kind of Kubernetes object into its table. Cells ask next to what they
// read, in the value group "reflections"; the ground floor watches only
// what someone asked for, so a feature that is off costs the API server
// nothing, and a new feature needs no switch outside its own folder.
type Reflection struct {
	// Table is the table to fill (ServicesTableName, ...).
	Table string
	// Namespace narrows the watch to one namespace (the Leases of the
	// agents' namespace, the BGP Secrets); "" for every namespace, or a
	// kind without one. Cells asking for the same table must agree.
	Namespace string
}

// Reflections is what a cell's provider returns to ask for reflections.
type Reflections struct {
	cell.Out

	Reflections []Reflection `group:"reflections,flatten"`
}

// Reflect asks for the tables, in every namespace.
func Reflect(tables ...string) Reflections {
	out := Reflections{Reflections: make([]Reflection, len(tables))}
	for i, t := range tables {
		out.Reflections[i] = Reflection{Table: t}
	}
	return out
}

// ReflectIn asks for one table, narrowed to a namespace.
func ReflectIn(table, namespace string) Reflection {
	return Reflection{Table: table, Namespace: namespace}
}
