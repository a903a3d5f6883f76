package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/cells/ground/dbgshell"
	"github.com/heraldlb/herald/daemon"
)

// TestEveryTablePrints: every table the agent registers, with every
// feature on (and each L2 election), and every table of the control-plane
// VIP mode, prints through herald-dbg, as a table and as JSON, with no
// printer kept for it. A table whose objects cannot be printed, or that
// herald-dbg cannot reach, fails here.
func TestEveryTablePrints(t *testing.T) {
	all := []string{"--enable-l2-announcements", "--enable-l2-pod-announcements", "--l2-pod-announcements-interface=eth0", "--ipam=multi-pool", "--enable-bgp-control-plane"}
	seen := map[string]bool{}
	for _, election := range []string{"members", "lease"} {
		t.Run(election, func(t *testing.T) {
			tablesPrint(t, agentDB(t, append(all, "--l2-announcements-election="+election)...), seen)
		})
	}
	t.Run("control-plane-vip", func(t *testing.T) {
		tablesPrint(t, controlPlaneDB(t), seen)
	})
	t.Logf("%d tables printed", len(seen))
}

// tablesPrint puts one object into each of db's tables and checks that
// herald-dbg lists every table and prints each, as rows and as JSON.
func tablesPrint(t *testing.T, db *statedb.DB, seen map[string]bool) {
	t.Helper()
	names := dbgshell.TableNames(db)
	if len(names) == 0 {
		t.Fatal("the agent registers no table")
	}
	// One object in each table, so that rows print too.
	for _, name := range names {
		insertZero(t, db, name)
	}
	serveShell(t, db)

	listed := strings.Fields(runDbg(t, "statedb", "--list"))
	if strings.Join(listed, " ") != strings.Join(names, " ") {
		t.Errorf("statedb --list: %v, want %v", listed, names)
	}
	for _, name := range names {
		seen[name] = true
		n := statedb.AnyTable{Meta: db.GetTable(db.ReadTxn(), name)}.NumObjects(db.ReadTxn())
		out := runDbg(t, "statedb", name)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 1+n || !strings.HasPrefix(lines[0], "# ") || !strings.HasSuffix(out, "\n") {
			t.Errorf("herald-dbg statedb %s: want a header and %d rows:\n%s", name, n, out)
		}
		var objs []json.RawMessage
		out = runDbg(t, "statedb", name, "-o", "json")
		if err := json.Unmarshal([]byte(out), &objs); err != nil || len(objs) != n {
			t.Errorf("herald-dbg statedb %s -o json: %v, want an array of %d objects:\n%s", name, err, n, out)
		}
	}
}

// TestStatedbErrors: an unknown table is refused naming the known ones, as
// herald-dbg always did; an agent that does not answer is named.
func TestStatedbErrors(t *testing.T) {
	db := agentDB(t, "--enable-l2-announcements")
	serveShell(t, db)
	err := dbg(t, "statedb", "no-such-table")
	want := `unknown table "no-such-table"; known tables: ` + strings.Join(dbgshell.TableNames(db), ", ")
	if err == nil || err.Error() != want {
		t.Errorf("unknown table: %v\nwant %s", err, want)
	}
	if err := dbg(t, "statedb", "services", "-o", "yaml"); err == nil || err.Error() != `-o "yaml": use table or json` {
		t.Errorf("-o yaml: %v", err)
	}
	if out := runDbg(t, "statedb", "services", "-o", "json"); out != "[]\n" {
		t.Errorf("empty table as JSON: %q, want []", out)
	}
	if out := runDbg(t, "statedb", "services"); !strings.HasPrefix(out, "# Name") || strings.Count(out, "\n") != 1 {
		t.Errorf("empty table: %q, want the header alone", out)
	}

	socket := filepath.Join(t.TempDir(), "none.sock")
	root := Root()
	root.SetArgs([]string{"--socket", socket, "statedb", "services"})
	err = root.ExecuteContext(context.Background())
	if err == nil || !strings.HasPrefix(err.Error(), "reading table services from the agent at "+socket+": ") {
		t.Errorf("no agent: %v", err)
	}
}

// agentDB builds the agent's hive with the given flags, without starting
// it, and returns its database with every table registered.
func agentDB(t *testing.T, args ...string) *statedb.DB {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(unusedKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	var db *statedb.DB
	h := daemon.New(cell.Invoke(func(d *statedb.DB) { db = d }))
	flags := pflag.NewFlagSet("", pflag.ContinueOnError)
	h.RegisterFlags(flags)
	if err := flags.Parse(append([]string{"--node-name=node1", "--kubeconfig=" + kubeconfig}, args...)); err != nil {
		t.Fatal(err)
	}
	// Populate builds the cells and their tables and connects to nothing.
	if err := h.Populate(slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	return db
}

// controlPlaneDB builds the control-plane VIP mode's cells (with BGP)
// and returns their database.
func controlPlaneDB(t *testing.T) *statedb.DB {
	t.Helper()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("a secret of the test, unused"), 0o600); err != nil {
		t.Fatal(err)
	}
	var db *statedb.DB
	h := daemon.NewControlPlane(cell.Invoke(func(d *statedb.DB) { db = d }))
	flags := pflag.NewFlagSet("", pflag.ContinueOnError)
	h.RegisterFlags(flags)
	if err := flags.Parse([]string{"--node-name=cp1", "--vips=198.18.0.10", "--peers=cp1=198.18.0.1,cp2=198.18.0.2,cp3=198.18.0.3",
		"--peer-secret-file=" + secret, "--bgp-local-asn=65001", "--bgp-peers=198.18.0.254=65000"}); err != nil {
		t.Fatal(err)
	}
	if err := h.Populate(slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	return db
}

// insertZero inserts an object of the table's type decoded from "{}".
func insertZero(t *testing.T, db *statedb.DB, name string) {
	t.Helper()
	tbl := statedb.AnyTable{Meta: db.GetTable(db.ReadTxn(), name)}
	obj, err := tbl.UnmarshalYAML([]byte("{}"))
	if err != nil {
		t.Fatalf("table %s: %v", name, err)
	}
	txn := db.WriteTxn(tbl.Meta)
	if _, _, err := tbl.Insert(txn, obj); err != nil {
		t.Fatalf("table %s: %v", name, err)
	}
	txn.Commit()
}

// serveShell serves the agent's shell cell on a socket over db, and points
// herald-dbg at it.
func serveShell(t *testing.T, db *statedb.DB, extra ...cell.Cell) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "run", "herald.sock") // run/ is made by the cell
	h := hive.New(append([]cell.Cell{
		job.Cell,
		cell.SimpleHealthCell,
		cell.Provide(func() *statedb.DB { return db }, statedb.ScriptCommands),
		dbgshell.Cell,
	}, extra...)...)
	hive.AddConfigOverride(h, func(c *dbgshell.Config) { c.DbgSocket = sock })
	log := slog.New(slog.DiscardHandler)
	if err := h.Start(log, context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Stop(log, context.Background()); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(sock); !os.IsNotExist(err) {
			t.Errorf("the socket is left after stop: %v", err)
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the shell does not listen")
		}
	}
	testSocket = sock
}

var testSocket string

func dbg(t *testing.T, args ...string) error {
	t.Helper()
	_, err := dbgOut(args...)
	return err
}

func dbgOut(args ...string) (string, error) {
	var out bytes.Buffer
	root := Root()
	root.SetArgs(append([]string{"--socket", testSocket}, args...))
	root.SetOut(&out)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

func runDbg(t *testing.T, args ...string) string {
	t.Helper()
	out, err := dbgOut(args...)
	if err != nil {
		t.Fatalf("herald-dbg %s: %v", strings.Join(args, " "), err)
	}
	return out
}

const unusedKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: unused}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
