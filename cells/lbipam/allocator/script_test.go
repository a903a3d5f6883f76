package allocator

import (
	"testing"

	"github.com/cilium/hive/cell"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/scripthive"
)

// TestScript runs the scenarios in testdata/*.txtar: Kubernetes objects go
// in with k8s/apply and k8s/delete (plain manifests, as a user writes them),
// the allocator's tables come out (db/cmp, db/show).
func TestScript(t *testing.T) {
	scripthive.Test(t, nil,
		cell.Group(
			scripthive.Kube(scripthive.WaitForSynced()),
			scripthive.Leader(tables.LBIPAMLease),
			cell.Module("announcers-fake", "The classes the announcers ask for",
				cell.Config(announcers{}),
				cell.Provide(announcers.classes),
			),
		),
		Cell)
}

// announcers plays the features that ask LB IPAM for their
// loadBalancerClass (tables.LBClass): a scenario names them on its "#!"
// line, e.g. --lb-classes=io.cilium/l2-announcer.
type announcers struct {
	LBClasses []string // lb-classes
}

func (def announcers) Flags(flags *pflag.FlagSet) {
	flags.StringSlice("lb-classes", def.LBClasses, "loadBalancerClasses the announcers that are on ask for")
}

func (a announcers) classes() tables.LBClasses {
	var out tables.LBClasses
	for _, c := range a.LBClasses {
		out.Classes = append(out.Classes, tables.LBClass{Class: c})
	}
	return out
}
