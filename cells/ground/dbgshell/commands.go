package dbgshell

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/script"
	"github.com/cilium/statedb"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
)

type commandParams struct {
	cell.In

	DB        *statedb.DB
	Effective *agentconfig.Effective `optional:"true"`
}

func scriptCommands(p commandParams) hive.ScriptCmdsOut {
	return hive.NewScriptCmds(map[string]script.Cmd{
		"herald/table":  tableCmd(p.DB),
		"herald/tables": tablesCmd(p.DB),
		"herald/config": configCmd(p.Effective),
	})
}

// tableCmd prints any table as `herald-dbg statedb TABLE` does.
func tableCmd(db *statedb.DB) script.Cmd {
	return script.Command(
		script.CmdUsage{
			Summary: "Print a table as herald-dbg statedb does",
			Args:    "table",
			Flags: func(fs *pflag.FlagSet) {
				fs.StringP("output", "o", "table", "Output format: table or json")
			},
			Detail: []string{
				"As a table: '# ' and the header, then the rows",
				"sorted by their first column, aligned.",
				"As JSON: an indented array of the objects,",
				"in the order they were last written.",
			},
			AutocompleteArgs: func(_ *script.State, before []string, cur string) []string {
				if len(before) > 0 {
					return nil
				}
				var out []string
				for _, n := range TableNames(db) {
					if strings.HasPrefix(n, cur) {
						out = append(out, n)
					}
				}
				return out
			},
		},
		func(s *script.State, args ...string) (script.WaitFunc, error) {
			output, err := s.Flags.GetString("output")
			if err != nil {
				return nil, err
			}
			if output != "table" && output != "json" {
				return nil, fmt.Errorf("-o %q: use table or json", output)
			}
			if len(args) != 1 {
				return nil, fmt.Errorf("give one table; known tables: %s", strings.Join(TableNames(db), ", "))
			}
			return func(*script.State) (string, string, error) {
				var b strings.Builder
				err := WriteTable(&b, db, args[0], output == "json")
				return b.String(), "", err
			}, nil
		})
}

// tablesCmd prints the names of the tables, one a line.
func tablesCmd(db *statedb.DB) script.Cmd {
	return script.Command(
		script.CmdUsage{Summary: "List the tables herald/table prints"},
		func(*script.State, ...string) (script.WaitFunc, error) {
			return func(*script.State) (string, string, error) {
				var b strings.Builder
				for _, n := range TableNames(db) {
					b.WriteString(n + "\n")
				}
				return b.String(), "", nil
			}, nil
		})
}

// configCmd prints the effective configuration as a JSON object, by flag
// name.
func configCmd(eff *agentconfig.Effective) script.Cmd {
	return script.Command(
		script.CmdUsage{Summary: "Print the agent's effective configuration (flags, ConfigMap and defaults) as JSON"},
		func(*script.State, ...string) (script.WaitFunc, error) {
			return func(*script.State) (string, string, error) {
				values := map[string]string{}
				if eff != nil {
					values = eff.Values()
				}
				var b strings.Builder
				err := json.NewEncoder(&b).Encode(values)
				return b.String(), "", err
			}, nil
		})
}

// TableNames returns the names of every registered table, sorted.
func TableNames(db *statedb.DB) []string {
	var names []string
	for _, t := range db.GetTables(db.ReadTxn()) {
		names = append(names, t.Name())
	}
	slices.Sort(names)
	return names
}

// WriteTable writes one table. As a table: "# " and the header, then the
// rows sorted by their first column, aligned. As JSON: an indented array of
// the objects in revision order ([] when empty). Both end in a newline.
func WriteTable(w io.Writer, db *statedb.DB, name string, asJSON bool) (err error) {
	txn := db.ReadTxn()
	meta := db.GetTable(txn, name)
	if meta == nil {
		return fmt.Errorf("unknown table %q; known tables: %s", name, strings.Join(TableNames(db), ", "))
	}
	tbl := statedb.AnyTable{Meta: meta}
	type revObj struct {
		obj any
		rev statedb.Revision
	}
	var all []revObj
	for obj, rev := range tbl.All(txn) {
		all = append(all, revObj{obj, rev})
	}
	// The order they were last written in.
	slices.SortFunc(all, func(a, b revObj) int { return cmp.Compare(a.rev, b.rev) })

	if asJSON {
		objs := make([]any, 0, len(all))
		for _, o := range all {
			objs = append(objs, o.obj)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(objs)
	}

	defer func() {
		// A table made with statedb.NewTableAny may have no header or
		// row function.
		if r := recover(); r != nil {
			err = fmt.Errorf("table %q cannot be printed as a table: %v", name, r)
		}
	}()
	header := tbl.TableHeader()
	if header == nil {
		return fmt.Errorf("table %q cannot be printed as a table: its objects have no TableHeader", name)
	}
	rows := make([][]string, 0, len(all))
	for _, o := range all {
		rows = append(rows, tbl.TableRow(o.obj))
	}
	// Stable, readable order: by the first column.
	slices.SortStableFunc(rows, func(a, b []string) int { return strings.Compare(first(a), first(b)) })
	tw := tabwriter.NewWriter(w, 4, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "# "+strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

func first(row []string) string {
	if len(row) == 0 {
		return ""
	}
	return row[0]
}
