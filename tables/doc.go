// Package tables holds every statedb table that cells share: the object
// type, its indexes, how it is rendered by `herald-dbg statedb <table>`, and
// how a Kubernetes object becomes a row. Cells never import each other; they
// read and write these tables.
package tables
