package multipool

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	cnitypes "github.com/containernetworking/cni/pkg/types"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
)

// TestJournalNotWritable: while the journal's directory is read-only to
// the agent (a read-only bind mount in the agent's mount namespace), an
// ADD through bridge fails with CNI error 5 naming the journal, and
// leaves no address behind; once it is writable again the runtime's DEL
// and ADD again give the pod its addresses.
func TestJournalNotWritable(t *testing.T) {
	logAgentsOnFailure(t)
	n := nodes[2]
	dir := filepath.Join(n.stateDir, "allocations")
	inAgent := func(args ...string) error {
		full := append([]string{"-t", strconv.Itoa(n.agent.PID()), "-m"}, args...)
		if out, err := exec.Command("nsenter", full...).CombinedOutput(); err != nil {
			return fmt.Errorf("nsenter %v: %w: %s", full, err, out)
		}
		return nil
	}
	if err := inAgent("mount", "--bind", dir, dir); err != nil {
		t.Fatal(err)
	}
	mounted := true
	unmount := func() {
		if mounted {
			if err := inAgent("umount", dir); err != nil {
				t.Error(err)
			}
			mounted = false
		}
	}
	defer unmount()
	if err := inAgent("mount", "-o", "remount,bind,ro", dir); err != nil {
		t.Fatal(err)
	}

	ns := namespace(t, "journalro", nil)
	p := newPod(t, n, ns, "unjournaled", nil)
	defer p.stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var cniErr *cnitypes.Error
	if err := p.add(ctx); !errors.As(err, &cniErr) || cniErr.Code != ipamv1.CodeIOFailure || !strings.Contains(cniErr.Msg, "journal") {
		t.Fatalf("ADD with a read-only journal = %v, want CNI error %d naming the journal", err, ipamv1.CodeIOFailure)
	}
	allocs, err := n.allocations()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range allocs {
		if a.PodName == "unjournaled" {
			t.Fatalf("the failed ADD left %s allocated", a.IP)
		}
	}

	// As a runtime does after a failed ADD: DEL, then ADD again.
	if err := n.rt.Del(ctx, p.Pod); err != nil {
		t.Fatalf("DEL after the failed ADD: %v", err)
	}
	unmount()
	if err := p.add(ctx); err != nil {
		t.Fatalf("ADD once the journal is writable again: %v", err)
	}
	if len(p.IPs()) != 2 {
		t.Fatalf("pod got %v, want one address of each family", p.IPs())
	}
}
