package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
)

// verb is one of the plugin's CNI verbs.
type verb func(*Plugin) func(*skel.CmdArgs) error

var (
	add    verb = func(p *Plugin) func(*skel.CmdArgs) error { return p.Add }
	del    verb = func(p *Plugin) func(*skel.CmdArgs) error { return p.Del }
	check  verb = func(p *Plugin) func(*skel.CmdArgs) error { return p.Check }
	gc     verb = func(p *Plugin) func(*skel.CmdArgs) error { return p.GC }
	status verb = func(p *Plugin) func(*skel.CmdArgs) error { return p.Status }
)

// run runs a verb and returns what it printed and its error.
func run(v verb, args *skel.CmdArgs) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	err = v(&Plugin{Stdout: &out, Stderr: &errOut})(args)
	return out.String(), errOut.String(), err
}

// checkErr checks err against the CNI error code and a part of its message
// wanted; code 0 wants no error.
func checkErr(t *testing.T, err error, code uint, msg string) {
	t.Helper()
	if code == 0 {
		if err != nil {
			t.Fatalf("error %v, want none", err)
		}
		return
	}
	var e *types.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want CNI error %d", err, err, code)
	}
	if e.Code != code || !strings.Contains(e.Msg, msg) {
		t.Fatalf("CNI error %d %q (details %q), want %d containing %q", e.Code, e.Msg, e.Details, code, msg)
	}
}

// sameJSON compares two JSON documents by value.
func sameJSON(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("output %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %q: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("got  %s\nwant %s", strings.TrimSpace(got), want)
	}
}
