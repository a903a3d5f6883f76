// Command herald-realcluster brings up and tears down the real cluster of
// test/realcluster: a control plane, and kubelets with containerd in
// network namespaces of this machine, Herald's images built from this tree
// and loaded into every node, Herald's CNI network configuration in place.
// Herald itself is installed afterwards, with helm, as users do.
//
//	herald-realcluster up DIR           # prints the KUBECONFIG line
//	herald-realcluster images DIR       # rebuilds the images and loads them into every node
//	herald-realcluster router DIR       # runs the BGP router (FRR) until SIGTERM or SIGINT
//	herald-realcluster bgp-fixtures DIR # prints the BGP resources for that router (YAML)
//	herald-realcluster down DIR         # the router too
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/heraldlb/herald/test/realcluster"
	"github.com/heraldlb/herald/test/realcluster/images"
)

func main() {
	if len(os.Args) != 3 {
		usage()
	}
	dir := os.Args[2]
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "up":
		err = up(ctx, dir)
	case "images":
		err = loadImages(ctx, dir)
	case "router":
		err = runRouter(ctx, dir)
	case "bgp-fixtures":
		err = printBGPFixtures(dir)
	case "down":
		err = realcluster.Down(dir)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "herald-realcluster:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: herald-realcluster up|images|router|bgp-fixtures|down DIR")
	os.Exit(2)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "herald-realcluster: "+format+"\n", args...)
}

// imagesDir is where the images are built: next to the cluster, not in it
// (Up empties the cluster's directory).
func imagesDir(dir string) string { return filepath.Clean(dir) + "-images" }

func up(ctx context.Context, dir string) error {
	root := realcluster.RepoRoot()
	logf("building images")
	all, err := images.BuildAll(ctx, root, imagesDir(dir))
	if err != nil {
		return err
	}
	conflist, err := os.ReadFile(filepath.Join(root, "install", "cni", "10-herald.conflist"))
	if err != nil {
		return err
	}
	c, err := realcluster.Up(ctx, dir, realcluster.Options{
		Images: all.Paths(), SandboxImage: images.PauseRef, CNIConflist: conflist, Log: logf,
	})
	if err != nil {
		return err
	}
	fmt.Printf("export KUBECONFIG=%s\n", c.Kubeconfig)
	return nil
}

func loadImages(ctx context.Context, dir string) error {
	c, err := realcluster.Open(dir)
	if err != nil {
		return err
	}
	all, err := images.BuildAll(ctx, realcluster.RepoRoot(), imagesDir(dir))
	if err != nil {
		return err
	}
	for _, n := range c.Nodes {
		for _, p := range all.Paths() {
			if err := c.LoadImage(ctx, n, p); err != nil {
				return err
			}
		}
		logf("node %s: images loaded", n.Name)
	}
	return nil
}
