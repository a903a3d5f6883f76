package dbgshell

import (
	"strings"
	"testing"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
)

type row struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
}

func (r *row) TableHeader() []string { return []string{"Name", "Value"} }
func (r *row) TableRow() []string    { return []string{r.Name, r.Value} }

var rowName = statedb.Index[*row, string]{
	Name:       "name",
	FromObject: func(r *row) index.KeySet { return index.NewKeySet(index.String(r.Name)) },
	FromKey:    index.String,
	Unique:     true,
}

// WriteTable prints exactly what herald-dbg statedb always printed: the
// header after "# ", the rows by their first column, aligned (tabwriter 4,
// 0, 3); as JSON an indented array in the order of the last writes.
func TestWriteTable(t *testing.T) {
	db := statedb.New()
	tbl, err := statedb.NewTable(db, "rows", rowName)
	if err != nil {
		t.Fatal(err)
	}
	check := func(asJSON bool, want string) {
		t.Helper()
		var b strings.Builder
		if err := WriteTable(&b, db, "rows", asJSON); err != nil {
			t.Fatal(err)
		}
		if b.String() != want {
			t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
		}
	}
	check(false, "# Name   Value\n")
	check(true, "[]\n")

	txn := db.WriteTxn(tbl)
	for _, r := range []*row{{"b", "<2>"}, {"a", "1"}, {"c", ""}} {
		tbl.Insert(txn, r)
	}
	tbl.Insert(txn, &row{"b", "2&"}) // last written
	txn.Commit()
	check(false, "# Name   Value\na        1\nb        2&\nc        \n")
	check(true, `[
  {
    "name": "a",
    "value": "1"
  },
  {
    "name": "c"
  },
  {
    "name": "b",
    "value": "2\u0026"
  }
]
`)

	var b strings.Builder
	err = WriteTable(&b, db, "nope", false)
	if err == nil || err.Error() != `unknown table "nope"; known tables: rows` {
		t.Errorf("unknown table: %v", err)
	}
}
