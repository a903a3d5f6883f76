package nodeipam

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
)

func TestJournal(t *testing.T) {
	dir := t.TempDir()
	j, err := openJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := entry{
		IP: netip.MustParseAddr("198.18.100.2"), CIDR: netip.MustParsePrefix("198.18.100.0/24"), Pool: "default",
		Network: "herald", Pod: ipamv1.PodRef{Namespace: "ns", Name: "p", UID: "u1"},
		Attachment: ipamv1.Attachment{ContainerID: "c1", IfName: "eth0"}, Since: time.Unix(1000, 0).UTC(),
	}
	if err := j.put(e); err != nil {
		t.Fatal(err)
	}
	// The same address twice: refused, whatever the caller believes.
	e2 := e
	e2.ContainerID = "c2"
	if err := j.put(e2); !errors.Is(err, errTaken) {
		t.Fatalf("second put of one address: %v, want errTaken", err)
	}
	// A leftover temp file (agent killed mid-write) and a stray file.
	_ = os.WriteFile(filepath.Join(dir, "allocations", "198.18.100.3-123.tmp"), []byte("{"), 0o600)
	_ = os.WriteFile(filepath.Join(dir, "allocations", "198.18.100.4"), []byte("garbage"), 0o600)

	j2, _ := openJournal(dir)
	got, errs := j2.load()
	if len(got) != 1 || got[0] != e {
		t.Fatalf("load = %+v, want [%+v]", got, e)
	}
	if len(errs) != 1 {
		t.Fatalf("load errors = %v, want one for the stray file", errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "allocations", "198.18.100.3-123.tmp")); !os.IsNotExist(err) {
		t.Fatal("temp file left behind")
	}
	if err := j2.remove(e.IP); err != nil {
		t.Fatal(err)
	}
	if err := j2.remove(e.IP); err != nil {
		t.Fatalf("second remove: %v", err)
	}
	if got, _ := j2.load(); len(got) != 0 {
		t.Fatalf("after remove: %+v", got)
	}
}

func TestPendingDels(t *testing.T) {
	dir := t.TempDir()
	pd := filepath.Join(dir, ipamv1.PendingDelDir)
	_ = os.MkdirAll(pd, 0o700)
	_ = os.WriteFile(filepath.Join(pd, "c1_eth0.json"), []byte(`{"containerID":"c1","ifName":"eth0","pod":{"namespace":"ns","name":"p"}}`), 0o600)
	_ = os.WriteFile(filepath.Join(pd, "bad.json"), []byte(`{`), 0o600)
	reqs, files, errs := pendingDels(dir)
	if len(reqs) != 1 || reqs[0].ContainerID != "c1" || reqs[0].IfName != "eth0" || len(files) != 1 || len(errs) != 1 {
		t.Fatalf("reqs %+v files %v errs %v", reqs, files, errs)
	}
	if r, f, e := pendingDels(t.TempDir()); r != nil || f != nil || e != nil {
		t.Fatal("no queue directory is not an error")
	}
}
