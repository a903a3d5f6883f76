package cmd

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/heraldlb/herald/cmd/herald-dbg/ipamcheck"
)

// TestIPAMArgs: wrong arguments are refused before anything is read or
// sent, with a message that says what is expected.
func TestIPAMArgs(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"ipam", "release"}, "give an address (release IP) or a CIDR and its node"},
		{[]string{"ipam", "release", "198.18.64.3", "--cidr", "198.18.64.0/24", "--node", "n1"}, "give an address (release IP) or a CIDR and its node"},
		{[]string{"ipam", "release", "--cidr", "198.18.64.0/24"}, "--cidr needs --node"},
		{[]string{"ipam", "release", "198.18.64.3", "--node", "n1"}, "--node goes with --cidr"},
		{[]string{"ipam", "release", "198.18.64.300"}, `"198.18.64.300" is not an IP address`},
		{[]string{"ipam", "check", "-o", "yaml"}, `-o "yaml": use table or json`},
	} {
		root := Root()
		root.SetArgs(append(tt.args, "--socket", "/nonexistent/herald.sock"))
		root.SetOut(&bytes.Buffer{})
		err := root.ExecuteContext(context.Background())
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("herald-dbg %v: %v, want an error saying %q", tt.args, err, tt.want)
		}
	}
}

func TestPrintReport(t *testing.T) {
	var b bytes.Buffer
	printReport(&b, ipamcheck.Report{Node: "n1", Findings: []ipamcheck.Finding{}, Addresses: 1, NodeCIDRs: 2, CiliumNodes: 3, Pools: 1, Pods: 2})
	if got, want := b.String(), "Node n1: 1 address in 2 CIDRs on this node; 3 CiliumNodes, 1 pool, 2 Pods.\nNo problems found.\n"; got != want {
		t.Errorf("healthy report:\n%s\nwant:\n%s", got, want)
	}
	b.Reset()
	printReport(&b, ipamcheck.Report{Node: "n1", Errors: 1, Notes: 1, Findings: []ipamcheck.Finding{
		{Kind: ipamcheck.KindLeaked, Severity: ipamcheck.Error, IPs: []string{"198.18.64.3"}, Pod: "ns/p", Problem: "gone", Action: "DEL", Command: "herald-dbg ipam release 198.18.64.3"},
		{Kind: ipamcheck.KindCIDRNotOnAgent, Severity: ipamcheck.Note, CIDRs: []string{"198.18.65.0/24"}, Nodes: []string{"n1"}, Problem: "new", Action: "wait"},
	}})
	for _, want := range []string{
		"ERROR leaked-address: 198.18.64.3  pod ns/p\n  problem: gone\n  fix:     DEL\n  run:     herald-dbg ipam release 198.18.64.3\n",
		"NOTE cidr-not-on-agent: 198.18.65.0/24  node n1\n  problem: new\n  fix:     wait\n\n",
		"1 error, 1 note.\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report does not contain %q:\n%s", want, b.String())
		}
	}
}
