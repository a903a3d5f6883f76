package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/heraldlb/herald/cmd/herald-dbg/migrate"
)

func migrateCmd() *cobra.Command {
	m := &cobra.Command{Use: "migrate", Short: "Translate another load balancer's configuration into Herald's"}
	var files []string
	var namespace string
	var apply bool
	var only []string
	metallb := &cobra.Command{
		Use:   "metallb [-f FILE]... [--apply]",
		Short: "Print Herald's equivalents of MetalLB's objects, with how well each field maps; --apply applies them (nothing is deleted)",
		Long: `Reads MetalLB's IPAddressPool, L2Advertisement, BGPPeer, BGPAdvertisement,
Community and BFDProfile objects from the files given with -f ("-" is stdin), or
else from the cluster (--kubeconfig; every namespace, or --namespace). Prints a
manifest: the mapping of every MetalLB field (exact, approximate, none, with the
reason) as comments, then Herald's objects, named as the MetalLB objects are.
With --apply the objects are also written with server-side apply (field
manager herald-migrate, no force). Nothing is ever deleted, MetalLB's objects
included. --only picks parts (lb-ipam, l2, bgp), for a takeover in steps.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			var in migrate.Input
			var dyn dynamic.Interface
			if len(files) == 0 || apply {
				var err error
				if dyn, err = dynamicClient(); err != nil {
					return err
				}
			}
			if err := readMetalLB(ctx, &in, files, dyn, namespace, cmd.InOrStdin()); err != nil {
				return err
			}
			res, err := migrate.Translate(in).Only(only)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if err := res.Render(out); err != nil {
				return err
			}
			if !apply {
				return nil
			}
			done, err := migrate.Apply(ctx, dyn, res.Objects)
			for _, a := range done {
				fmt.Fprintf(out, "# applied %s: %s\n", a.Ref, a.Outcome)
			}
			return err
		},
	}
	metallb.Flags().StringSliceVarP(&files, "filename", "f", nil, "YAML or JSON file(s) with MetalLB objects (kubectl get -o yaml output too); \"-\" reads stdin. Without it, the objects are listed from the cluster")
	metallb.Flags().StringVarP(&namespace, "namespace", "n", "", "Namespace to list MetalLB's objects from (default: every namespace)")
	metallb.Flags().BoolVar(&apply, "apply", false, "Apply Herald's objects to the cluster (server-side apply, field manager herald-migrate); nothing is deleted")
	metallb.Flags().StringSliceVar(&only, "only", nil, "Print and apply only these parts: "+strings.Join(migrate.Parts, ", ")+" (the report still covers every field); a takeover from a running MetalLB applies l2 last")
	m.AddCommand(metallb)
	return m
}

// metallbResources are MetalLB's kinds, each at the versions to list it
// at, first served first: the version MetalLB v0.16 serves and stores,
// then, for BGPPeer, the v1beta1 that MetalLB before v0.13.10 serves
// alone.
var metallbResources = [][]schema.GroupVersionResource{
	{{Group: migrate.Group, Version: "v1beta1", Resource: "ipaddresspools"}},
	{{Group: migrate.Group, Version: "v1beta1", Resource: "l2advertisements"}},
	{{Group: migrate.Group, Version: "v1beta2", Resource: "bgppeers"}, {Group: migrate.Group, Version: "v1beta1", Resource: "bgppeers"}},
	{{Group: migrate.Group, Version: "v1beta1", Resource: "bgpadvertisements"}},
	{{Group: migrate.Group, Version: "v1beta1", Resource: "communities"}},
	{{Group: migrate.Group, Version: "v1beta1", Resource: "bfdprofiles"}},
}

// readMetalLB decodes the files, or else lists MetalLB's objects from the
// cluster; a kind the cluster does not serve is skipped with a note.
func readMetalLB(ctx context.Context, in *migrate.Input, files []string, dyn dynamic.Interface, ns string, stdin io.Reader) error {
	for _, f := range files {
		r := stdin
		if f != "-" {
			file, err := os.Open(f)
			if err != nil {
				return err
			}
			defer file.Close()
			r = file
		}
		if err := in.Decode(r, f); err != nil {
			return err
		}
	}
	if len(files) > 0 {
		return nil
	}
	for _, versions := range metallbResources {
		list, err := listServed(ctx, dyn, versions, ns)
		gr := versions[0].GroupResource()
		if apierrors.IsNotFound(err) {
			fmt.Fprintf(os.Stderr, "herald-dbg: the cluster serves no %s: skipped\n", gr)
			continue
		}
		if err != nil {
			return fmt.Errorf("listing %s: %w", gr, err)
		}
		data, err := list.MarshalJSON()
		if err != nil {
			return err
		}
		if err := in.Decode(bytes.NewReader(data), "the cluster's "+gr.String()); err != nil {
			return err
		}
	}
	return nil
}

// listServed lists the resource at the first of its versions the cluster
// serves; NotFound when it serves none.
func listServed(ctx context.Context, dyn dynamic.Interface, versions []schema.GroupVersionResource, ns string) (*unstructured.UnstructuredList, error) {
	var err error
	for _, gvr := range versions {
		var list *unstructured.UnstructuredList
		if list, err = dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
			return list, err
		}
	}
	return nil, err
}
