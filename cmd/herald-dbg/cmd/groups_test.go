package cmd

import (
	"bytes"
	"strings"
	"testing"
)

// TestUnknownSubcommand: a word that is no subcommand of a group fails
// (exit 1) instead of printing the help and succeeding; the group alone
// still prints its help.
func TestUnknownSubcommand(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"ipam", "chek"}, `unknown command "chek" for "herald-dbg ipam"`},
		{[]string{"explain", "pod", "ns/name"}, `unknown command "pod" for "herald-dbg explain"`},
		{[]string{"bpf", "nosuch"}, `unknown command "nosuch" for "herald-dbg bpf"`},
		{[]string{"nosuch"}, `unknown command "nosuch" for "herald-dbg"`},
		{[]string{"ipam"}, ""},
		{[]string{"explain"}, ""},
	} {
		root := Root()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(tt.args)
		err := root.Execute()
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%v: %v, want the help", tt.args, err)
		case tt.wantErr == "" && !strings.Contains(out.String(), "Available Commands"):
			t.Errorf("%v printed %q, want the help", tt.args, out.String())
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%v: %v, want an error containing %q", tt.args, err, tt.wantErr)
		}
	}
}
