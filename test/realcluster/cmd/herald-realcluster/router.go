package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/heraldlb/herald/test/realcluster"
)

// runRouter runs the cluster's BGP router in the foreground until ctx
// ends (SIGTERM, SIGINT), then stops it. FRR's daemons die with this
// process (test/frr), so a shell starts it in the background; its pid
// file lets `herald-realcluster down` stop it. vtysh reaches the router
// through DIR/frr: vtysh --vty_socket DIR/frr --config_dir DIR/frr -c '...'.
func runRouter(ctx context.Context, dir string) error {
	c, err := realcluster.Open(dir)
	if err != nil {
		return err
	}
	frrDir, err := filepath.Abs(filepath.Join(dir, "frr"))
	if err != nil {
		return err
	}
	r, err := c.StartRouter(frrDir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(realcluster.RouterPIDFile(dir), []byte(fmt.Sprintln(os.Getpid())), 0o644); err != nil {
		_ = r.Stop()
		return err
	}
	logf("BGP router up in %s (AS %d, %s); vtysh --vty_socket %s --config_dir %s", c.RouterHost.Netns, realcluster.RouterASN, c.RouterHost.IP, frrDir, frrDir)
	<-ctx.Done()
	logf("stopping the BGP router")
	_ = os.Remove(realcluster.RouterPIDFile(dir))
	return r.Stop()
}

func printBGPFixtures(dir string) error {
	c, err := realcluster.Open(dir)
	if err != nil {
		return err
	}
	fmt.Print(c.BGPFixtures())
	return nil
}
