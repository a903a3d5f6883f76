package cnitest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// NetnsDir is where `ip netns` keeps named namespaces.
const NetnsDir = "/var/run/netns"

// Netns is a named network namespace, as `ip netns add` makes it: a "node"
// whose plugins create the bridge, or a "pod". It starts with a loopback
// device that is down and nothing else.
type Netns struct {
	Name string
}

// NewNetns creates the namespace. Names should share a prefix per suite so
// that CleanupNetns can remove what an interrupted run left.
func NewNetns(name string) (*Netns, error) {
	if err := ipCmd("netns", "add", name); err != nil {
		return nil, err
	}
	return &Netns{Name: name}, nil
}

// Path is what CNI_NETNS names.
func (n *Netns) Path() string { return filepath.Join(NetnsDir, n.Name) }

// Delete removes the namespace and with it every device in it.
func (n *Netns) Delete() error { return ipCmd("netns", "del", n.Name) }

// Exec runs a command in the namespace (`ip netns exec`) and returns its
// combined output.
func (n *Netns) Exec(ctx context.Context, name string, args ...string) ([]byte, error) {
	out, err := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.Name, name}, args...)...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("in %s: %s %s: %w: %s", n.Name, name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return out, nil
}

// Ping sends one ICMP echo from the namespace to addr and waits up to 3 s
// for the reply.
func (n *Netns) Ping(ctx context.Context, addr string) error {
	_, err := n.Exec(ctx, "ping", "-n", "-q", "-c", "1", "-W", "3", addr)
	return err
}

// CleanupNetns deletes every named namespace whose name starts with prefix,
// whoever made it: what an interrupted run left behind. Devices in them go
// with them (the bridge of a node, the veths of its pods).
func CleanupNetns(prefix string) []error {
	entries, err := os.ReadDir(NetnsDir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return []error{err}
	}
	var errs []error
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			if err := ipCmd("netns", "del", e.Name()); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
